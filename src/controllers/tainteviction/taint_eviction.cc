#include "controllers/tainteviction/taint_eviction.h"

#include <functional>

#include "api/gen/core_v1_json.h"
#include "api/support/wall_time.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"
#include "controllers/util/controller_utils.h"
#include "controllers/util/node_util.h"
#include "controllers/util/taints.h"
#include "informers/store.h"

namespace kcm::controllers {

using api::core::v1::Taint;
using api::core::v1::Toleration;

namespace {
constexpr int kUpdateWorkerSize = 8;
constexpr int kRetries = 5;
constexpr const char* kPodNodeNameIndex = "spec.nodeName";

std::vector<Taint> noExecuteTaints(const std::vector<Taint>& taints) {
  std::vector<Taint> out;
  for (const auto& t : taints)
    if (t.effect == kTaintEffectNoExecute) out.push_back(t);
  return out;
}

bool sameTolerations(const std::vector<Toleration>& a, const std::vector<Toleration>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].key != b[i].key || a[i].operator_ != b[i].operator_ || a[i].value != b[i].value ||
        a[i].effect != b[i].effect || a[i].tolerationSeconds != b[i].tolerationSeconds)
      return false;
  return true;
}

// Plain (label-less) metrics, shown from the controller's construction as upstream registers them in New.
metrics::Counter& podDeletionsTotal() {
  static auto& c = metrics::Registry::global().counter("taint_eviction_controller_pod_deletions_total",
                                                       "Total number of Pods deleted by TaintEvictionController "
                                                       "since its start.");
  return c;
}
// Observed in seconds (upstream multiplies the elapsed Duration by time.Second, so its values land in +Inf;
// docs/differential.md lists this as a deliberate difference).
metrics::Histogram& podDeletionDuration() {
  static auto& h = metrics::Registry::global().histogram(
      "taint_eviction_controller_pod_deletion_duration_seconds",
      "Latency, in seconds, between the time when a taint effect has been activated for the Pod and its deletion "
      "via TaintEvictionController.",
      {0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 120, 180, 240});
  return h;
}
}  // namespace

TaintEvictionController::TaintEvictionController(std::shared_ptr<client::RestClient> client,
                                                 std::shared_ptr<client::EventRecorder> recorder,
                                                 informers::SharedInformer<Pod>& pods,
                                                 informers::SharedInformer<Node>& nodes, std::string name,
                                                 bool comparisonOperators)
    : client_(std::move(client)), recorder_(std::move(recorder)), pods_(pods), nodes_(nodes), name_(std::move(name)),
      comparisonOperators_(comparisonOperators) {
  podDeletionsTotal();
  podDeletionDuration();
  for (int i = 0; i < kUpdateWorkerSize; ++i) shards_.push_back(std::make_unique<Shard>());
  evictionQueue_ = std::make_unique<TimedWorkerQueue>(
      [this](const std::string& key, Clock::TimePoint fireAt) { return deletePod(key, fireAt); });
  pods_.store().addIndexer(kPodNodeNameIndex, [](const Pod& p) {
    return p.spec.nodeName.empty() ? std::vector<std::string>{} : std::vector<std::string>{p.spec.nodeName};
  });

  informers::EventHandler<Pod> ph;
  auto podUpdated = [this](const Pod* oldPod, const Pod* newPod) {
    if (oldPod && newPod && sameTolerations(oldPod->spec.tolerations, newPod->spec.tolerations) &&
        oldPod->spec.nodeName == newPod->spec.nodeName)
      return;
    const Pod* p = newPod ? newPod : oldPod;
    enqueue(Item{false, p->spec.nodeName, p->metadata.namespace_, p->metadata.name});
  };
  ph.onAdd = [podUpdated](const auto& p) { podUpdated(nullptr, p.get()); };
  ph.onUpdate = [podUpdated](const auto& o, const auto& n) { podUpdated(o.get(), n.get()); };
  ph.onDelete = [podUpdated](const auto& p, bool) { podUpdated(p.get(), nullptr); };
  registrations_.push_back(pods_.addEventHandler(ph));

  informers::EventHandler<Node> nh;
  auto nodeUpdated = [this](const Node* oldNode, const Node* newNode) {
    if (oldNode && newNode && sameTaints(noExecuteTaints(oldNode->spec.taints), noExecuteTaints(newNode->spec.taints)))
      return;
    enqueue(Item{true, (newNode ? newNode : oldNode)->metadata.name, "", ""});
  };
  nh.onAdd = [nodeUpdated](const auto& n) { nodeUpdated(nullptr, n.get()); };
  nh.onUpdate = [nodeUpdated](const auto& o, const auto& n) { nodeUpdated(o.get(), n.get()); };
  nh.onDelete = [nodeUpdated](const auto& n, bool) { nodeUpdated(n.get(), nullptr); };
  registrations_.push_back(nodes_.addEventHandler(nh));
}

