#include "controllers/cronjob/timezone.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <map>
#include <sstream>

namespace kcm::controllers::cronjob {

namespace {

int64_t floorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

bool isLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }
int daysIn(int64_t y, int m) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && isLeap(y) ? 29 : kDays[m - 1];
}

int64_t be(const std::string& d, size_t off, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<uint8_t>(d[off + static_cast<size_t>(i)]);
  if (bytes == 4) return static_cast<int32_t>(static_cast<uint32_t>(v));
  return static_cast<int64_t>(v);
}

}  // namespace

int64_t daysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = floorDiv(y, 400);
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

Civil civilFromUnix(int64_t unix) {
  const int64_t days = floorDiv(unix, 86400);
  const int64_t secs = unix - days * 86400;
  const int64_t z = days + 719468;
  const int64_t era = floorDiv(z, 146097);
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  Civil c;
  c.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  c.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  c.year = yoe + era * 400 + (c.month <= 2);
  c.hour = static_cast<int>(secs / 3600);
  c.minute = static_cast<int>(secs % 3600 / 60);
  c.second = static_cast<int>(secs % 60);
  c.weekday = static_cast<int>(((days + 4) % 7 + 7) % 7);
  return c;
}

// ---------------------------------------------------------------- POSIX TZ footer rule

struct TimeZone::Rule {
  int32_t stdOffset = 0, dstOffset = 0;  // seconds east of UTC
  bool hasDst = false;
  struct When {
    char kind = 'M';  // 'M' (month.week.day), 'J' (Julian, no Feb 29), 'D' (zero-based day of year)
    int month = 0, week = 0, day = 0;
    int64_t time = 7200;  // seconds after local midnight
  } start, end;

  // Seconds from the start of `year` (local) to the moment `w` names.
  static int64_t secondsIntoYear(int64_t year, const When& w) {
    int64_t yday = 0;
    if (w.kind == 'J') {
      yday = w.day - 1;
      if (isLeap(year) && w.day >= 60) ++yday;
    } else if (w.kind == 'D') {
      yday = w.day;
    } else {
      for (int m = 1; m < w.month; ++m) yday += daysIn(year, m);
      const int wd1 = static_cast<int>(((daysFromCivil(year, w.month, 1) + 4) % 7 + 7) % 7);
      int dd = 1 + (w.day - wd1 + 7) % 7 + (w.week - 1) * 7;
      while (dd > daysIn(year, w.month)) dd -= 7;
      yday += dd - 1;
    }
    return yday * 86400 + w.time;
  }
  // The (unix) DST start and end in `year`.
  std::pair<int64_t, int64_t> transitions(int64_t year) const {
    const int64_t y0 = daysFromCivil(year, 1, 1) * 86400;
    return {y0 + secondsIntoYear(year, start) - stdOffset, y0 + secondsIntoYear(year, end) - dstOffset};
  }
  Lookup lookup(int64_t t, int64_t notBefore) const {
    if (!hasDst) return {stdOffset, notBefore, INT64_MAX};
    const int64_t year = civilFromUnix(t).year;
    // Every transition of the neighbouring years, in order, each with the offset that starts there.
    std::vector<std::pair<int64_t, int32_t>> ts;
    for (int64_t y = year - 1; y <= year + 1; ++y) {
      auto [s, e] = transitions(y);
      ts.push_back({s, dstOffset});
      ts.push_back({e, stdOffset});
    }
    std::sort(ts.begin(), ts.end());
    for (size_t i = 0; i + 1 < ts.size(); ++i)
      if (t >= ts[i].first && t < ts[i + 1].first)
        return {ts[i].second, std::max(ts[i].first, notBefore), ts[i + 1].first};
    return {stdOffset, notBefore, INT64_MAX};
  }
};

namespace {

// [+-]hh[:mm[:ss]]: seconds.
bool parseClock(const std::string& s, size_t& i, int64_t& out) {
  int sign = 1;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) sign = s[i++] == '-' ? -1 : 1;
  int64_t parts[3] = {0, 0, 0};
  for (int p = 0; p < 3; ++p) {
    if (p > 0) {
      if (i >= s.size() || s[i] != ':') break;
      ++i;
    }
    size_t st = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) parts[p] = parts[p] * 10 + (s[i++] - '0');
    if (i == st) return false;
  }
  out = sign * (parts[0] * 3600 + parts[1] * 60 + parts[2]);
  return true;
}

