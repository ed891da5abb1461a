#pragma once
// pod-garbage-collector-controller (upstream pkg/controller/podgc/gc_controller.go), every 20 s:
//  - terminated pods (phase neither Pending, Running nor Unknown) beyond --terminated-pod-gc-threshold are deleted,
//    evicted ones first, then oldest first (name breaks ties);
//  - terminating pods on NotReady nodes tainted node.kubernetes.io/out-of-service are deleted;
//  - pods bound to nodes that no longer exist are deleted after a 40 s quarantine and a live check, with the
//    condition DisruptionTarget (reason DeletionByPodGC) set first;
//  - unscheduled pods that are terminating are deleted.
// A pod not yet terminal is first patched to phase Failed (status.observedGeneration and the condition's = the
// pod's generation, PodObservedGenerationTracking being GA) under a UID precondition; deletes use grace period 0.
// Terminated and out-of-service terminating pods are deleted concurrently (upstream: a goroutine each; here a
// bounded parallelFor on the process executor), orphaned and unscheduled ones one after another, as upstream.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/gen/core_v1.h"
#include "base/clock.h"
#include "base/executor.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"

namespace kcm::controllers {

class PodGCController {
 public:
  PodGCController(std::shared_ptr<client::RestClient> client, informers::SharedInformer<api::core::v1::Pod>& pods,
                  informers::SharedInformer<api::core::v1::Node>& nodes, int terminatedPodThreshold,
                  Clock::Duration gcCheckPeriod = std::chrono::seconds(20),
                  Clock::Duration quarantineTime = std::chrono::seconds(40), Clock& clock = RealClock::get());
  void run(std::stop_token stop);
  void gc();

 private:
  using PodPtr = std::shared_ptr<const api::core::v1::Pod>;
  void gcTerminated(const std::vector<PodPtr>& pods);
  void gcTerminating(const std::vector<PodPtr>& pods);
  void gcOrphaned(const std::vector<PodPtr>& pods);
  void gcUnscheduledTerminating(const std::vector<PodPtr>& pods);
  Status markFailedAndDeletePod(const api::core::v1::Pod& pod) { return markFailedAndDeletePodWithCondition(pod, {}); }
  Status markFailedAndDeletePodWithCondition(const api::core::v1::Pod& pod,
                                             std::optional<api::core::v1::PodCondition> condition);
  // Runs markFailedAndDeletePod on every pod at once (bounded), logging failures with `what`.
  void deleteConcurrently(const std::vector<PodPtr>& pods, const char* what);

  std::shared_ptr<client::RestClient> client_;
  Clock& clock_;  // the gc period, the quarantine, condition timestamps
  informers::SharedInformer<api::core::v1::Pod>& pods_;
  informers::SharedInformer<api::core::v1::Node>& nodes_;
  int threshold_;
  Clock::Duration period_, quarantine_;
  std::map<std::string, Clock::TimePoint> missingSince_;  // node name -> first seen missing (gc thread only)
  Periodic periodic_;  // last: stopped before the rest goes
};

}  // namespace kcm::controllers
