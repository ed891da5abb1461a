#include "controllers/cronjob/cron_schedule.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>
#include <vector>

namespace kcm::controllers::cronjob {

namespace {

constexpr uint64_t kStarBit = 1ULL << 63;

struct Bounds {
  unsigned min, max;
  const std::map<std::string, unsigned>* names;
};
const std::map<std::string, unsigned> kMonthNames = {{"jan", 1}, {"feb", 2}, {"mar", 3}, {"apr", 4},
                                                     {"may", 5}, {"jun", 6}, {"jul", 7}, {"aug", 8},
                                                     {"sep", 9}, {"oct", 10}, {"nov", 11}, {"dec", 12}};
const std::map<std::string, unsigned> kDowNames = {{"sun", 0}, {"mon", 1}, {"tue", 2}, {"wed", 3},
                                                   {"thu", 4}, {"fri", 5}, {"sat", 6}};
const Bounds kSeconds{0, 59, nullptr}, kMinutes{0, 59, nullptr}, kHours{0, 23, nullptr}, kDom{1, 31, nullptr},
    kMonths{1, 12, &kMonthNames}, kDow{0, 6, &kDowNames};

uint64_t getBits(unsigned min, unsigned max, unsigned step) {
  if (step == 1) return ~(~0ULL << (max + 1)) & (~0ULL << min);
  uint64_t bits = 0;
  for (unsigned i = min; i <= max; i += step) bits |= 1ULL << i;
  return bits;
}
uint64_t all(const Bounds& r) { return getBits(r.min, r.max, 1) | kStarBit; }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) return out;
    start = p + 1;
  }
}

// strconv.Atoi, with Go's error text.
Result<long long> atoi(const std::string& s) {
  auto bad = [&] { return Status(StatusCode::kInvalidArgument, "strconv.Atoi: parsing \"" + s + "\": invalid syntax"); };
  if (s.empty()) return bad();
  size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
  if (i == s.size()) return bad();
  long long v = 0;
  for (; i < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return bad();
    if (v > (INT64_MAX - 9) / 10)
      return Status(StatusCode::kInvalidArgument, "strconv.Atoi: parsing \"" + s + "\": value out of range");
    v = v * 10 + (s[i] - '0');
  }
  return s[0] == '-' ? -v : v;
}

Result<unsigned> mustParseInt(const std::string& expr) {
  auto n = atoi(expr);
  if (!n.ok()) return Status(StatusCode::kInvalidArgument, "failed to parse int from " + expr + ": " + n.status().message());
  if (*n < 0) return Status(StatusCode::kInvalidArgument, "negative number (" + std::to_string(*n) + ") not allowed: " + expr);
  return static_cast<unsigned>(std::min<long long>(*n, UINT32_MAX));
}

Result<unsigned> parseIntOrName(const std::string& expr, const std::map<std::string, unsigned>* names) {
  if (names) {
    std::string lower = expr;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (auto it = names->find(lower); it != names->end()) return it->second;
  }
  return mustParseInt(expr);
}

Result<uint64_t> getRange(const std::string& expr, const Bounds& r) {
  auto rangeAndStep = split(expr, '/');
  auto lowAndHigh = split(rangeAndStep[0], '-');
  const bool singleDigit = lowAndHigh.size() == 1;
  unsigned start = 0, end = 0, step = 1;
  uint64_t extra = 0;
  if (lowAndHigh[0] == "*" || lowAndHigh[0] == "?") {
    start = r.min;
    end = r.max;
    extra = kStarBit;
  } else {
    auto s = parseIntOrName(lowAndHigh[0], r.names);
    if (!s.ok()) return s.status();
    start = end = *s;
    if (lowAndHigh.size() == 2) {
      auto e = parseIntOrName(lowAndHigh[1], r.names);
      if (!e.ok()) return e.status();
      end = *e;
    } else if (lowAndHigh.size() > 2) {
      return Status(StatusCode::kInvalidArgument, "too many hyphens: " + expr);
    }
  }
  if (rangeAndStep.size() == 2) {
    auto st = mustParseInt(rangeAndStep[1]);
    if (!st.ok()) return st.status();
    step = *st;
    if (singleDigit) end = r.max;  // "N/step" is "N-max/step"
    if (step > 1) extra = 0;
  } else if (rangeAndStep.size() > 2) {
    return Status(StatusCode::kInvalidArgument, "too many slashes: " + expr);
  }
  auto num = [](unsigned v) { return std::to_string(v); };
  if (start < r.min)
    return Status(StatusCode::kInvalidArgument,
                  "beginning of range (" + num(start) + ") below minimum (" + num(r.min) + "): " + expr);
  if (end > r.max)
    return Status(StatusCode::kInvalidArgument, "end of range (" + num(end) + ") above maximum (" + num(r.max) + "): " + expr);
  if (start > end)
    return Status(StatusCode::kInvalidArgument,
                  "beginning of range (" + num(start) + ") beyond end of range (" + num(end) + "): " + expr);
  if (step == 0) return Status(StatusCode::kInvalidArgument, "step of range should be a positive number: " + expr);
  return getBits(start, end, step) | extra;
}

