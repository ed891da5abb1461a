#include "controllers/util/node_util.h"

#include <chrono>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "api/gen/core_v1_codec.h"
#include "api/gen/core_v1_json.h"
#include "api/support/wall_time.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/util/taints.h"

namespace kcm::controllers {

using api::core::v1::Node;
using api::core::v1::Pod;
using api::core::v1::Taint;

namespace {

// upstream UpdateTaintBackoff: 5 steps of 100 ms with jitter 1.0.
constexpr int kTaintUpdateSteps = 5;

void sleepJittered() {
  thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<int> ms(100, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms(rng)));
}

Status patchNodeTaints(client::RestClient& c, const Node& node, const std::vector<Taint>& taints) {
  std::string body = R"({"metadata":{"resourceVersion":)" + nlohmann::json(node.metadata.resourceVersion).dump() +
                     R"(},"spec":{"taints":)";
  if (taints.empty()) {
    body += "null";
  } else {
    body += "[";
    for (size_t i = 0; i < taints.size(); ++i) body += (i ? "," : "") + api::encodeJson(taints[i]);
    body += "]";
  }
  body += "}}";
  return client::patch<Node>(c, "", node.metadata.name, client::PatchType::kMerge, body).status();
}

// Reads the node (the cached copy first, live after a conflict), applies `edit`; writes when edit says so.
template <class Edit>
Status retryTaintUpdate(client::RestClient& c, const std::string& nodeName, std::shared_ptr<const Node> cached,
                        Edit edit) {
  Status last;
  for (int step = 0; step < kTaintUpdateSteps; ++step) {
    std::shared_ptr<const Node> node = step == 0 ? cached : nullptr;
    if (!node) {
      auto live = client::get<Node>(c, "", nodeName);
      if (!live.ok()) return live.status();
      node = std::make_shared<const Node>(std::move(live).value());
    }
    std::vector<Taint> taints = node->spec.taints;
    if (!edit(taints)) return Status::Ok();
    last = patchNodeTaints(c, *node, taints);
    if (last.code() != StatusCode::kConflict) return last;
    sleepJittered();
  }
  return last;
}

}  // namespace

Status addOrUpdateTaintOnNode(client::RestClient& c, const std::string& nodeName, std::shared_ptr<const Node> cached,
                              const std::vector<Taint>& toAdd) {
  if (toAdd.empty()) return Status::Ok();
  return retryTaintUpdate(c, nodeName, std::move(cached), [&](std::vector<Taint>& taints) {
    bool updated = false;
    for (const auto& t : toAdd) {
      bool found = false;
      for (auto& existing : taints) {
        if (!matchTaint(existing, t)) continue;
        found = true;
        if (existing.value != t.value || existing.timeAdded != t.timeAdded) {
          existing = t;
          updated = true;
        }
      }
      if (!found) {
        taints.push_back(t);
        updated = true;
      }
    }
    return updated;
  });
}

Status removeTaintOffNode(client::RestClient& c, const std::string& nodeName, std::shared_ptr<const Node> cached,
                          const std::vector<Taint>& toRemove) {
  if (toRemove.empty()) return Status::Ok();
  if (cached) {
    bool any = false;
    for (const auto& t : toRemove) any = any || taintExists(cached->spec.taints, t);
    if (!any) return Status::Ok();
  }
  return retryTaintUpdate(c, nodeName, std::move(cached), [&](std::vector<Taint>& taints) {
    size_t before = taints.size();
    std::erase_if(taints, [&](const Taint& t) { return taintExists(toRemove, t); });
    return taints.size() != before;
  });
}

bool swapNodeControllerTaint(client::RestClient& c, std::vector<Taint> toAdd, const std::vector<Taint>& toRemove,
                             std::shared_ptr<const Node> node, const Clock& clock) {
  const api::Time now = api::timeNow(clock);
  for (auto& t : toAdd) t.timeAdded = now;
  const std::string& name = node->metadata.name;
  if (Status s = addOrUpdateTaintOnNode(c, name, node, toAdd); !s.ok()) {
    KLOG_ERROR("\"unable to taint unresponsive Node\" err=\"" + name + ": " + s.message() + "\"");
    return false;
  }
  if (Status s = removeTaintOffNode(c, name, node, toRemove); !s.ok()) {
    KLOG_ERROR("\"unable to remove unneeded taint from unresponsive Node\" err=\"" + name + ": " + s.message() + "\"");
    return false;
  }
  return true;
}