TaintEvictionController::~TaintEvictionController() {
  stopCb_.reset();
  stopped_ = true;
  startWhenSynced_.stop();
  for (auto& s : shards_) std::lock_guard l(s->mu);  // barrier: no dispatch is between its check and its count
  {
    std::unique_lock l(activeMu_);
    activeCv_.wait(l, [&] { return active_ == 0; });
  }
  evictionQueue_.reset();
}

void TaintEvictionController::run(std::stop_token stop) {
  KLOG_INFO("\"Starting\" controller=\"" + name_ + "\"");
  // Once both caches synced, the shards start draining what the handlers queued meanwhile (a one-shot: the
  // period is never reached in practice and a second run is harmless).
  startWhenSynced_.start(
      RealClock::get(), std::chrono::hours(24 * 365), stop,
      [this] {
        ready_ = true;
        for (auto& s : shards_) dispatch(*s);
      },
      [this] { return pods_.hasSynced() && nodes_.hasSynced(); });
  stopCb_ = std::make_unique<std::stop_callback<std::function<void()>>>(stop, std::function<void()>([this] {
    stopped_ = true;
    KLOG_INFO("\"Shutting down controller\" controller=\"" + name_ + "\"");
  }));
}

void TaintEvictionController::enqueue(Item it) {
  Shard& s = *shards_[std::hash<std::string>{}(it.nodeName) % shards_.size()];
  {
    std::lock_guard l(s.mu);
    if (!s.pending.insert(it.key()).second) return;
    (it.isNode ? s.nodes : s.pods).push_back(std::move(it));
  }
  dispatch(s);
}

void TaintEvictionController::dispatch(Shard& s) {
  {
    std::lock_guard l(s.mu);
    if (s.active || !ready_ || stopped_ || (s.nodes.empty() && s.pods.empty())) return;
    s.active = true;
    std::lock_guard g(activeMu_);  // counted before s.mu is released: the destructor's barrier sees it
    ++active_;
  }
  Executor::global().post([this, &s] { drainShard(s); });
}

void TaintEvictionController::drainShard(Shard& s) {
  while (true) {
    Item it;
    {
      std::lock_guard l(s.mu);
      if (stopped_ || (s.nodes.empty() && s.pods.empty())) {
        s.active = false;
        break;
      }
      auto& q = s.nodes.empty() ? s.pods : s.nodes;  // node updates first
      it = std::move(q.front());
      q.pop_front();
      s.pending.erase(it.key());
    }
    if (it.isNode) handleNodeUpdate(it.nodeName);
    else handlePodUpdate(it);
  }
  std::lock_guard l(activeMu_);
  if (--active_ == 0) activeCv_.notify_all();
}

void TaintEvictionController::podEvent(const std::string& podKey, const std::string& message) {
  auto [ns, name] = informers::splitMetaNamespaceKey(podKey);
  recorder_->event({"Pod", "v1", ns, name, "", "", ""}, client::kEventTypeNormal, "TaintManagerEviction", message);
}

void TaintEvictionController::cancelWorkWithEvent(const std::string& podKey) {
  if (evictionQueue_->cancelWork(podKey)) podEvent(podKey, "Cancelling deletion of Pod " + podKey);
}