bool parseName(const std::string& s, size_t& i) {
  if (i < s.size() && s[i] == '<') {
    size_t e = s.find('>', i);
    if (e == std::string::npos) return false;
    i = e + 1;
    return true;
  }
  size_t st = i;
  while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
  return i - st >= 3;
}

bool parseWhen(const std::string& s, size_t& i, TimeZone::Rule::When& w) {
  auto num = [&](int& v) {
    size_t st = i;
    v = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) v = v * 10 + (s[i++] - '0');
    return i > st;
  };
  if (i < s.size() && s[i] == 'M') {
    ++i;
    w.kind = 'M';
    if (!num(w.month) || i >= s.size() || s[i++] != '.' || !num(w.week) || i >= s.size() || s[i++] != '.' ||
        !num(w.day))
      return false;
    if (w.month < 1 || w.month > 12 || w.week < 1 || w.week > 5 || w.day > 6) return false;
  } else if (i < s.size() && s[i] == 'J') {
    ++i;
    w.kind = 'J';
    if (!num(w.day) || w.day < 1 || w.day > 365) return false;
  } else {
    w.kind = 'D';
    if (!num(w.day) || w.day > 365) return false;
  }
  w.time = 7200;
  if (i < s.size() && s[i] == '/') {
    ++i;
    if (!parseClock(s, i, w.time)) return false;
  }
  return true;
}

}  // namespace

// ---------------------------------------------------------------- TimeZone

std::shared_ptr<const TimeZone> TimeZone::utc() {
  static const auto z = std::make_shared<const TimeZone>();
  return z;
}

Result<std::shared_ptr<const TimeZone>> TimeZone::fromTZif(const std::string& name, const std::string& d) {
  auto bad = [&] { return Status(StatusCode::kInvalidArgument, "unknown time zone " + name); };
  if (d.size() < 44 || d.compare(0, 4, "TZif") != 0) return bad();
  auto counts = [&](size_t off, int64_t c[6]) {
    for (int k = 0; k < 6; ++k) c[k] = be(d, off + 20 + static_cast<size_t>(k) * 4, 4);
  };
  int64_t c[6];  // isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt
  counts(0, c);
  size_t off = 44;
  int timeSize = 4;
  if (d[4] >= '2') {  // skip the v1 block; read the 64-bit one
    off += static_cast<size_t>(c[3] * 4 + c[3] + c[4] * 6 + c[5] + c[2] * 8 + c[1] + c[0]);
    if (d.size() < off + 44) return bad();
    counts(off, c);
    off += 44;
    timeSize = 8;
  }
  const size_t need = static_cast<size_t>(c[3] * timeSize + c[3] + c[4] * 6 + c[5] + c[2] * (timeSize + 4) + c[1] + c[0]);
  if (c[4] < 1 || d.size() < off + need) return bad();
  auto z = std::make_shared<TimeZone>();
  z->name_ = name;
  for (int64_t k = 0; k < c[3]; ++k) z->transitions_.push_back(be(d, off + static_cast<size_t>(k * timeSize), timeSize));
  off += static_cast<size_t>(c[3] * timeSize);
  for (int64_t k = 0; k < c[3]; ++k) z->transitionType_.push_back(static_cast<uint8_t>(d[off + static_cast<size_t>(k)]));
  off += static_cast<size_t>(c[3]);
  std::vector<bool> isDst;
  for (int64_t k = 0; k < c[4]; ++k) {
    z->offsets_.push_back(static_cast<int32_t>(be(d, off + static_cast<size_t>(k * 6), 4)));
    isDst.push_back(d[off + static_cast<size_t>(k * 6 + 4)] != 0);
  }
  off += static_cast<size_t>(c[4] * 6) + static_cast<size_t>(c[5] + c[2] * (timeSize + 4) + c[1] + c[0]);
  for (uint8_t t : z->transitionType_)
    if (t >= z->offsets_.size()) return bad();
  // Before the first transition: the first standard-time type (Go's lookupFirstZone, simplified).
  z->firstOffset_ = z->offsets_[0];
  for (size_t k = 0; k < isDst.size(); ++k)
    if (!isDst[k]) {
      z->firstOffset_ = z->offsets_[k];
      break;
    }
  if (timeSize == 8 && off < d.size() && d[off] == '\n') {
    const size_t e = d.find('\n', off + 1);
    const std::string tz = d.substr(off + 1, e == std::string::npos ? std::string::npos : e - off - 1);
    auto rule = std::make_shared<Rule>();
    size_t i = 0;
    int64_t stdOff = 0;
    bool ok = !tz.empty() && parseName(tz, i) && parseClock(tz, i, stdOff);
    if (ok) {
      rule->stdOffset = static_cast<int32_t>(-stdOff);
      if (i < tz.size()) {
        ok = parseName(tz, i);
        int64_t dstOff = stdOff - 3600;
        if (ok && i < tz.size() && tz[i] != ',') ok = parseClock(tz, i, dstOff);
        rule->dstOffset = static_cast<int32_t>(-dstOff);
        ok = ok && i < tz.size() && tz[i++] == ',' && parseWhen(tz, i, rule->start) && i < tz.size() &&
             tz[i++] == ',' && parseWhen(tz, i, rule->end);
        rule->hasDst = ok;
      }
    }
    if (ok) z->rule_ = std::move(rule);
  }
  return std::shared_ptr<const TimeZone>(std::move(z));
}