Result<uint64_t> getField(const std::string& field, const Bounds& r) {
  uint64_t bits = 0;
  for (const auto& expr : split(field, ',')) {
    auto b = getRange(expr, r);
    if (!b.ok()) return b.status();
    bits |= *b;
  }
  return bits;
}

// time.ParseDuration: "1h30m", "90s", "1.5h", "300ms".
Result<double> parseGoDuration(const std::string& s) {
  auto bad = [&] { return Status(StatusCode::kInvalidArgument, "time: invalid duration \"" + s + "\""); };
  std::string d = s;
  double sign = 1;
  if (!d.empty() && (d[0] == '-' || d[0] == '+')) {
    sign = d[0] == '-' ? -1 : 1;
    d = d.substr(1);
  }
  if (d == "0") return 0.0;
  if (d.empty()) return bad();
  static const std::vector<std::pair<std::string, double>> kUnits = {
      {"ns", 1e-9}, {"us", 1e-6}, {"\xc2\xb5s", 1e-6}, {"\xce\xbcs", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"m", 60}, {"h", 3600}};
  double total = 0;
  size_t i = 0;
  while (i < d.size()) {
    size_t st = i;
    while (i < d.size() && (std::isdigit(static_cast<unsigned char>(d[i])) || d[i] == '.')) ++i;
    if (i == st) return bad();
    double v = std::strtod(d.substr(st, i - st).c_str(), nullptr);
    size_t us = i;
    while (i < d.size() && !std::isdigit(static_cast<unsigned char>(d[i])) && d[i] != '.') ++i;
    const std::string unit = d.substr(us, i - us);
    if (unit.empty())
      return Status(StatusCode::kInvalidArgument, "time: missing unit in duration \"" + s + "\"");
    auto u = std::find_if(kUnits.begin(), kUnits.end(), [&](const auto& p) { return p.first == unit; });
    if (u == kUnits.end())
      return Status(StatusCode::kInvalidArgument, "time: unknown unit \"" + unit + "\" in duration \"" + s + "\"");
    total += v * u->second;
  }
  return sign * total;
}

bool dayMatches(uint64_t dom, uint64_t dow, const Civil& c) {
  const bool domMatch = (1ULL << c.day) & dom, dowMatch = (1ULL << c.weekday) & dow;
  if ((dom & kStarBit) || (dow & kStarBit)) return domMatch && dowMatch;
  return domMatch || dowMatch;
}

std::string goSlice(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? " " : "") + v[i];
  return out + "]";
}

}  // namespace

