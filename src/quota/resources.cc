#include "quota/resources.h"

#include <algorithm>
#include <cmath>
#include <charconv>

namespace kcm::quota {
namespace {

using i128 = __int128;
constexpr i128 kCap = static_cast<i128>(1) << 120;  // far beyond any real quantity; keeps arithmetic in range

i128 tenTo(int n) {
  i128 r = 1;
  while (n-- > 0) r *= 10;
  return r;
}

std::string toDecimal(i128 v) {
  if (v == 0) return "0";
  const bool neg = v < 0;
  std::string s;
  for (i128 m = neg ? -v : v; m > 0; m /= 10) s.push_back(static_cast<char>('0' + static_cast<int>(m % 10)));
  if (neg) s.push_back('-');
  std::reverse(s.begin(), s.end());
  return s;
}

struct Suffix {
  std::string_view text;
  int base, exponent;  // 10^exponent or 2^exponent
};
constexpr Suffix kSuffixes[] = {
    {"Ki", 2, 10}, {"Mi", 2, 20}, {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50}, {"Ei", 2, 60},
    {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3}, {"", 10, 0},   {"k", 10, 3},  {"M", 10, 6},
    {"G", 10, 9},  {"T", 10, 12}, {"P", 10, 15}, {"E", 10, 18},
};

std::string_view suffixFor(int base, int exponent) {
  for (const auto& s : kSuffixes)
    if (s.base == base && s.exponent == exponent) return s.text;
  return {};  // Go's suffixer finds none and prints the bare number
}

}  // namespace

bool Amount::parse(std::string_view s, Amount& out) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  i128 digits = 0;
  int fracLen = 0, count = 0;
  bool point = false;
  for (; i < s.size(); ++i) {
    if (s[i] == '.' && !point) {
      point = true;
      continue;
    }
    if (s[i] < '0' || s[i] > '9') break;
    if (digits < kCap) {
      digits = digits * 10 + (s[i] - '0');
      if (point) ++fracLen;
    } else if (!point) {
      return false;  // more integer digits than any quantity holds
    }
    ++count;
  }
  if (count == 0) return false;
  const std::string_view suf = s.substr(i);
  int base = 10, exponent = 0;
  Format format = Format::kDecimalSI;
  bool known = false;
  for (const auto& k : kSuffixes)
    if (k.text == suf) {
      base = k.base, exponent = k.exponent, known = true;
      format = base == 2 ? Format::kBinarySI : Format::kDecimalSI;
      break;
    }
  if (!known) {
    if (suf.size() < 2 || (suf[0] != 'e' && suf[0] != 'E')) return false;
    std::string_view ex = suf.substr(1);
    if (ex[0] == '+') ex.remove_prefix(1);
    auto [p, ec] = std::from_chars(ex.data(), ex.data() + ex.size(), exponent);
    if (ec != std::errc() || p != ex.data() + ex.size()) return false;
    format = Format::kDecimalExponent;
  }
  // In nanos: digits * 2^e2 * 10^e10, magnitude rounded up, capped at kCap. Exact in 128 bits for every quantity
  // an apiserver sends; past that (dozens of digits with a binary suffix, powers of ten beyond 10^38) the
  // magnitude is taken in long double.
  const int e2 = base == 2 ? exponent : 0;
  const long long e10 = 9LL - fracLen + (base == 10 ? exponent : 0);
  int bits = 0;
  for (i128 x = digits; x > 0; x >>= 1) ++bits;
  i128 nanos = 0;
  if (digits == 0) {
    nanos = 0;
  } else if (bits + e2 > 125 || e10 > 38 || e10 < -38) {
    const long double v = static_cast<long double>(digits) * std::pow(2.0L, e2) *
                          std::pow(10.0L, static_cast<long double>(e10));
    nanos = !(v < static_cast<long double>(kCap)) ? kCap : std::max<i128>(1, static_cast<i128>(std::ceil(v)));
  } else {
    i128 num = digits << e2;  // below 2^126
    if (e10 >= 0) {
      for (long long k = 0; k < e10 && num <= kCap; ++k) num *= 10;
      nanos = std::min(num, kCap);
    } else {
      const i128 den = tenTo(static_cast<int>(-e10));  // at most 10^38
      nanos = std::min((num + den - 1) / den, kCap);
    }
  }
  // ParseQuantity caps a positive BinarySI amount at the largest int64 (a DecimalSI one is not capped).
  const i128 kMaxInt64Nanos = static_cast<i128>(INT64_MAX) * kNano;
  if (format == Format::kBinarySI && !negative && nanos > kMaxInt64Nanos) nanos = kMaxInt64Nanos;
  out = Amount(negative ? -nanos : nanos, format);
  return true;
}

