#include "controllers/devicetainteviction/device_taint_eviction.h"

#include <nlohmann/json.hpp>

#include "api/gen/core_v1_json.h"
#include "api/gen/resource_v1_json.h"
#include "api/support/wall_time.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"
#include "controllers/util/controller_utils.h"
#include "controllers/util/node_util.h"

namespace kcm::controllers::devicetainteviction {
namespace {

constexpr auto kRuleStatusPeriod = std::chrono::seconds(10);
constexpr const char* kConditionEvictionInProgress = "EvictionInProgress";

metrics::Counter& podDeletionsTotal() {
  static auto& c = metrics::Registry::global().counter(
      "device_taint_eviction_controller_pod_deletions_total",
      "Total number of Pods deleted by DeviceTaintEvictionController since its start.");
  return c;
}
metrics::Histogram& podDeletionDuration() {
  static auto& h = metrics::Registry::global().histogram(
      "device_taint_eviction_controller_pod_deletion_duration_seconds",
      "Latency, in seconds, between the time when a device taint effect has been activated and a Pod's deletion via "
      "DeviceTaintEvictionController.",
      {0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 120, 180, 240});
  return h;
}

std::string podRef(const Pod& p) { return p.metadata.namespace_ + "/" + p.metadata.name + "/" + p.metadata.uid; }
std::string claimKey(const ResourceClaim& c) { return c.metadata.namespace_ + "/" + c.metadata.name; }
std::string ruleItem(const DeviceTaintRule& r) { return "rule/" + r.metadata.name + "/" + r.metadata.uid; }

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  for (size_t e; (e = s.find('/', b)) != std::string::npos; b = e + 1) out.push_back(s.substr(b, e - b));
  out.push_back(s.substr(b));
  return out;
}

bool reservedForEqual(const ResourceClaim& a, const ResourceClaim& b) {
  const auto &x = a.status.reservedFor, &y = b.status.reservedFor;
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].apiGroup != y[i].apiGroup || x[i].resource != y[i].resource || x[i].name != y[i].name ||
        x[i].uid != y[i].uid)
      return false;
  return true;
}

bool taintEqual(const DeviceTaint& a, const DeviceTaint& b) {
  return a.key == b.key && a.value == b.value && a.effect == b.effect && a.timeAdded == b.timeAdded;
}

}  // namespace

void UIDCache::add(const std::string& uid) {
  if (set_.insert(uid).second) order_.push_back(uid);
  while (order_.size() > max_) {
    set_.erase(order_.front());
    order_.pop_front();
  }
}

Controller::Controller(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
                       informers::SharedInformer<Pod>& pods, informers::SharedInformer<ResourceClaim>& claims,
                       informers::SharedInformer<ResourceSlice>& slices,
                       informers::SharedInformer<DeviceTaintRule>* rules,
                       informers::SharedInformer<api::resource::v1::DeviceClass>& classes, std::string name,
                       Clock& clock)
    : client_(std::move(client)), recorder_(std::move(recorder)), pods_(pods), claims_(claims), slices_(slices),
      rules_(rules), classes_(classes), name_(std::move(name)), clock_(clock),
      queue_(name_, [this](const std::string& k) { return sync(k); }, clock) {
  podDeletionsTotal();
  podDeletionDuration();
  informers::EventHandler<ResourceClaim> ch;
  ch.onAdd = [this](const auto& c) { handleClaimChange(nullptr, c); };
  ch.onUpdate = [this](const auto& o, const auto& n) { handleClaimChange(o, n); };
  ch.onDelete = [this](const auto& c, bool) { handleClaimChange(c, nullptr); };
  registrations_.push_back(claims_.addEventHandler(ch));
  informers::EventHandler<Pod> ph;
  ph.onAdd = [this](const auto& p) { handlePodChange(nullptr, p); };
  ph.onUpdate = [this](const auto& o, const auto& n) { handlePodChange(o, n); };
  ph.onDelete = [this](const auto& p, bool) { handlePodChange(p, nullptr); };
  registrations_.push_back(pods_.addEventHandler(ph));
  if (rules_) {
    informers::EventHandler<DeviceTaintRule> rh;
    rh.onAdd = [this](const auto& r) { handleRuleChange(nullptr, r); };
    rh.onUpdate = [this](const auto& o, const auto& n) { handleRuleChange(o, n); };
    rh.onDelete = [this](const auto& r, bool) { handleRuleChange(r, nullptr); };
    registrations_.push_back(rules_->addEventHandler(rh));
  }
  informers::EventHandler<ResourceSlice> sh;
  sh.onAdd = [this](const auto& s) { handleSliceChange(nullptr, s); };
  sh.onUpdate = [this](const auto& o, const auto& n) { handleSliceChange(o, n); };
  sh.onDelete = [this](const auto& s, bool) { handleSliceChange(s, nullptr); };
  registrations_.push_back(slices_.addEventHandler(sh));
}

