#pragma once
// The advanced per-pool views of resourcepoolstatusrequest-controller (upstream
// pkg/controller/resourcepoolstatusrequest/views.go at the pin): partitionSummary (partitionable devices grouped by
// their partition type attribute, with how many more of each type still fit in the pool's shared counters) and
// shareableSummary (devices with allowMultipleAllocations: fully/partially available and capacity totals). A
// structural problem is reported as the pool's validationError, with a machine-readable prefix.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/gen/resource_v1.h"
#include "api/gen/resource_v1alpha3.h"
#include "quota/resources.h"

namespace kcm::controllers::resourcepoolstatusrequest {

// The status lists' +k8s:maxItems=32: a view over it is an error, not truncated.
inline constexpr size_t kMaxStatusListItems = 32;

// validationError prefixes; only the first is transient (the request is retried on it).
inline constexpr const char* kPrefixPoolIncomplete = "PoolIncomplete:";
inline constexpr const char* kPrefixPartitionTypeMissing = "PartitionTypeMissing:";
inline constexpr const char* kPrefixPartitionCostMismatch = "PartitionCostMismatch:";
inline constexpr const char* kPrefixPartitionSummaryOverCap = "PartitionSummaryOverCap:";
inline constexpr const char* kPrefixShareableOverCap = "ShareableSummaryOverCap:";

// What the views read of one device.
struct DeviceRecord {
  std::string name;
  // The grouping attribute: the device's slice's partitionTypeAttribute, else the request's default (when no slice
  // of the pool declares one); empty when neither names one.
  std::string partitionAttr;
  std::string partitionType;  // the device's string value of partitionAttr
  bool hasPartitionType = false;
  std::vector<api::resource::v1::DeviceCounterConsumption> consumesCounters;
  bool allowMultiple = false;
  api::StringMap<api::resource::v1::DeviceCapacity> capacity;
  api::StringMap<api::resource::v1::DeviceAttribute> attributes;
};

// One record per device of the slice, each seeded with the slice's partitionTypeAttribute.
std::vector<DeviceRecord> sliceDeviceRecords(const api::resource::v1::ResourceSlice& slice);

// The string value of attribute `fqn` on a device; an attribute of the driver's own domain may also be declared
// without it (the qualified form wins). nullopt when absent or not a string.
std::optional<std::string> resolvePartitionType(const std::string& driver,
                                                const api::StringMap<api::resource::v1::DeviceAttribute>& attrs,
                                                const std::string& fqn);

using Counters = std::map<std::string, std::map<std::string, quota::Amount>>;  // counter set -> counter -> value

struct PoolViewInput {
  std::string driver, poolName;
  std::vector<DeviceRecord> devices;
  std::vector<api::resource::v1::CounterSet> sharedCounters;  // of every slice of the pool
  std::set<std::string> inUse;                                // devices allocated to a claim (admin access aside)
  std::map<std::string, quota::Amount> consumedCapacity;      // capacity key -> summed over those claims
};

// Resolves each device's grouping attribute and partition type (the request's default applies only when no slice
// of the pool declares an attribute).
void resolveDevicePartitions(const std::optional<std::string>& requestAttr, PoolViewInput& in);

struct PoolViews {
  std::vector<api::resource::v1alpha3::PartitionTypeStatus> partitionSummary;
  std::optional<api::resource::v1alpha3::ShareableSummaryStatus> shareable;
  std::string validationError;  // the first structural problem; the partition view is then dropped
};
PoolViews computePoolViews(const PoolViewInput& in);

// Exposed for tests.
std::string consumesCountersKey(const std::vector<api::resource::v1::DeviceCounterConsumption>& cost);

}  // namespace kcm::controllers::resourcepoolstatusrequest
