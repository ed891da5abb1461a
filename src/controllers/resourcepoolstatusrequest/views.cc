#include "controllers/resourcepoolstatusrequest/views.h"

#include <algorithm>
#include <cstdio>

namespace kcm::controllers::resourcepoolstatusrequest {
namespace {

using api::resource::v1::DeviceCounterConsumption;
using api::resource::v1alpha3::PartitionTypeStatus;
using api::resource::v1alpha3::ShareableCapacityStatus;
using api::resource::v1alpha3::ShareableSummaryStatus;

// Go's %q for the texts in validation errors (names and attribute values: printable UTF-8 stays as is).
std::string goQuote(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\a': o += "\\a"; break;
      case '\b': o += "\\b"; break;
      case '\f': o += "\\f"; break;
      case '\n': o += "\\n"; break;
      case '\r': o += "\\r"; break;
      case '\t': o += "\\t"; break;
      case '\v': o += "\\v"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          o += buf;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o + "\"";
}

std::string poolRef(const PoolViewInput& in) { return in.driver + "/" + in.poolName; }

// deviceFits: every counter the device consumes is there with at least that much left.
bool deviceFits(const std::vector<DeviceCounterConsumption>& cost, const Counters& avail) {
  for (const auto& cc : cost) {
    auto set = avail.find(cc.counterSet);
    for (const auto& [name, c] : cc.counters) {
      if (set == avail.end()) return false;
      auto have = set->second.find(name);
      if (have == set->second.end() || have->second.cmp(quota::Amount::of(c.value)) < 0) return false;
    }
  }
  return true;
}

// deductCounters: the device's consumption taken from avail (counters avail does not have are skipped).
void deductCounters(const std::vector<DeviceCounterConsumption>& cost, Counters& avail) {
  for (const auto& cc : cost) {
    auto set = avail.find(cc.counterSet);
    if (set == avail.end()) continue;
    for (const auto& [name, c] : cc.counters) {
      auto have = set->second.find(name);
      if (have != set->second.end()) have->second.sub(quota::Amount::of(c.value));
    }
  }
}

// availableCounters: the pool's counters less what in-use devices consume (once per device, not per claim).
Counters availableCounters(const PoolViewInput& in) {
  Counters avail;
  for (const auto& cs : in.sharedCounters) {
    auto& m = avail[cs.name];
    for (const auto& [name, c] : cs.counters) m[name] = quota::Amount::of(c.value);
  }
  for (const auto& d : in.devices)
    if (in.inUse.count(d.name)) deductCounters(d.consumesCounters, avail);
  return avail;
}

// computePartitionSummary: per (attribute, type), the partitionable devices and how many unused ones still fit
// the headroom left by the in-use ones (each type measured on its own against that headroom).
std::vector<PartitionTypeStatus> computePartitionSummary(const PoolViewInput& in, std::string& err) {
  struct Group {
    int32_t total = 0;
    std::vector<const DeviceRecord*> fresh;
    std::string costKey;
  };
  std::map<std::pair<std::string, std::string>, Group> groups;  // ordered: the result's sort order
  for (const auto& d : in.devices) {
    if (d.consumesCounters.empty() || d.partitionAttr.empty()) continue;
    if (!d.hasPartitionType) {
      err = std::string(kPrefixPartitionTypeMissing) + " device " + goQuote(d.name) + " in pool " + poolRef(in) +
            " does not carry partition type attribute " + goQuote(d.partitionAttr);
      return {};
    }
    auto& g = groups[{d.partitionAttr, d.partitionType}];
    const std::string key = consumesCountersKey(d.consumesCounters);
    if (g.total == 0) {
      g.costKey = key;
    } else if (key != g.costKey) {
      err = std::string(kPrefixPartitionCostMismatch) + " devices of partition type " + goQuote(d.partitionType) +
            " in pool " + poolRef(in) + " consume different counters";
      return {};
    }
    ++g.total;
    if (!in.inUse.count(d.name)) g.fresh.push_back(&d);
  }
  const Counters baseline = availableCounters(in);
  std::vector<PartitionTypeStatus> out;
  for (const auto& [k, g] : groups) {
    Counters avail = baseline;
    int32_t allocatable = 0;
    for (const DeviceRecord* d : g.fresh) {
      if (!deviceFits(d->consumesCounters, avail)) continue;
      ++allocatable;
      deductCounters(d->consumesCounters, avail);
    }
    PartitionTypeStatus p;
    p.attribute = k.first, p.type = k.second, p.total = g.total, p.allocatable = allocatable;
    out.push_back(std::move(p));
  }
  if (out.size() > kMaxStatusListItems) {
    err = std::string(kPrefixPartitionSummaryOverCap) + " pool " + poolRef(in) + " has " +
          std::to_string(out.size()) + " partition types, exceeding the maximum of " +
          std::to_string(kMaxStatusListItems);
    return {};
  }
  return out;
}

// computeShareableSummary: nullopt when the pool has no device with allowMultipleAllocations.
std::optional<ShareableSummaryStatus> computeShareableSummary(const PoolViewInput& in, std::string& err) {
  int32_t full = 0, partial = 0;
  std::map<std::string, quota::Amount> total;  // sorted by capacity key, as the result is
  bool any = false;
  for (const auto& d : in.devices) {
    if (!d.allowMultiple) continue;
    any = true;
    ++(in.inUse.count(d.name) ? partial : full);
    for (const auto& [key, c] : d.capacity) total[key].add(quota::Amount::of(c.value));
  }
  if (!any) return std::nullopt;
  ShareableSummaryStatus s;
  for (const auto& [key, t] : total) {
    quota::Amount consumed;
    if (auto it = in.consumedCapacity.find(key); it != in.consumedCapacity.end()) consumed = it->second;
    // nonNegativeDiff: total - consumed, never below zero (keeping total's format).
    quota::Amount avail = t;
    avail.sub(consumed);
    if (avail.cmp(quota::Amount()) < 0) avail = quota::Amount::zero(t.format());
    ShareableCapacityStatus c;
    c.name = key, c.total = t.toQuantity(), c.consumed = consumed.toQuantity(), c.available = avail.toQuantity();
    s.capacity.push_back(std::move(c));
  }
  if (s.capacity.size() > kMaxStatusListItems) {
    err = std::string(kPrefixShareableOverCap) + " pool " + poolRef(in) + " has " +
          std::to_string(s.capacity.size()) + " shareable capacity keys, exceeding the maximum of " +
          std::to_string(kMaxStatusListItems);
    return std::nullopt;
  }
  s.fullyAvailableDevices = full, s.partiallyAvailableDevices = partial;
  return s;
}

}  // namespace

std::vector<DeviceRecord> sliceDeviceRecords(const api::resource::v1::ResourceSlice& slice) {
  const std::string sliceAttr = slice.spec.partitionTypeAttribute.value_or("");
  std::vector<DeviceRecord> out;
  out.reserve(slice.spec.devices.size());
  for (const auto& d : slice.spec.devices) {
    DeviceRecord r;
    r.name = d.name, r.partitionAttr = sliceAttr, r.consumesCounters = d.consumesCounters;
    r.allowMultiple = d.allowMultipleAllocations.value_or(false);
    r.capacity = d.capacity, r.attributes = d.attributes;
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<std::string> resolvePartitionType(const std::string& driver,
                                                const api::StringMap<api::resource::v1::DeviceAttribute>& attrs,
                                                const std::string& fqn) {
  auto it = attrs.find(fqn);
  if (it == attrs.end() && fqn.starts_with(driver + "/")) it = attrs.find(fqn.substr(driver.size() + 1));
  if (it == attrs.end() || !it->second.string) return std::nullopt;
  return *it->second.string;
}

void resolveDevicePartitions(const std::optional<std::string>& requestAttr, PoolViewInput& in) {
  const bool poolDeclares =
      std::any_of(in.devices.begin(), in.devices.end(), [](const auto& d) { return !d.partitionAttr.empty(); });
  for (auto& d : in.devices) {
    if (d.partitionAttr.empty()) {
      if (poolDeclares || !requestAttr) continue;
      d.partitionAttr = *requestAttr;
    }
    auto t = resolvePartitionType(in.driver, d.attributes, d.partitionAttr);
    d.hasPartitionType = t.has_value();
    d.partitionType = t.value_or("");
  }
}

PoolViews computePoolViews(const PoolViewInput& in) {
  PoolViews v;
  const bool grouped =
      std::any_of(in.devices.begin(), in.devices.end(), [](const auto& d) { return !d.partitionAttr.empty(); });
  if (grouped && in.sharedCounters.empty()) {
    v.validationError = std::string(kPrefixPartitionTypeMissing) + " pool " + poolRef(in) +
                        " declares partitionTypeAttribute but publishes no sharedCounters";
  } else if (grouped) {
    v.partitionSummary = computePartitionSummary(in, v.validationError);
  }
  std::string shareErr;
  auto shareable = computeShareableSummary(in, shareErr);
  if (v.validationError.empty()) v.validationError = shareErr;
  if (shareErr.empty()) v.shareable = std::move(shareable);
  if (!v.validationError.empty()) v.partitionSummary.clear();
  return v;
}

std::string consumesCountersKey(const std::vector<DeviceCounterConsumption>& cost) {
  std::vector<std::string> parts;
  for (const auto& cc : cost)
    for (const auto& [name, c] : cc.counters)
      parts.push_back(cc.counterSet + "/" + name + "=" + quota::Amount::of(c.value).canonical());
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? "," : "") + parts[i];
  return out;
}

}  // namespace kcm::controllers::resourcepoolstatusrequest