void Controller::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting\" controller=" + log::quote(name_) + " numWorkers=" + std::to_string(workers));
  std::vector<std::function<bool()>> synced = {[this] { return pods_.hasSynced(); },
                                               [this] { return claims_.hasSynced(); },
                                               [this] { return slices_.hasSynced(); },
                                               [this] { return classes_.hasSynced(); }};
  if (rules_) synced.push_back([this] { return rules_->hasSynced(); });
  queue_.start(workers, stop, synced);
}

runtime::SyncResult Controller::sync(const std::string& key) {
  auto parts = split(key);
  if (parts.size() == 4 && parts[0] == "pod") return maybeDeletePod(parts[1], parts[2], parts[3]);
  if (parts.size() == 3 && parts[0] == "rule") return maybeUpdateRuleStatus(parts[1], parts[2]);
  return runtime::SyncResult::ok();
}

std::optional<Eviction> Controller::pendingEviction(const std::string& ref) {
  std::lock_guard l(mu_);
  auto it = deletePodAt_.find(ref);
  return it == deletePodAt_.end() ? std::nullopt : std::optional<Eviction>(it->second);
}

// ---- Deleting pods.

runtime::SyncResult Controller::maybeDeletePod(const std::string& ns, const std::string& name, const std::string& uid) {
  const std::string ref = ns + "/" + name + "/" + uid;
  Eviction eviction;
  {
    std::lock_guard l(mu_);
    auto it = deletePodAt_.find(ref);
    if (it == deletePodAt_.end() || evictedPods_.has(uid)) {
      KLOG_V(5, "\"Work item for pod deletion obsolete, nothing to do\" pod=" + log::quote(ref));
      return runtime::SyncResult::ok();
    }
    eviction = it->second;
  }
  const double now = std::chrono::duration<double>(clock_.wallNow().time_since_epoch()).count();
  if (eviction.when && *eviction.when > now)
    return runtime::SyncResult::after(std::chrono::duration_cast<Clock::Duration>(
        std::chrono::duration<double>(static_cast<double>(*eviction.when) - now)));
  Status s = addConditionAndDeletePod(ns, name, uid);
  if (!s.ok() && s.code() != StatusCode::kNotFound) return runtime::SyncResult::error(s);
  std::lock_guard l(mu_);
  deletePodAt_.erase(ref);
  evictedPods_.add(uid);
  if (!s.ok()) return runtime::SyncResult::ok();  // gone already
  const double latency = eviction.when ? now - static_cast<double>(*eviction.when) : 0;
  KLOG_V(2, "\"Evicted pod by deleting it\" pod=" + log::quote(ref) + " latency=" + log::quote(std::to_string(latency)) +
                " reason=" + log::quote(eviction.toString()));
  podDeletionsTotal().inc();
  podDeletionDuration().observe(latency);
  for (const auto& r : eviction.reason)
    if (r.rule) {
      ++evictedByRule_[r.rule->metadata.uid];
      ruleStatusAfter(r.rule);
    }
  return runtime::SyncResult::ok();
}

Status Controller::addConditionAndDeletePod(const std::string& ns, const std::string& name, const std::string& uid) {
  auto pod = client::get<Pod>(*client_, ns, name);
  if (!pod.ok()) return pod.status();
  if (pod->metadata.uid != uid) return Status(StatusCode::kNotFound, "pods \"" + name + "\" not found");
  if (pod->metadata.deletionTimestamp) return Status::Ok();
  podEvent(ns, name, uid, "Marking for deletion");
  auto status = pod->status;
  api::core::v1::PodCondition cond;
  cond.type = "DisruptionTarget";
  cond.status = "True";
  cond.reason = "DeletionByDeviceTaintManager";
  cond.message = "Device Taint manager: deleting due to NoExecute taint";
  if (updatePodCondition(status, cond, api::timeNow(clock_))) {
    if (auto patch = podStatusPatch(pod->metadata.uid, pod->status, status)) {
      auto r = client::patch<Pod>(*client_, ns, name, client::PatchType::kStrategicMerge, *patch, "status");
      if (!r.ok()) return r.status();
    }
  }
  client::DeleteOptions o;
  o.preconditionUID = uid;
  return client::remove<Pod>(*client_, ns, name, o);
}

