#pragma once
// device-taint-eviction-controller (upstream pkg/controller/devicetainteviction at the pin; gates
// DynamicResourceAllocation and DRADeviceTaints, both on by default, so it runs by default): pods scheduled with
// allocated ResourceClaims reserved for them are deleted once a NoExecute taint of one of the claims' devices —
// in the device's ResourceSlice or from a matching DeviceTaintRule (gate DRADeviceTaintRules) — is due: its
// timeAdded plus the claim's smallest matching tolerationSeconds (a toleration without seconds: never). Before the
// delete (UID precondition) the pod gets DisruptionTarget=True, reason DeletionByDeviceTaintManager, and a Normal
// DeviceTaintManagerEviction event "Marking for deletion"; an eviction no longer due is cancelled with "Cancelling
// deletion". Each DeviceTaintRule's EvictionInProgress condition is applied (field manager
// device-taint-eviction-controller) when the rule appears or changes and 10 s after its pods change or go:
// PodsPendingEviction/Completed/NotStarted for NoExecute, NoEffect with what NoExecute would do for None,
// OtherEffect otherwise. One queue of pod and rule items, --concurrent-device-taint-eviction-syncs workers;
// metrics device_taint_eviction_controller_pod_deletions_total and _pod_deletion_duration_seconds.
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "api/gen/resource_v1.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/devicetainteviction/eviction_state.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::devicetainteviction {

using PodPtr = std::shared_ptr<const Pod>;

// The UIDs of the last `max` pods deleted (upstream's LRU uidCache of 500).
class UIDCache {
 public:
  explicit UIDCache(size_t max) : max_(max) {}
  void add(const std::string& uid);
  bool has(const std::string& uid) const { return set_.count(uid) > 0; }

 private:
  size_t max_;
  std::deque<std::string> order_;
  std::set<std::string> set_;
};

class Controller {
 public:
  // rules: null when DRADeviceTaintRules is off.
  Controller(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
             informers::SharedInformer<Pod>& pods, informers::SharedInformer<ResourceClaim>& claims,
             informers::SharedInformer<ResourceSlice>& slices, informers::SharedInformer<DeviceTaintRule>* rules,
             informers::SharedInformer<api::resource::v1::DeviceClass>& classes, std::string name,
             Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  // A work item: "pod/<ns>/<name>/<uid>" or "rule/<name>/<uid>".
  runtime::SyncResult sync(const std::string& key);

  // Event handlers (public for tests).
  void handleClaimChange(const ClaimPtr& oldClaim, const ClaimPtr& newClaim);
  void handleRuleChange(const RulePtr& oldRule, const RulePtr& newRule);
  void handleSliceChange(const SlicePtr& oldSlice, const SlicePtr& newSlice);
  void handlePodChange(const PodPtr& oldPod, const PodPtr& newPod);

  runtime::WorkQueue& queue() { return queue_.queue(); }
  // The eviction pending for a pod ("ns/name/uid"), for tests.
  std::optional<Eviction> pendingEviction(const std::string& podRef);

 private:
  runtime::SyncResult maybeDeletePod(const std::string& ns, const std::string& name, const std::string& uid);
  runtime::SyncResult maybeUpdateRuleStatus(const std::string& name, const std::string& uid);
  Status addConditionAndDeletePod(const std::string& ns, const std::string& name, const std::string& uid);
  // Under mu_.
  void recomputeClaims(EvictionState& state, bool handle);
  void handlePods(const ResourceClaim& claim);
  void handlePod(const Pod& pod);
  void evictPod(const Pod& pod, const Eviction& eviction);
  bool cancelWorkWithEvent(const Pod& pod);
  void podEvent(const std::string& ns, const std::string& name, const std::string& uid, const std::string& msg);
  void ruleStatusAfter(const RulePtr& rule);

  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::EventRecorder> recorder_;
  informers::SharedInformer<Pod>& pods_;
  informers::SharedInformer<ResourceClaim>& claims_;
  informers::SharedInformer<ResourceSlice>& slices_;
  informers::SharedInformer<DeviceTaintRule>* rules_;
  informers::SharedInformer<api::resource::v1::DeviceClass>& classes_;
  std::string name_;
  Clock& clock_;

  std::mutex mu_;
  EvictionState state_;
  std::map<std::string, Eviction> deletePodAt_;  // "ns/name/uid"
  UIDCache evictedPods_{500};
  std::map<std::string, int64_t> evictedByRule_;  // rule UID -> pods evicted since start

  runtime::ControllerBase queue_;
  std::vector<informers::Registration> registrations_;
};

}  // namespace kcm::controllers::devicetainteviction
