#include "controllers/podgc/gc_controller.h"

#include <algorithm>
#include <set>

#include "api/gen/core_v1_json.h"
#include "api/support/wall_time.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/util/controller_utils.h"
#include "controllers/util/node_util.h"

namespace kcm::controllers {

using api::core::v1::Node;
using api::core::v1::Pod;

namespace {

// Deletions in flight at once for one pass (upstream starts them all; the client's rate limiter paces them).
constexpr size_t kMaxConcurrentDeletes = 16;

bool isPodTerminated(const Pod& p) {
  const std::string& ph = p.status.phase;
  return ph != "Pending" && ph != "Running" && ph != "Unknown";
}

bool isEvicted(const Pod& p) { return p.status.phase == "Failed" && p.status.reason == "Evicted"; }

bool isNodeReady(const Node& n) {
  for (const auto& c : n.status.conditions)
    if (c.type == "Ready") return c.status == "True";
  return false;
}

}  // namespace

PodGCController::PodGCController(std::shared_ptr<client::RestClient> client, informers::SharedInformer<Pod>& pods,
                                 informers::SharedInformer<Node>& nodes, int terminatedPodThreshold,
                                 Clock::Duration gcCheckPeriod, Clock::Duration quarantineTime, Clock& clock)
    : client_(std::move(client)), clock_(clock), pods_(pods), nodes_(nodes), threshold_(terminatedPodThreshold),
      period_(gcCheckPeriod), quarantine_(quarantineTime) {}

void PodGCController::run(std::stop_token stop) {
  periodic_.start(clock_, period_, stop, [this] { gc(); },
                  [this] { return pods_.hasSynced() && nodes_.hasSynced(); });
}

void PodGCController::gc() {
  auto pods = pods_.store().list();
  if (threshold_ > 0) gcTerminated(pods);
  gcTerminating(pods);
  gcOrphaned(pods);
  gcUnscheduledTerminating(pods);
}

Status PodGCController::markFailedAndDeletePodWithCondition(const Pod& pod,
                                                            std::optional<api::core::v1::PodCondition> condition) {
  KLOG_INFO("\"PodGC is force deleting Pod\" pod=\"" + podKey(pod) + "\"");
  if (pod.status.phase != "Succeeded" && pod.status.phase != "Failed") {
    // Make the pod Failed first: without a kubelet an orphaned pod would stay Running forever.
    api::core::v1::PodStatus status = pod.status;
    status.phase = "Failed";
    // upstream CalculatePodStatusObservedGeneration, with PodObservedGenerationTracking GA (locked on) in v1.37.
    status.observedGeneration = pod.metadata.generation;
    if (condition) (void)updatePodCondition(status, std::move(*condition), api::timeNow(clock_));
    if (auto patch = podStatusPatch(pod.metadata.uid, pod.status, status)) {
      auto r = client::patch<Pod>(*client_, pod.metadata.namespace_, pod.metadata.name,
                                  client::PatchType::kStrategicMerge, *patch, "status");
      if (!r.ok()) return r.status().withContext("failed to patch status for pod " + podKey(pod));
    }
  }
  client::DeleteOptions d;
  d.gracePeriodSeconds = 0;
  Status s = client::remove<Pod>(*client_, pod.metadata.namespace_, pod.metadata.name, d);
  return s.code() == StatusCode::kNotFound ? Status::Ok() : s;
}

void PodGCController::deleteConcurrently(const std::vector<PodPtr>& pods, const char* what) {
  parallelFor(pods.size(), kMaxConcurrentDeletes, [&](size_t i) {
    if (Status s = markFailedAndDeletePod(*pods[i]); !s.ok())
      KLOG_ERROR("\"Failed to delete " + std::string(what) + "\" pod=\"" + podKey(*pods[i]) + "\" err=\"" +
                 s.message() + "\"");
  });
}

void PodGCController::gcTerminated(const std::vector<PodPtr>& pods) {
  std::vector<PodPtr> terminated;
  for (const auto& p : pods)
    if (isPodTerminated(*p)) terminated.push_back(p);
  int deleteCount = static_cast<int>(terminated.size()) - threshold_;
  if (deleteCount <= 0) return;
  KLOG_INFO("\"Garbage collecting pods\" numPods=" + std::to_string(deleteCount));
  std::sort(terminated.begin(), terminated.end(), [](const PodPtr& a, const PodPtr& b) {
    bool ea = isEvicted(*a), eb = isEvicted(*b);
    if (ea != eb) return ea;
    if (a->metadata.creationTimestamp == b->metadata.creationTimestamp) return a->metadata.name < b->metadata.name;
    return a->metadata.creationTimestamp < b->metadata.creationTimestamp;
  });
  terminated.resize(static_cast<size_t>(deleteCount));
  deleteConcurrently(terminated, "terminated pod");
}

void PodGCController::gcTerminating(const std::vector<PodPtr>& pods) {
  std::vector<PodPtr> terminating;
  for (const auto& p : pods) {
    if (!p->metadata.deletionTimestamp) continue;
    auto node = nodes_.store().get(p->spec.nodeName);
    if (!node || isNodeReady(*node)) continue;
    bool outOfService = std::any_of(node->spec.taints.begin(), node->spec.taints.end(),
                                    [](const auto& t) { return t.key == "node.kubernetes.io/out-of-service"; });
    if (outOfService) terminating.push_back(p);
  }
  if (terminating.empty()) return;
  KLOG_V(4, "\"Garbage collecting pods that are terminating on node tainted with node.kubernetes.io/out-of-service\" "
            "numPods=" + std::to_string(terminating.size()));
  deleteConcurrently(terminating, "terminating pod on out-of-service node");
}

void PodGCController::gcOrphaned(const std::vector<PodPtr>& pods) {
  std::set<std::string> existing;
  for (const auto& n : nodes_.store().list()) existing.insert(n->metadata.name);
  auto now = clock_.now();
  for (const auto& p : pods)
    if (!p->spec.nodeName.empty() && !existing.count(p->spec.nodeName)) missingSince_.emplace(p->spec.nodeName, now);
  // Nodes missing from the informer for the quarantine time are checked live before their pods go.
  std::set<std::string> deleted;
  for (auto it = missingSince_.begin(); it != missingSince_.end();) {
    if (existing.count(it->first)) {
      it = missingSince_.erase(it);
      continue;
    }
    if (now - it->second < quarantine_) {
      ++it;
      continue;
    }
    auto live = client::get<Node>(*client_, "", it->first);
    if (!live.ok() && live.status().code() == StatusCode::kNotFound) deleted.insert(it->first);
    it = missingSince_.erase(it);
  }
  for (const auto& p : pods) {
    if (!deleted.count(p->spec.nodeName)) continue;
    KLOG_INFO("\"Found orphaned Pod assigned to the Node, deleting\" pod=\"" + p->metadata.namespace_ + "/" +
              p->metadata.name + "\" node=\"" + p->spec.nodeName + "\"");
    api::core::v1::PodCondition c;
    c.type = "DisruptionTarget";
    // upstream CalculatePodConditionObservedGeneration with PodObservedGenerationTracking GA: the generation.
    c.observedGeneration = p->metadata.generation;
    c.status = "True";
    c.reason = "DeletionByPodGC";
    c.message = "PodGC: node no longer exists";
    if (Status s = markFailedAndDeletePodWithCondition(*p, std::move(c)); !s.ok())
      KLOG_ERROR("\"Failed to delete orphaned pod\" pod=\"" + podKey(*p) + "\" err=\"" + s.message() + "\"");
    else
      KLOG_INFO("\"Forced deletion of orphaned Pod succeeded\" pod=\"" + podKey(*p) + "\"");
  }
}

void PodGCController::gcUnscheduledTerminating(const std::vector<PodPtr>& pods) {
  for (const auto& p : pods) {
    if (!p->metadata.deletionTimestamp || !p->spec.nodeName.empty()) continue;
    if (Status s = markFailedAndDeletePod(*p); !s.ok())
      KLOG_ERROR("\"Failed to delete unscheduled terminating pod\" pod=\"" + podKey(*p) + "\" err=\"" +
                 s.message() + "\"");
    else
      KLOG_INFO("\"Forced deletion of unscheduled terminating Pod succeeded\" pod=\"" + podKey(*p) + "\"");
  }
}

}  // namespace kcm::controllers