void Controller::podEvent(const std::string& ns, const std::string& name, const std::string& uid,
                          const std::string& msg) {
  if (recorder_)
    recorder_->event({"Pod", "v1", ns, name, uid, "", ""}, client::kEventTypeNormal, "DeviceTaintManagerEviction", msg);
}

// ---- DeviceTaintRule status.

runtime::SyncResult Controller::maybeUpdateRuleStatus(const std::string& name, const std::string& uid) {
  if (!rules_) return runtime::SyncResult::ok();
  auto rule = rules_->store().get(name);
  if (!rule || rule->metadata.uid != uid) return runtime::SyncResult::ok();  // deleted or replaced
  api::meta::v1::Condition existing;
  const api::Time now = api::timeNow(clock_);
  for (const auto& c : rule->status.conditions)
    if (c.type == kConditionEvictionInProgress) {
      existing = c;
      const auto since = std::chrono::seconds(now.unixSeconds - c.lastTransitionTime.unixSeconds);
      if (c.observedGeneration == rule->metadata.generation && since < kRuleStatusPeriod)
        return runtime::SyncResult::after(kRuleStatusPeriod - since);
    }
  const std::string& effect = rule->spec.taint.effect;
  int64_t pending = 0, namespaces = 0, published = 0, allocated = 0, evicted = 0;
  {
    std::lock_guard l(mu_);
    const auto pods = pods_.store().list();
    if (effect == kEffectNone) {
      // What NoExecute would do: the rule evicting, on a copy of the model.
      EvictionState simulated = state_;
      auto asEvicting = std::make_shared<DeviceTaintRule>(*rule);
      asEvicting->spec.taint.effect = kEffectNoExecute;
      simulated.evictingRules[name] = asEvicting;
      recomputeClaims(simulated, false);
      std::tie(pending, namespaces) = simulated.countPendingPods(*rule, pods);
      std::tie(published, allocated) = simulated.countTaintedDevices(*rule);
    } else if (effect == kEffectNoExecute) {
      std::tie(pending, namespaces) = state_.countPendingPods(*rule, pods);
    }
    if (auto it = evictedByRule_.find(uid); it != evictedByRule_.end()) evicted = it->second;
  }
  auto n = [](int64_t v, const char* one, const std::string& many) { return v == 1 ? std::string(one) : std::to_string(v) + many; };
  api::meta::v1::Condition c;
  c.type = kConditionEvictionInProgress;
  c.status = "False";
  c.reason = "Effect" + effect;
  c.observedGeneration = rule->metadata.generation;
  c.lastTransitionTime = existing.lastTransitionTime;
  if (effect == kEffectNoExecute) {
    if (pending > 0) {
      c.reason = "PodsPendingEviction";
      c.status = "True";
      c.message = n(pending, "1 pod needs", " pods need") + " to be evicted in " +
                  n(namespaces, "1 namespace.", " different namespaces.");
    } else {
      c.reason = evicted > 0 ? "Completed" : "NotStarted";
    }
  } else if (effect == kEffectNone) {
    c.reason = "NoEffect";
    c.message = n(published, "1 published device", " published devices") + " selected. " +
                n(allocated, "1 allocated device", " allocated devices") + " selected. " +
                n(pending, "1 pod would", " pods would") + " be evicted in " +
                n(namespaces, "1 namespace ", " different namespaces ") +
                "if the effect was NoExecute. This information will not be updated again. Recreate the "
                "DeviceTaintRule to trigger an update.";
  } else {
    c.reason = "OtherEffect";
    c.message = "Eviction only happens for the NoExecute effect.";
  }
  if (evicted > 0) {
    if (!c.message.empty()) c.message += " ";
    c.message += n(evicted, "1 pod ", " pods ") + "evicted since starting the controller.";
  }
  if (c.type == existing.type && c.status == existing.status && c.reason == existing.reason &&
      c.message == existing.message && c.observedGeneration == existing.observedGeneration)
    return runtime::SyncResult::ok();
  c.lastTransitionTime = now;
  KLOG_V(4, "\"Calculated new condition\" deviceTaintRule=" + log::quote(name) + " reason=" + log::quote(c.reason) +
                " message=" + log::quote(c.message));
  nlohmann::ordered_json condition = {{"type", c.type},
                                      {"status", c.status},
                                      {"observedGeneration", c.observedGeneration},
                                      {"lastTransitionTime", c.lastTransitionTime.rfc3339()},
                                      {"reason", c.reason},
                                      {"message", c.message}};
  nlohmann::ordered_json apply = {{"kind", "DeviceTaintRule"},
                                  {"apiVersion", "resource.k8s.io/v1"},
                                  {"metadata", {{"name", name}, {"uid", uid}}},
                                  {"status", {{"conditions", {condition}}}}};
  client::WriteOptions w;
  w.fieldManager = name_;
  w.force = true;
  auto r = client::patch<DeviceTaintRule>(*client_, "", name, client::PatchType::kApply, apply.dump(), "status", w);
  if (!r.ok())
    return runtime::SyncResult::error(Status(r.status().code(), "add condition to DeviceTaintRule status: " +
                                                                   r.status().message()));
  return runtime::SyncResult::ok();
}