const api::core::v1::NodeCondition* getNodeCondition(const api::core::v1::NodeStatus& s, const std::string& type) {
  for (const auto& c : s.conditions)
    if (c.type == type) return &c;
  return nullptr;
}

bool updatePodCondition(api::core::v1::PodStatus& status, api::core::v1::PodCondition cond, api::Time now) {
  cond.lastTransitionTime = now;
  for (auto& old : status.conditions) {
    if (old.type != cond.type) continue;
    if (cond.status == old.status) cond.lastTransitionTime = old.lastTransitionTime;
    bool equal = cond.status == old.status && cond.reason == old.reason && cond.message == old.message &&
                 cond.lastProbeTime == old.lastProbeTime && cond.lastTransitionTime == old.lastTransitionTime;
    old = std::move(cond);
    return !equal;
  }
  status.conditions.push_back(std::move(cond));
  return true;
}

Status markPodsNotReady(client::RestClient& c, const client::EventRecorder& recorder,
                        const std::vector<std::shared_ptr<const Pod>>& pods, const std::string& nodeName,
                        const Clock& clock) {
  KLOG_V(2, "\"Update ready status of pods on node\" node=\"" + nodeName + "\"");
  Status first;
  for (const auto& p : pods) {
    if (p->spec.nodeName != nodeName) continue;
    for (const auto& cond : p->status.conditions) {
      if (cond.type != "Ready") continue;
      Pod pod = *p;
      auto updated = cond;
      updated.status = "False";
      if (!updatePodCondition(pod.status, updated, api::timeNow(clock))) break;
      KLOG_V(2, "\"Updating ready status of pod to false\" pod=\"" + pod.metadata.namespace_ + "/" + pod.metadata.name
                                                                + "\"");
      auto r = client::updateStatus(c, pod);
      if (!r.ok()) {
        if (r.status().code() == StatusCode::kNotFound) continue;
        KLOG_INFO("\"Failed to update status for pod\" pod=\"" + pod.metadata.namespace_ + "/" + pod.metadata.name
                                                           + "\" err=\"" + r.status().message() + "\"");
        if (first.ok()) first = r.status();
      }
      recorder.event({"Pod", "v1", pod.metadata.namespace_, pod.metadata.name, pod.metadata.uid, "", ""},
                     client::kEventTypeWarning, "NodeNotReady", "Node is not ready");
      break;
    }
  }
  return first;
}

void recordNodeEvent(const client::EventRecorder& recorder, const std::string& nodeName, const std::string& nodeUID,
                     const std::string& type, const std::string& reason, const std::string& message) {
  KLOG_V(2, "\"Recording event message for node\" event=\"" + message + "\" node=\"" + nodeName + "\"");
  recorder.event({"Node", "v1", "", nodeName, nodeUID, "", ""}, type, reason,
                 "Node " + nodeName + " event: " + message);
}

void recordNodeStatusChange(const client::EventRecorder& recorder, const Node& node, const std::string& newStatus) {
  KLOG_V(2, "\"Recording status change event message for node\" status=\"" + newStatus + "\" node=\""
                                                                         + node.metadata.name + "\"");
  recorder.event({"Node", "v1", "", node.metadata.name, node.metadata.uid, "", ""}, client::kEventTypeNormal,
                 newStatus, "Node " + node.metadata.name + " status is now: " + newStatus);
}

std::string getZoneKey(const Node& node) {
  const auto& l = node.metadata.labels;
  auto value = [&](const char* k, const char* fallback) -> std::string {
    if (auto it = l.find(k); it != l.end()) return it->second;
    if (auto it = l.find(fallback); it != l.end()) return it->second;
    return "";
  };
  std::string zone = value("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone");
  std::string region = value("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region");
  if (zone.empty() && region.empty()) return "";
  return region + std::string(":\0:", 3) + zone;
}

}  // namespace kcm::controllers