Result<std::shared_ptr<const TimeZone>> TimeZone::load(const std::string& name) {
  if (name.empty() || name == "UTC") return utc();
  std::string file = name;
  if (name == "Local") {
    const char* tz = std::getenv("TZ");
    if (tz && *tz == '\0') return utc();
    file = tz ? std::string(*tz == ':' ? tz + 1 : tz) : "";
  } else if (name.find("..") != std::string::npos || name[0] == '/' || name[0] == '\\') {
    return Status(StatusCode::kInvalidArgument, "time: invalid location name");
  }
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const TimeZone>> cache;
  std::lock_guard l(mu);
  if (auto it = cache.find(name); it != cache.end()) return it->second;
  std::vector<std::string> paths;
  if (name == "Local" && file.empty()) {
    paths.push_back("/etc/localtime");
  } else {
    if (const char* zi = std::getenv("ZONEINFO"); zi && *zi) paths.push_back(std::string(zi) + "/" + file);
    for (const char* dir : {"/usr/share/zoneinfo/", "/usr/share/lib/zoneinfo/", "/usr/lib/locale/TZ/", "/etc/zoneinfo/"})
      paths.push_back(dir + file);
  }
  for (const auto& p : paths) {
    std::ifstream f(p, std::ios::binary);
    if (!f) continue;
    std::stringstream ss;
    ss << f.rdbuf();
    auto z = fromTZif(name == "Local" ? "Local" : name, ss.str());
    if (!z.ok()) continue;
    cache[name] = *z;
    return *z;
  }
  if (name == "Local") return utc();
  return Status(StatusCode::kInvalidArgument, "unknown time zone " + name);
}

TimeZone::Lookup TimeZone::lookup(int64_t t) const {
  if (transitions_.empty()) {
    if (rule_) return rule_->lookup(t, INT64_MIN);
    return {firstOffset_, INT64_MIN, INT64_MAX};
  }
  if (t < transitions_.front()) return {firstOffset_, INT64_MIN, transitions_.front()};
  const size_t idx = static_cast<size_t>(std::upper_bound(transitions_.begin(), transitions_.end(), t) -
                                         transitions_.begin()) - 1;
  if (idx + 1 < transitions_.size()) return {offsets_[transitionType_[idx]], transitions_[idx], transitions_[idx + 1]};
  if (rule_) return rule_->lookup(t, transitions_.back());
  return {offsets_[transitionType_[idx]], transitions_[idx], INT64_MAX};
}

int64_t TimeZone::date(int64_t year, int64_t month, int64_t day, int64_t hour, int64_t minute, int64_t second) const {
  // Normalise the month into the year, then let days and seconds carry.
  int64_t m0 = month - 1;
  year += floorDiv(m0, 12);
  m0 -= floorDiv(m0, 12) * 12;
  int64_t unix = (daysFromCivil(year, m0 + 1, 1) + day - 1) * 86400 + hour * 3600 + minute * 60 + second;
  // Go: look the wall time up as if it were UTC, then adjust once when the result falls outside that zone's range.
  Lookup z = lookup(unix);
  if (z.offset != 0) {
    const int64_t utc = unix - z.offset;
    if (utc < z.start || utc >= z.end) z = lookup(utc);
    unix -= z.offset;
  }
  return unix;
}

Civil TimeZone::civil(int64_t unix) const { return civilFromUnix(unix + lookup(unix).offset); }

}  // namespace kcm::controllers::cronjob
