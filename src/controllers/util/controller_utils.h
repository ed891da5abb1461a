#pragma once
// Helpers shared by the workload controllers (upstream pkg/controller/controller_utils.go and
// controller_ref_manager.go, pkg/api/v1/pod): pod predicates, the pod control that creates/deletes pods with
// events, the controller index, ranking of pods for scale-down, slow-start batches, and the controller-ref
// manager that adopts matching orphans (after a live re-check of the owner) and releases pods that stopped
// matching.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "api/gen/meta_v1.h"
#include "base/clock.h"
#include "base/status.h"
#include "client/events.h"
#include "client/rest_client.h"

namespace kcm::controllers {

using PodPtr = std::shared_ptr<const api::core::v1::Pod>;
using Labels = api::StringMap<api::String>;
using LabelMatcher = std::function<bool(const Labels&)>;

inline constexpr int kSlowStartInitialBatchSize = 1;
inline constexpr const char* kPodControllerIndex = "podController";
inline constexpr const char* kPodDeletionCost = "controller.kubernetes.io/pod-deletion-cost";

// Wall time at full precision (Clock::wallNow). Stamps on the wire (metav1.Time) keep whole seconds, but upstream
// compares them with an unrounded time.Now(); rounding `now` down delays availability by up to a second and
// shifts the scale-down ranking's logarithmic buckets.
using WallTime = std::chrono::system_clock::time_point;
WallTime toWallTime(api::Time t);  // t must not be zero

// --- pods ---
bool isPodActive(const api::core::v1::Pod& p);       // not Succeeded/Failed, not terminating
bool isPodTerminating(const api::core::v1::Pod& p);  // not terminal, deletionTimestamp set
bool isPodReady(const api::core::v1::Pod& p);
const api::core::v1::PodCondition* podReadyCondition(const api::core::v1::Pod& p);
// Ready, and Ready since at least minReadySeconds before `now` (upstream podutil.IsPodAvailable).
bool isPodAvailable(const api::core::v1::Pod& p, int32_t minReadySeconds, WallTime now);
std::string podKey(const api::core::v1::Pod& p);
// upstream FindMinNextPodAvailabilityCheck: how long until the first pod that is Ready but not yet available at
// `lastOwnerStatusEvaluation` (the time the owner's status was computed with) becomes available, measured again
// from the clock's wall time; zero when that moment has passed meanwhile (check at once); nullopt when no pod is
// waiting.
std::optional<Clock::Duration> findMinNextPodAvailabilityCheck(const std::vector<PodPtr>& pods,
                                                               int32_t minReadySeconds,
                                                               WallTime lastOwnerStatusEvaluation, const Clock& clock);

// upstream pkg/util/pod PatchPodStatus's body: the strategic-merge patch from `oldStatus` to `newStatus` (fields
// changed or added, null for fields dropped; conditions merged by type, podIPs/hostIPs by ip,
// resourceClaimStatuses by name, with their $setElementOrder; other lists replaced), carrying the pod's UID as a
// precondition. nullopt when the statuses do not differ (upstream then sends nothing).
std::optional<std::string> podStatusPatch(const std::string& podUID, const api::core::v1::PodStatus& oldStatus,
                                          const api::core::v1::PodStatus& newStatus);

// --- owner references ---
const api::meta::v1::OwnerReference* getControllerOf(const api::meta::v1::ObjectMeta& m);
api::meta::v1::OwnerReference newControllerRef(const api::meta::v1::ObjectMeta& owner, const std::string& apiVersion,
                                               const std::string& kind);
// Index of pods by controller: "<ns>/<kind>/<name>/<uid>", or "<ns>" for orphans (upstream PodControllerIndex).
std::vector<std::string> podControllerIndexKeys(const api::core::v1::Pod& p);
std::string podControllerIndexKey(const std::string& ns, const api::meta::v1::OwnerReference* ref);

// --- scale-down order (upstream ActivePodsWithRanks): unassigned < Pending < Unknown < Running; not ready before
// ready; lower pod-deletion-cost first; more related pods on the same node first; more recently ready, more
// restarts (regular containers, then sidecars), newer first. Ready and creation times compare on a logarithmic
// scale of their age at `now`; without `now` (upstream ActivePods) the later time simply goes first. ---
struct RankedPod {
  PodPtr pod;
  int rank = 0;
};
void sortPodsForDeletion(std::vector<RankedPod>& pods, std::optional<WallTime> now);
// upstream ActivePods (no ranks, no deletion cost): unassigned, then Pending < Unknown < Running, not ready, more
// recently ready, more restarts, newer first.
void sortActivePods(std::vector<PodPtr>& pods);

// --- slow start: calls fn in batches 1, 2, 4, ... up to count; stops at the first batch with an error.
// Returns (successes, first error). Batches run concurrently. ---
std::pair<int, Status> slowStartBatch(int count, int initialBatchSize, const std::function<Status()>& fn);

// --- pod control with events on the owner ---
class PodControl {
 public:
  PodControl(std::shared_ptr<client::RestClient> c, std::shared_ptr<client::EventRecorder> recorder)
      : client_(std::move(c)), recorder_(std::move(recorder)) {}
  // Creates a pod from the template owned by controllerRef ("FailedCreate"/"SuccessfulCreate" events).
  Result<api::core::v1::Pod> createPods(const std::string& ns, const api::core::v1::PodTemplateSpec& tmpl,
                                        const client::ObjectReference& owner,
                                        const api::meta::v1::OwnerReference& controllerRef,
                                        const std::string& generateName = "");
  Status deletePod(const std::string& ns, const std::string& name, const client::ObjectReference& owner);
  Status patchPod(const std::string& ns, const std::string& name, const std::string& strategicPatch);
  client::RestClient& client() { return *client_; }

