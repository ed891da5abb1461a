#include "api/support/types.h"

#include <charconv>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "api/support/json_writer.h"

namespace kcm::api {
namespace {

using i128 = __int128;

struct ParsedQuantity {
  bool negative = false;
  i128 digits = 0;   // all significant digits as an integer
  int fracLen = 0;   // digits after the decimal point
  int base = 10;     // 10 or 2
  int exponent = 0;  // power of base (binary: multiples of 10)
};

bool parseQuantity(std::string_view s, ParsedQuantity& q) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) q.negative = s[i++] == '-';
  size_t intDigits = 0, fracDigits = 0;
  auto addDigit = [&](char c) {
    if (q.digits < (static_cast<i128>(1) << 100)) {
      q.digits = q.digits * 10 + (c - '0');
      return true;
    }
    return false;
  };
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    if (!addDigit(s[i])) return false;
    ++i, ++intDigits;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (!addDigit(s[i])) return false;
      ++i, ++fracDigits;
    }
  }
  if (intDigits + fracDigits == 0) return false;
  q.fracLen = static_cast<int>(fracDigits);
  std::string_view suf = s.substr(i);
  if (suf.empty()) return true;
  static const std::pair<std::string_view, int> kBinary[] = {{"Ki", 1}, {"Mi", 2}, {"Gi", 3},
                                                             {"Ti", 4}, {"Pi", 5}, {"Ei", 6}};
  for (auto& [k, e] : kBinary)
    if (suf == k) {
      q.base = 2;
      q.exponent = 10 * e;
      return true;
    }
  static const std::pair<std::string_view, int> kDecimal[] = {{"n", -9}, {"u", -6}, {"m", -3}, {"k", 3},
                                                              {"M", 6},  {"G", 9},  {"T", 12}, {"P", 15},
                                                              {"E", 18}};
  for (auto& [k, e] : kDecimal)
    if (suf == k) {
      q.exponent = e;
      return true;
    }
  if (suf[0] == 'e' || suf[0] == 'E') {
    std::string_view ex = suf.substr(1);
    if (!ex.empty() && ex[0] == '+') ex.remove_prefix(1);
    int e = 0;
    auto [p, ec] = std::from_chars(ex.data(), ex.data() + ex.size(), e);
    if (ec != std::errc() || p != ex.data() + ex.size() || ex.empty()) return false;
    q.exponent = e;
    return true;
  }
  return false;
}

i128 pow10(int n) {
  i128 r = 1;
  while (n-- > 0) r *= 10;
  return r;
}

// ceil(q * scale) clamped to int64 (a negative value truncates, as Go's ceiling of it does).
// value = digits * scale * 2^e2 / 10^shift10, exact in 128 bits for every quantity an apiserver sends.
int64_t scaled(const ParsedQuantity& q, int64_t scale) {
  if (q.digits == 0) return 0;
  const int64_t saturated = q.negative ? INT64_MIN : INT64_MAX;
  const int e2 = q.base == 2 ? q.exponent : 0;
  const int shift10 = q.fracLen - (q.base == 10 ? q.exponent : 0);
  i128 num = q.digits * scale;  // digits < 2^104, scale <= 1000: below 2^114
  int bits = 0;
  for (i128 x = num; x > 0; x >>= 1) ++bits;
  if (bits + e2 > 125 || shift10 > 38 || shift10 < -38) {
    // Past 128-bit exact arithmetic (dozens of digits with a binary suffix, or a power of ten beyond 10^38): the
    // magnitude decides, saturated or a fraction of a unit, in long double.
    const long double v =
        static_cast<long double>(num) * std::pow(2.0L, e2) / std::pow(10.0L, static_cast<long double>(shift10));
    if (!(v < 9.2233720368547758e18L)) return saturated;
    return q.negative ? -static_cast<int64_t>(std::trunc(v)) : static_cast<int64_t>(std::ceil(v));
  }
  num <<= e2;  // below 2^126
  const i128 kMax = static_cast<i128>(INT64_MAX);
  if (shift10 <= 0) {
    if (num > kMax) return saturated;
    for (int k = 0; k < -shift10; ++k)
      if ((num *= 10) > kMax) return saturated;
    return q.negative ? -static_cast<int64_t>(num) : static_cast<int64_t>(num);
  }
  const i128 den = pow10(shift10);  // at most 10^38, below 2^127
  const i128 whole = num / den, rest = num % den;
  if (whole > kMax || (whole == kMax && rest != 0 && !q.negative)) return saturated;
  if (q.negative) return -static_cast<int64_t>(whole);
  return static_cast<int64_t>(whole + (rest != 0 ? 1 : 0));
}