Amount Amount::of(const api::Quantity& q) {
  Amount a;
  if (!parse(q.str(), a)) return zero();
  return a;
}

void Amount::add(const Amount& y) {
  if (nanos_ == 0) format_ = y.format_;
  nanos_ = std::clamp(nanos_ + y.nanos_, -kCap, kCap);
}

void Amount::sub(const Amount& y) {
  if (nanos_ == 0) format_ = y.format_;
  nanos_ = std::clamp(nanos_ - y.nanos_, -kCap, kCap);
}

bool Amount::roundUpToInteger() {
  const i128 r = nanos_ % kNano;
  if (r == 0) return true;
  nanos_ += r > 0 ? kNano - r : -r;  // away from zero, as inf.RoundUp
  return false;
}

std::string Amount::canonical() const {
  if (nanos_ == 0) return "0";
  Format f = format_;
  if (f == Format::kUnset) f = Format::kDecimalExponent;
  if (f == Format::kBinarySI) {
    const i128 limit = static_cast<i128>(1024) * kNano;
    if ((nanos_ > -limit && nanos_ < limit) || nanos_ % kNano != 0) f = Format::kDecimalSI;
  }
  if (f == Format::kBinarySI) {
    i128 v = nanos_ / kNano;
    int e = 0;
    while (v % 1024 == 0) v /= 1024, e += 10;
    return toDecimal(v) + std::string(suffixFor(2, e));
  }
  i128 m = nanos_;
  int e = -9;
  while (m % 10 == 0) m /= 10, ++e;
  const int r = ((e % 3) + 3) % 3;  // down to a multiple of three
  m *= tenTo(r);
  e -= r;
  if (f == Format::kDecimalExponent) return toDecimal(m) + (e == 0 ? "" : "e" + std::to_string(e));
  return toDecimal(m) + std::string(suffixFor(10, e));
}

api::Quantity Amount::toQuantity() const {
  auto q = api::Quantity::parse(canonical());
  return q ? *q : api::Quantity::fromInt(0);
}

ResourceList toResourceList(const api::StringMap<api::Quantity>& in) {
  ResourceList out;
  for (const auto& [k, v] : in) out.emplace(k, Amount::of(v));
  return out;
}

api::StringMap<api::Quantity> toQuantities(const ResourceList& in) {
  api::StringMap<api::Quantity> out;
  out.reserve(in.size());
  for (const auto& [k, v] : in) out[k] = v.toQuantity();
  return out;
}

bool equals(const ResourceList& a, const ResourceList& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end() || v.cmp(it->second) != 0) return false;
  }
  return true;
}

ResourceList add(const ResourceList& a, const ResourceList& b) {
  ResourceList out = a;
  for (const auto& [k, v] : b) {
    auto [it, inserted] = out.emplace(k, v);
    if (!inserted) it->second.add(v);
  }
  return out;
}

ResourceList mask(const ResourceList& in, const std::vector<ResourceName>& names) {
  ResourceList out;
  for (const auto& [k, v] : in)
    if (contains(names, k)) out.emplace(k, v);
  return out;
}

std::vector<ResourceName> resourceNames(const ResourceList& in) {
  std::vector<ResourceName> out;
  out.reserve(in.size());
  for (const auto& [k, _] : in) out.push_back(k);
  return out;
}

bool contains(const std::vector<ResourceName>& items, const ResourceName& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

bool containsPrefix(const std::vector<std::string>& prefixes, const ResourceName& item) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) { return item.rfind(p, 0) == 0; });
}

std::vector<ResourceName> intersection(const std::vector<ResourceName>& a, const std::vector<ResourceName>& b) {
  std::vector<ResourceName> out;
  for (const auto& x : a)
    if (!contains(out, x) && contains(b, x)) out.push_back(x);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<ResourceName> difference(const std::vector<ResourceName>& a, const std::vector<ResourceName>& b) {
  std::vector<ResourceName> out;
  for (const auto& x : a)
    if (!contains(out, x) && !contains(b, x)) out.push_back(x);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace kcm::quota
