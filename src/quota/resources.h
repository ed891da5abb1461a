#pragma once
// Quota arithmetic (k8s.io/apiserver/pkg/quota/v1/resources.go) on exact quantities. api::Quantity keeps the
// wire text; Amount is the value behind it as Go's resource.Quantity holds it: an exact number (here in units of
// 10^-9, the finest Go keeps: finer text rounds up to 1n) and a format (DecimalSI, BinarySI, DecimalExponent)
// that decides how it is written back. Sums keep the receiver's format unless the receiver is zero, then take
// the addend's, as Quantity.Add does; quota status values therefore print exactly as upstream's ("1536Mi",
// "1100m", "0").
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "api/support/types.h"

namespace kcm::quota {

enum class Format { kDecimalExponent, kBinarySI, kDecimalSI, kUnset };

class Amount {
 public:
  Amount() = default;  // zero, format unset (a Go zero-value Quantity)
  static Amount ofInt(int64_t v, Format f = Format::kDecimalSI) { return Amount(static_cast<__int128>(v) * kNano, f); }
  static Amount zero(Format f = Format::kDecimalSI) { return Amount(0, f); }
  // resource.NewMilliQuantity.
  static Amount ofMilli(int64_t v, Format f = Format::kDecimalSI) {
    return Amount(static_cast<__int128>(v) * (kNano / 1000), f);
  }
  // Text as Go's ParseQuantity reads it; false when it would reject the text.
  static bool parse(std::string_view text, Amount& out);
  // A decoded quantity (the apiserver sends valid ones; anything else counts as zero).
  static Amount of(const api::Quantity& q);

  void add(const Amount& y);
  void sub(const Amount& y);
  int cmp(const Amount& y) const { return nanos_ < y.nanos_ ? -1 : nanos_ > y.nanos_ ? 1 : 0; }
  bool isZero() const { return nanos_ == 0; }
  // Quantity.MilliValue(): rounded up to a whole thousandth.
  int64_t milliValue() const {
    constexpr __int128 kPerMilli = kNano / 1000;
    __int128 q = nanos_ / kPerMilli;
    if (nanos_ % kPerMilli > 0) ++q;
    return static_cast<int64_t>(q);
  }
  // Quantity.RoundUp(0): up to a whole number; true when it already was one.
  bool roundUpToInteger();
  Format format() const { return format_; }
  // Quantity.String(): the canonical text.
  std::string canonical() const;
  api::Quantity toQuantity() const;

 private:
  static constexpr int64_t kNano = 1000000000;
  Amount(__int128 nanos, Format f) : nanos_(nanos), format_(f) {}
  __int128 nanos_ = 0;
  Format format_ = Format::kUnset;
};

using ResourceName = std::string;
// A ResourceList with exact values (ordered, so iteration matches sorted output).
using ResourceList = std::map<ResourceName, Amount>;

ResourceList toResourceList(const api::StringMap<api::Quantity>& in);
api::StringMap<api::Quantity> toQuantities(const ResourceList& in);

// As quota.Equals: the same names with equal values (formats do not matter).
bool equals(const ResourceList& a, const ResourceList& b);
// As quota.Add: a + b per name, names of either.
ResourceList add(const ResourceList& a, const ResourceList& b);
// As quota.Mask: only the given names.
ResourceList mask(const ResourceList& in, const std::vector<ResourceName>& names);
std::vector<ResourceName> resourceNames(const ResourceList& in);
bool contains(const std::vector<ResourceName>& items, const ResourceName& item);
bool containsPrefix(const std::vector<std::string>& prefixes, const ResourceName& item);
// As quota.Intersection / Difference: de-duplicated and sorted.
std::vector<ResourceName> intersection(const std::vector<ResourceName>& a, const std::vector<ResourceName>& b);
std::vector<ResourceName> difference(const std::vector<ResourceName>& a, const std::vector<ResourceName>& b);

}  // namespace kcm::quota