void Controller::ruleStatusAfter(const RulePtr& rule) { queue_.enqueueAfter(ruleItem(*rule), kRuleStatusPeriod); }

// ---- The model, kept by the informers' handlers.

void Controller::recomputeClaims(EvictionState& state, bool handle) {
  for (auto& [key, ac] : state.allocatedClaims) {
    auto eviction = state.claimEvictionTime(*ac.claim);
    const bool changed = eviction != ac.eviction;
    ac.eviction = std::move(eviction);
    if (handle && changed) handlePods(*ac.claim);
  }
}

void Controller::handleClaimChange(const ClaimPtr& oldClaim, const ClaimPtr& newClaim) {
  std::lock_guard l(mu_);
  const ClaimPtr& claim = newClaim ? newClaim : oldClaim;
  const std::string key = claimKey(*claim);
  if (!newClaim) {
    state_.allocatedClaims.erase(key);
    handlePods(*claim);
    return;
  }
  if (!oldClaim) {
    if (!claim->status.allocation) return;
    state_.allocatedClaims[key] = {claim, state_.claimEvictionTime(*claim)};
    handlePods(*claim);
    return;
  }
  if (oldClaim->metadata.uid != newClaim->metadata.uid) {
    state_.allocatedClaims.erase(key);
    handlePods(*oldClaim);
    if (newClaim->status.allocation) {
      state_.allocatedClaims[key] = {newClaim, state_.claimEvictionTime(*newClaim)};
      handlePods(*newClaim);
    }
    return;
  }
  auto syncBoth = [&] {
    if (!reservedForEqual(*oldClaim, *newClaim)) {
      handlePods(*oldClaim);
      handlePods(*newClaim);
    } else {
      handlePods(*claim);
    }
  };
  if (!oldClaim->status.allocation && newClaim->status.allocation) {
    state_.allocatedClaims[key] = {claim, state_.claimEvictionTime(*claim)};
    syncBoth();
  } else if (oldClaim->status.allocation && !newClaim->status.allocation) {
    state_.allocatedClaims.erase(key);
    syncBoth();
  } else if (claim->status.allocation) {
    auto previous = state_.allocatedClaims[key].eviction;
    state_.allocatedClaims[key] = {claim, previous};
    syncBoth();
  }
}

void Controller::handleRuleChange(const RulePtr& oldRule, const RulePtr& newRule) {
  std::lock_guard l(mu_);
  if (!oldRule) queue_.enqueue(ruleItem(*newRule));
  if (!newRule) {
    evictedByRule_.erase(oldRule->metadata.uid);
    state_.evictingRules.erase(oldRule->metadata.name);
  }
  if (oldRule && newRule && oldRule->metadata.uid == newRule->metadata.uid) {
    const auto& a = oldRule->spec;
    const auto& b = newRule->spec;
    const bool selectorSame = (!a.deviceSelector && !b.deviceSelector) ||
                              (a.deviceSelector && b.deviceSelector && a.deviceSelector->driver == b.deviceSelector->driver &&
                               a.deviceSelector->pool == b.deviceSelector->pool &&
                               a.deviceSelector->device == b.deviceSelector->device);
    if (selectorSame && taintEqual(a.taint, b.taint)) return;
    queue_.enqueue(ruleItem(*newRule));
  }
  if (oldRule && oldRule->spec.taint.effect == kEffectNoExecute) state_.evictingRules.erase(oldRule->metadata.name);
  if (newRule && newRule->spec.taint.effect == kEffectNoExecute) state_.evictingRules[newRule->metadata.name] = newRule;
  recomputeClaims(state_, true);
}