 private:
  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::EventRecorder> recorder_;
};
// Forbidden because the namespace is terminating (upstream HasStatusCause NamespaceTerminatingCause).
bool isNamespaceTerminating(const Status& s);

// --- controller-ref manager (upstream BaseControllerRefManager): claims objects for an owner ---
// The JSON strategic-merge patches that adopt (add a controller ownerReference) and release (delete ours) an
// object; both carry the object's uid as a precondition.
// `finalizers` (the job controller's tracking finalizer) are added on adoption and removed on release.
std::string adoptPatch(const std::string& apiVersion, const std::string& kind, const api::meta::v1::ObjectMeta& owner,
                       const std::string& objectUID, const std::vector<std::string>& finalizers = {});
std::string releasePatch(const std::string& ownerUID, const std::string& objectUID,
                         const std::vector<std::string>& finalizers = {});

template <class T>
class ControllerRefManager {
 public:
  using Ptr = std::shared_ptr<const T>;
  using PatchFunc = std::function<Status(const std::string& ns, const std::string& name, const std::string& patch)>;
  // canAdopt: a live re-read of the owner that fails when it is gone, replaced or being deleted; called at most
  // once, before the first adoption.
  ControllerRefManager(const api::meta::v1::ObjectMeta& owner, std::string apiVersion, std::string kind,
                       LabelMatcher selector, std::function<Status()> canAdopt, PatchFunc patch,
                       std::vector<std::string> finalizers = {})
      : owner_(owner), apiVersion_(std::move(apiVersion)), kind_(std::move(kind)), selector_(std::move(selector)),
        canAdopt_(std::move(canAdopt)), patch_(std::move(patch)), finalizers_(std::move(finalizers)) {}

  // An extra condition for matching besides the selector (upstream ClaimPods' filters, e.g. the StatefulSet's
  // name prefix): owned objects failing it are released like those the selector stops matching.
  void setFilter(std::function<bool(const T&)> f) { filter_ = std::move(f); }

  // Objects this owner keeps: already owned and matching, plus adopted orphans. Releases owned objects that no
  // longer match. Errors of single objects are collected; the claimed list comes with the first one.
  std::pair<std::vector<Ptr>, Status> claim(const std::vector<Ptr>& objects) {
    std::vector<Ptr> claimed;
    Status first;
    auto note = [&](Status s) {
      if (!s.ok() && first.ok()) first = std::move(s);
    };
    for (const auto& o : objects) {
      const auto& m = o->metadata;
      const bool match = selector_(m.labels) && (!filter_ || filter_(*o));
      if (const api::meta::v1::OwnerReference* ref = getControllerOf(m)) {
        if (ref->uid != owner_.uid) continue;  // someone else's
        if (match) {
          claimed.push_back(o);
        } else if (!owner_.deletionTimestamp) {
          Status s = patch_(m.namespace_, m.name, releasePatch(owner_.uid, m.uid, finalizers_));
          // Gone, or no longer ours (the uid precondition failed): nothing to release.
          if (s.code() != StatusCode::kNotFound && s.code() != StatusCode::kInvalid) note(std::move(s));
        }
        continue;
      }
      if (owner_.deletionTimestamp || !match || m.deletionTimestamp) continue;
      if (!canAdoptResult_) canAdoptResult_ = canAdopt_();
      Status s = canAdoptResult_->ok() ? patch_(m.namespace_, m.name, adoptPatch(apiVersion_, kind_, owner_, m.uid, finalizers_))
                                       : Status(canAdoptResult_->code(), "can't adopt " + m.namespace_ + "/" + m.name +
                                                                             ": " + canAdoptResult_->message());
      if (s.ok()) claimed.push_back(o);
      else if (s.code() != StatusCode::kNotFound) note(std::move(s));
    }
    return {claimed, first};
  }

 private:
  const api::meta::v1::ObjectMeta& owner_;
  std::string apiVersion_, kind_;
  LabelMatcher selector_;
  std::function<Status()> canAdopt_;
  PatchFunc patch_;
  std::vector<std::string> finalizers_;
  std::function<bool(const T&)> filter_;
  std::optional<Status> canAdoptResult_;
};

}  // namespace kcm::controllers