// days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
int64_t daysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// Parses RFC3339 into (unix seconds, microseconds fraction).
bool parseRfc3339(std::string_view s, int64_t& secs, int64_t& micros) {
  auto num = [&](size_t pos, size_t len, int& out) {
    if (pos + len > s.size()) return false;
    out = 0;
    for (size_t k = pos; k < pos + len; ++k) {
      if (s[k] < '0' || s[k] > '9') return false;
      out = out * 10 + (s[k] - '0');
    }
    return true;
  };
  int Y, M, D, h, m, sec;
  if (!num(0, 4, Y) || s.size() < 20 || s[4] != '-' || !num(5, 2, M) || s[7] != '-' || !num(8, 2, D) ||
      (s[10] != 'T' && s[10] != 't') || !num(11, 2, h) || s[13] != ':' || !num(14, 2, m) || s[16] != ':' ||
      !num(17, 2, sec))
    return false;
  if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60) return false;
  size_t i = 19;
  micros = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    int n = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (n < 6) micros = micros * 10 + (s[i] - '0');
      ++n, ++i;
    }
    if (n == 0) return false;
    for (int k = n; k < 6; ++k) micros *= 10;
  }
  int offset = 0;
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
    ++i;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    int oh, om;
    if (!num(i + 1, 2, oh) || i + 3 >= s.size() || s[i + 3] != ':' || !num(i + 4, 2, om)) return false;
    offset = (oh * 3600 + om * 60) * (s[i] == '-' ? -1 : 1);
    i += 6;
  } else {
    return false;
  }
  if (i != s.size()) return false;
  secs = daysFromCivil(Y, static_cast<unsigned>(M), static_cast<unsigned>(D)) * 86400 + h * 3600 + m * 60 + sec -
         offset;
  return true;
}

std::string formatUtc(int64_t secs, const char* fracFmt, int64_t frac) {
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[48];
  int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                        tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  std::string out(buf, static_cast<size_t>(n));
  if (fracFmt) {
    n = std::snprintf(buf, sizeof buf, fracFmt, static_cast<long long>(frac));
    out.append(buf, static_cast<size_t>(n));
  }
  out += 'Z';
  return out;
}

int64_t floorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

std::optional<Quantity> Quantity::parse(std::string_view s) {
  ParsedQuantity q;
  if (!parseQuantity(s, q)) return std::nullopt;
  return Quantity(std::string(s));
}

Quantity Quantity::fromInt(int64_t v) { return Quantity(std::to_string(v)); }

Quantity Quantity::fromMilli(int64_t milli) {
  if (milli % 1000 == 0) return Quantity(std::to_string(milli / 1000));
  return Quantity(std::to_string(milli) + "m");
}

bool Quantity::isZero() const {
  ParsedQuantity q;
  return s_.empty() || (parseQuantity(s_, q) && q.digits == 0);
}

int64_t Quantity::value() const {
  ParsedQuantity q;
  return parseQuantity(s_, q) ? scaled(q, 1) : 0;
}

int64_t Quantity::milliValue() const {
  ParsedQuantity q;
  return parseQuantity(s_, q) ? scaled(q, 1000) : 0;
}

int Quantity::compare(const Quantity& o) const {
  int64_t a = milliValue(), b = o.milliValue();
  return a < b ? -1 : a > b ? 1 : 0;
}

std::optional<int> getScaledValueFromIntOrPercent(const IntOrString& v, int total, bool roundUp) {
  if (!v.isString) return v.intVal;
  if (v.strVal.empty() || v.strVal.back() != '%') return std::nullopt;
  int pct = 0;
  std::string_view digits(v.strVal.data(), v.strVal.size() - 1);
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pct);
  if (ec != std::errc() || p != digits.data() + digits.size()) return std::nullopt;
  int64_t prod = static_cast<int64_t>(pct) * total;
  return static_cast<int>(roundUp ? (prod + 99) / 100 : prod / 100);
}

Time Time::now() {
  using namespace std::chrono;
  return Time{duration_cast<seconds>(system_clock::now().time_since_epoch()).count()};
}

std::optional<Time> Time::parse(std::string_view s) {
  int64_t secs, us;
  if (!parseRfc3339(s, secs, us)) return std::nullopt;
  return Time{secs};
}

std::string Time::rfc3339() const { return formatUtc(unixSeconds, nullptr, 0); }

MicroTime MicroTime::now() {
  using namespace std::chrono;
  return MicroTime{duration_cast<microseconds>(system_clock::now().time_since_epoch()).count()};
}

std::optional<MicroTime> MicroTime::parse(std::string_view s) {
  int64_t secs, us;
  if (!parseRfc3339(s, secs, us)) return std::nullopt;
  return MicroTime{secs * 1000000 + us};
}

std::string MicroTime::rfc3339Micro() const {
  int64_t secs = floorDiv(unixMicros, 1000000);
  return formatUtc(secs, ".%06lld", unixMicros - secs * 1000000);
}

void UnknownFields::add(std::string_view key, std::string_view rawJson) {
  if (!fields_) fields_ = std::make_unique<Fields>();
  fields_->emplace_back(std::string(key), std::string(rawJson));
}

void UnknownFields::emit(JsonWriter& w) const {
  if (!fields_) return;
  for (const auto& [k, v] : *fields_) {
    w.key(k);
    w.raw(v);
  }
}

}  // namespace kcm::api
