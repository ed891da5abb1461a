#pragma once
// What device-taint-eviction-controller knows and computes (upstream pkg/controller/devicetainteviction's pools,
// trackedTaint, claimEvictionTime, podEvictionTime, countPendingPods, countTaintedDevices): the ResourceSlices by
// pool (only a pool's newest generation counts), the DeviceTaintRules with effect NoExecute, the allocated
// ResourceClaims with the moment their devices' NoExecute taints (those of the slice's device and of matching
// rules) evict their consumers — the taint's timeAdded, plus the smallest tolerationSeconds of the claim's
// tolerations for it; a toleration without seconds tolerates it for good.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/gen/core_v1.h"
#include "api/gen/resource_v1.h"

namespace kcm::controllers::devicetainteviction {

using api::core::v1::Pod;
using api::resource::v1::DeviceTaint;
using api::resource::v1::DeviceTaintRule;
using api::resource::v1::ResourceClaim;
using api::resource::v1::ResourceSlice;
using RulePtr = std::shared_ptr<const DeviceTaintRule>;
using SlicePtr = std::shared_ptr<const ResourceSlice>;
using ClaimPtr = std::shared_ptr<const ResourceClaim>;

inline constexpr const char* kEffectNoExecute = "NoExecute";
inline constexpr const char* kEffectNone = "None";

// One NoExecute taint: a DeviceTaintRule's, or taint #taintIndex of a device in a ResourceSlice.
struct TrackedTaint {
  RulePtr rule;
  SlicePtr slice;
  std::string deviceName;
  int taintIndex = 0;
  DeviceTaint deviceTaint() const;
  // upstream trackedTaint.Compare: rules first (by name), then slices by driver, pool, device, taint index.
  int compare(const TrackedTaint& b) const;
  // Same objects (as upstream's struct equality of pointers) and position.
  bool operator==(const TrackedTaint& b) const {
    return rule == b.rule && slice == b.slice && deviceName == b.deviceName && taintIndex == b.taintIndex;
  }
  std::string toString() const;
};

struct Eviction {
  std::optional<int64_t> when;  // unix seconds; unset: a taint without timeAdded
  std::vector<TrackedTaint> reason;  // sorted by compare
  bool operator==(const Eviction& b) const { return when == b.when && reason == b.reason; }
  std::string toString() const;
};

using PoolID = std::pair<std::string, std::string>;  // driver, pool

struct Pool {
  std::map<std::string, SlicePtr> slices;
  int64_t maxGeneration = INT64_MIN;
  void addSlice(const SlicePtr& s);
  void removeSlice(const SlicePtr& s);
  // (device name, taint) of every NoExecute taint in the newest generation, sorted by device name.
  std::vector<std::pair<std::string, DeviceTaint>> taintedDevices() const;
  // The device of that name in the newest generation (with its slice), or nulls.
  std::pair<SlicePtr, const api::resource::v1::Device*> device(const std::string& name) const;
};

struct AllocatedClaim {
  ClaimPtr claim;
  std::optional<Eviction> eviction;
};

// ruleMatchesDevice: the rule's selector (which must be set) names this driver/pool/device or leaves it open.
bool ruleMatchesDevice(const DeviceTaintRule& rule, const std::string& driver, const std::string& pool,
                       const std::string& device);
// resourceclaim.ToleratesTaint.
bool toleratesTaint(const api::resource::v1::DeviceToleration& t, const DeviceTaint& taint);

// The controller's model, guarded by its owner.
struct EvictionState {
  std::map<PoolID, Pool> pools;
  std::map<std::string, RulePtr> evictingRules;          // by name, effect NoExecute
  std::map<std::string, AllocatedClaim> allocatedClaims;  // "ns/name"

  std::optional<Eviction> claimEvictionTime(const ResourceClaim& claim) const;
  // The pod's eviction: the earliest of its reserved, allocated claims', with all their reasons. Unscheduled pods
  // and pods whose claims are not reserved for them have none.
  std::optional<Eviction> podEvictionTime(const Pod& pod) const;
  // countPendingPods: pods (not being deleted) whose eviction names the rule, and their namespaces.
  std::pair<int64_t, int64_t> countPendingPods(const DeviceTaintRule& rule,
                                               const std::vector<std::shared_ptr<const Pod>>& pods) const;
  // countTaintedDevices: devices of the newest slices the rule selects, and allocated devices it selects.
  std::pair<int64_t, int64_t> countTaintedDevices(const DeviceTaintRule& rule) const;
};

}  // namespace kcm::controllers::devicetainteviction