Result<CronSchedule> CronSchedule::parseStandard(const std::string& specIn, std::shared_ptr<const TimeZone> local) {
  std::string spec = specIn;
  if (spec.empty()) return Status(StatusCode::kInvalidArgument, "empty spec string");
  CronSchedule s;
  s.zone_ = std::move(local);
  if (spec.rfind("TZ=", 0) == 0 || spec.rfind("CRON_TZ=", 0) == 0) {
    const size_t i = spec.find(' '), eq = spec.find('=');
    if (i == std::string::npos)  // robfig slices spec[eq+1:-1] and panics; upstream recovers the panic
      return Status(StatusCode::kInvalidArgument, "invalid schedule format: runtime error: slice bounds out of range [" +
                                                      std::to_string(eq + 1) + ":-1]");
    const std::string name = spec.substr(eq + 1, i - eq - 1);
    auto z = TimeZone::load(name);
    if (!z.ok())
      return Status(StatusCode::kInvalidArgument, "provided bad location " + name + ": " + z.status().message());
    s.zone_ = *z;
    spec = spec.substr(i);
    const size_t a = spec.find_first_not_of(" \t\n\r\v\f"), b = spec.find_last_not_of(" \t\n\r\v\f");
    spec = a == std::string::npos ? "" : spec.substr(a, b - a + 1);
  }
  if (!spec.empty() && spec[0] == '@') {
    s.second_ = 1ULL << kSeconds.min;
    s.minute_ = 1ULL << kMinutes.min;
    s.hour_ = 1ULL << kHours.min;
    s.dom_ = all(kDom);
    s.month_ = all(kMonths);
    s.dow_ = all(kDow);
    if (spec == "@yearly" || spec == "@annually") {
      s.dom_ = 1ULL << kDom.min;
      s.month_ = 1ULL << kMonths.min;
    } else if (spec == "@monthly") {
      s.dom_ = 1ULL << kDom.min;
    } else if (spec == "@weekly") {
      s.dow_ = 1ULL << kDow.min;
    } else if (spec == "@daily" || spec == "@midnight") {
    } else if (spec == "@hourly") {
      s.hour_ = all(kHours);
    } else if (spec.rfind("@every ", 0) == 0) {
      auto d = parseGoDuration(spec.substr(7));
      if (!d.ok())
        return Status(StatusCode::kInvalidArgument, "failed to parse duration " + spec + ": " + d.status().message());
      s.every_ = std::chrono::seconds(std::max<int64_t>(1, static_cast<int64_t>(std::floor(*d))));
    } else {
      return Status(StatusCode::kInvalidArgument, "unrecognized descriptor: " + spec);
    }
    return s;
  }
  std::vector<std::string> fields;
  {
    std::istringstream in(spec);
    std::string f;
    while (in >> f) fields.push_back(f);
  }
  if (fields.size() != 5)
    return Status(StatusCode::kInvalidArgument, "expected exactly 5 fields, found " + std::to_string(fields.size()) +
                                                    ": " + goSlice(fields));
  s.second_ = 1ULL;  // the seconds field defaults to "0"
  const Bounds* bounds[] = {&kMinutes, &kHours, &kDom, &kMonths, &kDow};
  uint64_t* out[] = {&s.minute_, &s.hour_, &s.dom_, &s.month_, &s.dow_};
  for (size_t k = 0; k < 5; ++k) {
    auto b = getField(fields[k], *bounds[k]);
    if (!b.ok()) return b.status();
    *out[k] = *b;
  }
  return s;
}

WallTime CronSchedule::next(WallTime tIn) const {
  using namespace std::chrono;
  const auto ns = duration_cast<nanoseconds>(tIn.time_since_epoch()).count();
  const int64_t sec = ns >= 0 ? ns / 1000000000 : -((-ns + 999999999) / 1000000000);
  if (every_.count() > 0) {  // ConstantDelaySchedule: t + delay, rounded down to the second
    return WallTime(duration_cast<system_clock::duration>(seconds(sec) + every_));
  }
  const TimeZone& z = *zone_;
  int64_t t = sec + 1;  // the upcoming second
  bool added = false;
  const int64_t yearLimit = z.civil(t).year + 5;
wrap:
  Civil c = z.civil(t);
  if (c.year > yearLimit) return WallTime{};
  while (!((1ULL << c.month) & month_)) {
    if (!added) {
      added = true;
      t = z.date(c.year, c.month, 1, 0, 0, 0);
      c = z.civil(t);
    }
    t = z.date(c.year, c.month + 1, c.day, c.hour, c.minute, c.second);
    c = z.civil(t);
    if (c.month == 1) goto wrap;
  }
  while (!dayMatches(dom_, dow_, c)) {
    if (!added) {
      added = true;
      t = z.date(c.year, c.month, c.day, 0, 0, 0);
      c = z.civil(t);
    }
    t = z.date(c.year, c.month, c.day + 1, c.hour, c.minute, c.second);
    c = z.civil(t);
    // DST: back to midnight when the day's start moved.
    if (c.hour != 0) {
      t += c.hour > 12 ? (24 - c.hour) * 3600 : -c.hour * 3600;
      c = z.civil(t);
    }
    if (c.day == 1) goto wrap;
  }
  while (!((1ULL << c.hour) & hour_)) {
    if (!added) {
      added = true;
      t = z.date(c.year, c.month, c.day, c.hour, 0, 0);
      c = z.civil(t);
    }
    t += 3600;
    c = z.civil(t);
    if (c.hour == 0) goto wrap;
  }
  while (!((1ULL << c.minute) & minute_)) {
    if (!added) {
      added = true;
      t -= ((t % 60) + 60) % 60;
      c = z.civil(t);
    }
    t += 60;
    c = z.civil(t);
    if (c.minute == 0) goto wrap;
  }
  while (!((1ULL << c.second) & second_)) {
    if (!added) added = true;
    t += 1;
    c = z.civil(t);
    if (c.second == 0) goto wrap;
  }
  return WallTime(duration_cast<system_clock::duration>(seconds(t)));
}

}  // namespace kcm::controllers::cronjob
