#include "base/duration.h"

#include <cstdint>
#include <ctime>

namespace kcm {

std::string goDuration(std::chrono::nanoseconds d) {
  int64_t ns = d.count();
  if (ns == 0) return "0s";
  std::string sign = ns < 0 ? "-" : "";
  uint64_t u = ns < 0 ? static_cast<uint64_t>(-ns) : static_cast<uint64_t>(ns);
  auto frac = [](uint64_t v, uint64_t unit) {
    std::string s = std::to_string(v / unit);
    uint64_t rem = v % unit;
    if (rem == 0) return s;
    std::string f = std::to_string(rem + unit).substr(1);
    while (!f.empty() && f.back() == '0') f.pop_back();
    return s + "." + f;
  };
  if (u < 1000) return sign + std::to_string(u) + "ns";
  if (u < 1000000) return sign + frac(u, 1000) + "\u00b5s";
  if (u < 1000000000) return sign + frac(u, 1000000) + "ms";
  uint64_t secs = u / 1000000000, h = secs / 3600, m = (secs / 60) % 60;
  std::string out = sign;
  if (h > 0) out += std::to_string(h) + "h";
  if (h > 0 || m > 0) out += std::to_string(m) + "m";
  return out + frac(u % 60000000000ull, 1000000000) + "s";
}

std::string goTime(std::chrono::system_clock::time_point t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  std::string frac = std::to_string(ns % 1000000000 + 1000000000).substr(1);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return std::string(buf) + (frac.empty() ? "" : "." + frac) + " +0000 UTC";
}

}  // namespace kcm
