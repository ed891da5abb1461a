#include "controllers/podgc/gc_controller.h"

#include <algorithm>
#include <set>

#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"

namespace kcm::controllers {

using api::core::v1::Node;
using api::core::v1::Pod;

namespace {

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
                                 Clock::Duration gcCheckPeriod, Clock::Duration quarantineTime)
    : client_(std::move(client)), pods_(pods), nodes_(nodes), threshold_(terminatedPodThreshold),
      period_(gcCheckPeriod), quarantine_(quarantineTime) {}

void PodGCController::run(std::stop_token stop) {
  periodic_.start(RealClock::get(), period_, stop, [this] { gc(); },
                  [this] { return pods_.hasSynced() && nodes_.hasSynced(); });
}

void PodGCController::gc() {
  auto pods = pods_.store().list();
  if (threshold_ > 0) gcTerminated(pods);
  gcTerminating(pods);
  gcOrphaned(pods);
  gcUnscheduledTerminating(pods);
}

Status PodGCController::markFailedAndDeletePod(const Pod& pod, bool withDisruptionCondition) {
  const std::string ref = pod.metadata.namespace_ + "/" + pod.metadata.name;
  KLOG_INFO("\"PodGC is force deleting Pod\" pod=\"" + ref + "\"");
  if (pod.status.phase != "Succeeded" && pod.status.phase != "Failed") {
    // Make the pod Failed first: without a kubelet an orphaned pod would stay Running forever.
    std::string patch = R"({"status":{"phase":"Failed")";
    if (withDisruptionCondition)
      patch += R"(,"conditions":[{"type":"DisruptionTarget","status":"True","reason":"DeletionByPodGC",)"
               R"("message":"PodGC: node no longer exists","lastTransitionTime":")" +
               api::Time::now().rfc3339() + R"("}])";
    patch += R"(}})";
    auto r = client::patch<Pod>(*client_, pod.metadata.namespace_, pod.metadata.name, client::PatchType::kStrategicMerge,
                                patch, "status");
    if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
  }
  client::DeleteOptions d;
  d.gracePeriodSeconds = 0;
  Status s = client::remove<Pod>(*client_, pod.metadata.namespace_, pod.metadata.name, d);
  return s.code() == StatusCode::kNotFound ? Status::Ok() : s;
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
  for (int i = 0; i < deleteCount; ++i)
    if (Status s = markFailedAndDeletePod(*terminated[i], false); !s.ok())
      KLOG_ERROR("\"Failed to delete terminated pod\" err=\"" + s.message() + "\"");
}

void PodGCController::gcTerminating(const std::vector<PodPtr>& pods) {
  for (const auto& p : pods) {
    if (!p->metadata.deletionTimestamp) continue;
    auto node = nodes_.store().get(p->spec.nodeName);
    if (!node || isNodeReady(*node)) continue;
    bool outOfService = std::any_of(node->spec.taints.begin(), node->spec.taints.end(),
                                    [](const auto& t) { return t.key == "node.kubernetes.io/out-of-service"; });
    if (outOfService)
      if (Status s = markFailedAndDeletePod(*p, false); !s.ok())
        KLOG_ERROR("\"Failed to delete terminating pod on out-of-service node\" err=\"" + s.message() + "\"");
  }
}

void PodGCController::gcOrphaned(const std::vector<PodPtr>& pods) {
  std::set<std::string> existing;
  for (const auto& n : nodes_.store().list()) existing.insert(n->metadata.name);
  auto now = RealClock::get().now();
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
    if (Status s = markFailedAndDeletePod(*p, true); !s.ok())
      KLOG_ERROR("\"Failed to delete orphaned pod\" err=\"" + s.message() + "\"");
  }
}

void PodGCController::gcUnscheduledTerminating(const std::vector<PodPtr>& pods) {
  for (const auto& p : pods) {
    if (!p->metadata.deletionTimestamp || !p->spec.nodeName.empty()) continue;
    if (Status s = markFailedAndDeletePod(*p, false); !s.ok())
      KLOG_ERROR("\"Failed to delete unscheduled terminating pod\" err=\"" + s.message() + "\"");
  }
}

}  // namespace kcm::controllers