void TaintEvictionController::processPodOnNode(const std::string& podKey, const std::string& nodeName,
                                               const std::vector<Toleration>& tolerations,
                                               const std::vector<Taint>& taints, Clock::TimePoint now) {
  if (taints.empty()) cancelWorkWithEvent(podKey);
  auto match = getMatchingTolerations(taints, tolerations, comparisonOperators_);
  if (!match.allTolerated) {
    KLOG_V(2, "\"Not all taints are tolerated after update for pod on node\" pod=\"" + podKey + "\" node=\""
                                                                                  + nodeName + "\"");
    cancelWorkWithEvent(podKey);
    evictionQueue_->addWork(podKey, now, now);
    return;
  }
  auto minToleration = getMinTolerationTime(match.used);
  if (minToleration < std::chrono::seconds(0)) {
    KLOG_V(2, "\"Current tolerations for pod tolerate forever, cancelling any scheduled deletion\" pod=\"" + podKey
                                                                                                       + "\"");
    cancelWorkWithEvent(podKey);
    return;
  }
  auto start = now;
  auto trigger = start + minToleration;
  if (auto scheduled = evictionQueue_->getWorker(podKey)) {
    start = scheduled->createdAt;
    if (start + minToleration < trigger) return;  // the earlier deletion stands
    cancelWorkWithEvent(podKey);
  }
  evictionQueue_->addWork(podKey, start, start + minToleration);
}

void TaintEvictionController::handlePodUpdate(const Item& it) {
  const std::string key = it.podNamespace + "/" + it.podName;
  auto pod = pods_.store().get(key);
  if (!pod) {
    cancelWorkWithEvent(key);
    return;
  }
  if (pod->spec.nodeName != it.nodeName || pod->spec.nodeName.empty()) return;
  std::vector<Taint> taints;
  {
    std::lock_guard l(taintedMu_);
    auto t = taintedNodes_.find(pod->spec.nodeName);
    if (t == taintedNodes_.end()) return;
    taints = t->second;
  }
  processPodOnNode(key, pod->spec.nodeName, pod->spec.tolerations, taints, Clock::TimePoint(RealClock::get().now()));
}

void TaintEvictionController::handleNodeUpdate(const std::string& nodeName) {
  auto node = nodes_.store().get(nodeName);
  if (!node) {
    std::lock_guard l(taintedMu_);
    taintedNodes_.erase(nodeName);
    return;
  }
  auto taints = noExecuteTaints(node->spec.taints);
  {
    std::lock_guard l(taintedMu_);
    if (taints.empty()) taintedNodes_.erase(nodeName);
    else taintedNodes_[nodeName] = taints;
  }
  auto pods = pods_.store().byIndex(kPodNodeNameIndex, nodeName);
  if (pods.empty()) return;
  if (taints.empty()) {
    for (const auto& p : pods) cancelWorkWithEvent(p->metadata.namespace_ + "/" + p->metadata.name);
    return;
  }
  auto now = RealClock::get().now();
  for (const auto& p : pods)
    processPodOnNode(p->metadata.namespace_ + "/" + p->metadata.name, nodeName, p->spec.tolerations, taints, now);
}

Status TaintEvictionController::deletePod(const std::string& podKey, Clock::TimePoint fireAt) {
  KLOG_INFO("\"Deleting pod\" controller=\"" + name_ + "\" pod=\"" + podKey + "\"");
  podEvent(podKey, "Marking for deletion Pod " + podKey);
  auto [ns, name] = informers::splitMetaNamespaceKey(podKey);
  Status s;
  for (int i = 0; i < kRetries; ++i) {
    s = addConditionAndDeletePod(ns, name);
    if (s.ok()) {
      podDeletionsTotal().inc();
      podDeletionDuration().observe(std::chrono::duration<double>(RealClock::get().now() - fireAt).count());
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return s;
}

Status TaintEvictionController::addConditionAndDeletePod(const std::string& ns, const std::string& name) {
  auto pod = client::get<Pod>(*client_, ns, name);
  if (!pod.ok()) return pod.status();
  auto status = pod->status;
  api::core::v1::PodCondition cond;
  cond.type = "DisruptionTarget";
  cond.status = "True";
  cond.reason = "DeletionByTaintManager";
  cond.message = "Taint manager: deleting due to NoExecute taint";
  cond.observedGeneration = pod->metadata.generation;
  if (updatePodCondition(status, cond, api::timeNow(RealClock::get()))) {
    // upstream PatchPodStatus: the change as a strategic merge patch guarded by the pod's UID.
    if (auto patch = podStatusPatch(pod->metadata.uid, pod->status, status)) {
      auto r = client::patch<Pod>(*client_, ns, name, client::PatchType::kStrategicMerge, *patch, "status");
      if (!r.ok()) return r.status();
    }
  }
  return client::remove<Pod>(*client_, ns, name);
}

}  // namespace kcm::controllers