void Controller::handleSliceChange(const SlicePtr& oldSlice, const SlicePtr& newSlice) {
  std::lock_guard l(mu_);
  const SlicePtr& slice = newSlice ? newSlice : oldSlice;
  const PoolID id{slice->spec.driver, slice->spec.pool.name};
  Pool& p = state_.pools[id];
  const auto oldTaints = p.taintedDevices();
  p.removeSlice(oldSlice);
  p.addSlice(newSlice);
  const auto newTaints = p.taintedDevices();
  if (p.slices.empty()) state_.pools.erase(id);
  if (oldTaints.empty() && newTaints.empty()) return;
  // Devices whose set of NoExecute taints changed (both lists sorted by device name).
  std::set<std::string> modified;
  size_t o = 0, n = 0;
  while (o < oldTaints.size() || n < newTaints.size()) {
    while (o < oldTaints.size() && n < newTaints.size() && oldTaints[o].first == newTaints[n].first) {
      if (!taintEqual(oldTaints[o].second, newTaints[n].second)) modified.insert(oldTaints[o].first);
      ++o, ++n;
    }
    const std::string newName = n < newTaints.size() ? newTaints[n].first : "";
    while (o < oldTaints.size() && oldTaints[o].first != newName) modified.insert(oldTaints[o++].first);
    const std::string oldName = o < oldTaints.size() ? oldTaints[o].first : "";
    if (n < newTaints.size() && newTaints[n].first != oldName) modified.insert(newTaints[n++].first);
  }
  for (auto& [key, ac] : state_.allocatedClaims) {
    bool uses = false;
    for (const auto& r : ac.claim->status.allocation->devices.results)
      uses |= r.driver == id.first && r.pool == id.second && modified.count(r.device);
    if (!uses) continue;
    auto eviction = state_.claimEvictionTime(*ac.claim);
    if (eviction == ac.eviction) continue;
    ac.eviction = std::move(eviction);
    handlePods(*ac.claim);
  }
}

void Controller::handlePodChange(const PodPtr& oldPod, const PodPtr& newPod) {
  std::lock_guard l(mu_);
  if (!newPod) {
    deletePodAt_.erase(podRef(*oldPod));
    return;
  }
  if (oldPod && oldPod->spec.nodeName == newPod->spec.nodeName) {
    const auto &a = oldPod->status.resourceClaimStatuses, &b = newPod->status.resourceClaimStatuses;
    bool same = a.size() == b.size();
    for (size_t i = 0; same && i < a.size(); ++i) same = a[i].name == b[i].name && a[i].resourceClaimName == b[i].resourceClaimName;
    const auto &x = oldPod->status.extendedResourceClaimStatus, &y = newPod->status.extendedResourceClaimStatus;
    same = same && bool(x) == bool(y) && (!x || x->resourceClaimName == y->resourceClaimName);
    if (same) return;
  }
  handlePod(*newPod);
}

void Controller::handlePods(const ResourceClaim& claim) {
  for (const auto& consumer : claim.status.reservedFor) {
    if (!consumer.apiGroup.empty() || consumer.resource != "pods") continue;  // PodGroups: DRAWorkloadResourceClaims
    auto pod = pods_.store().get(claim.metadata.namespace_, consumer.name);
    if (!pod || pod->metadata.uid != consumer.uid) continue;
    handlePod(*pod);
  }
}

void Controller::handlePod(const Pod& pod) {
  auto eviction = state_.podEvictionTime(pod);
  if (!eviction) {
    if (cancelWorkWithEvent(pod)) KLOG_V(3, "\"Canceled pod eviction\" pod=" + log::quote(podRef(pod)));
    return;
  }
  evictPod(pod, *eviction);
  for (const auto& r : eviction->reason)
    if (r.rule) ruleStatusAfter(r.rule);
}

void Controller::evictPod(const Pod& pod, const Eviction& eviction) {
  const std::string ref = podRef(pod);
  deletePodAt_[ref] = eviction;
  const std::string item = "pod/" + ref;
  const double now = std::chrono::duration<double>(clock_.wallNow().time_since_epoch()).count();
  if (!eviction.when || static_cast<double>(*eviction.when) <= now) {
    KLOG_V(3, "\"Adding immediate pod eviction\" pod=" + log::quote(ref) + " eviction=" + log::quote(eviction.toString()));
    queue_.enqueue(item);
  } else {
    const auto delay = std::chrono::duration<double>(static_cast<double>(*eviction.when) - now);
    KLOG_V(3, "\"Adding delayed pod eviction\" pod=" + log::quote(ref) + " eviction=" + log::quote(eviction.toString()));
    queue_.enqueueAfter(item, std::chrono::duration_cast<Clock::Duration>(delay));
  }
}

bool Controller::cancelWorkWithEvent(const Pod& pod) {
  if (deletePodAt_.erase(podRef(pod)) == 0) return false;
  podEvent(pod.metadata.namespace_, pod.metadata.name, pod.metadata.uid, "Cancelling deletion");
  return true;
}

}  // namespace kcm::controllers::devicetainteviction
