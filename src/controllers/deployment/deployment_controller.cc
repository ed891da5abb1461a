#include "controllers/deployment/deployment_controller.h"

#include <chrono>

#include "api/gen/apps_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/support/labels.h"
#include "base/duration.h"
#include "base/log.h"
#include "client/typed_client.h"

namespace kcm::controllers {

using api::core::v1::Pod;
using api::meta::v1::OwnerReference;
using namespace deploymentutil;
using log::quote;

namespace {
constexpr const char* kLogger = " logger=\"deployment-controller\"";
std::string objectKey(const api::meta::v1::ObjectMeta& m) { return quote(m.namespace_ + "/" + m.name); }
}  // namespace

namespace {
constexpr int kMaxRetries = 15;  // then the key is dropped until the next event
constexpr const char* kKind = "Deployment";
constexpr const char* kAPIVersion = "apps/v1";
}  // namespace

DeploymentController::DeploymentController(std::shared_ptr<client::RestClient> client,
                                           std::shared_ptr<client::EventRecorder> recorder,
                                           informers::SharedInformer<Deployment>& deployments,
                                           informers::SharedInformer<ReplicaSet>& rss,
                                           informers::SharedInformer<Pod>& pods, bool terminatingReplicas,
                                           Clock& clock)
    : client_(std::move(client)), recorder_(std::move(recorder)), deployments_(deployments), rss_(rss), pods_(pods),
      terminatingReplicas_(terminatingReplicas), clock_(clock),
      base_("deployment", [this](const std::string& key) { return syncDeployment(key); }, clock, kMaxRetries) {
  pods_.store().addIndexer(kPodControllerIndex, podControllerIndexKeys);
  informers::EventHandler<Deployment> dh;
  // The handlers' lines carry the controller's logger name, as upstream's (their logger comes from the
  // controller's context).
  dh.onAdd = [this](const auto& d) {
    KLOG_V(4, std::string("\"Adding deployment\"") + kLogger + " deployment=" + objectKey(d->metadata));
    enqueue(*d);
  };
  dh.onUpdate = [this](const auto&, const auto& d) {
    KLOG_V(4, std::string("\"Updating deployment\"") + kLogger + " deployment=" + objectKey(d->metadata));
    enqueue(*d);
  };
  dh.onDelete = [this](const auto& d, bool) {
    KLOG_V(4, std::string("\"Deleting deployment\"") + kLogger + " deployment=" + objectKey(d->metadata));
    enqueue(*d);
  };
  registrations_.push_back(deployments_.addEventHandler(dh));
  informers::EventHandler<ReplicaSet> rh;
  rh.onAdd = [this](const RSPtr& rs) { addReplicaSet(rs); };
  rh.onUpdate = [this](const RSPtr& o, const RSPtr& c) { updateReplicaSet(o, c); };
  rh.onDelete = [this](const RSPtr& rs, bool) { deleteReplicaSet(*rs); };
  registrations_.push_back(rss_.addEventHandler(rh));
  informers::EventHandler<Pod> ph;
  ph.onDelete = [this](const PodPtr& p, bool) { deletePod(*p); };
  registrations_.push_back(pods_.addEventHandler(ph));
}

void DeploymentController::run(int workers, std::stop_token stop) {
  base_.start(workers, stop,
              {[this] { return deployments_.hasSynced(); }, [this] { return rss_.hasSynced(); },
               [this] { return pods_.hasSynced(); }});
}

void DeploymentController::enqueue(const Deployment& d) {
  base_.enqueue(d.metadata.namespace_ + "/" + d.metadata.name);
}

client::ObjectReference DeploymentController::ref(const Deployment& d) const {
  return {kKind, kAPIVersion, d.metadata.namespace_, d.metadata.name, d.metadata.uid, d.metadata.resourceVersion, ""};
}

void DeploymentController::event(const Deployment& d, const char* type, const std::string& reason,
                                 const std::string& message) {
  recorder_->event(ref(d), type, reason, message);
}

Status DeploymentController::updateStatus(Deployment& d) {
  auto r = client::updateStatus(*client_, d);
  if (!r.ok()) return r.status();
  d.metadata.resourceVersion = r->metadata.resourceVersion;
  return Status::Ok();
}

Result<DeploymentController::RSPtr> DeploymentController::updateReplicaSet(const ReplicaSet& rs) {
  auto r = client::update(*client_, rs);
  if (!r.ok()) return r.status();
  return RSPtr(std::make_shared<const ReplicaSet>(std::move(r).value()));
}

std::shared_ptr<const DeploymentController::Deployment> DeploymentController::resolveControllerRef(
    const std::string& ns, const OwnerReference& r) {
  if (r.kind != kKind) return nullptr;
  auto d = deployments_.store().get(ns, r.name);
  if (!d || d->metadata.uid != r.uid) return nullptr;
  return d;
}

std::vector<std::shared_ptr<const DeploymentController::Deployment>> DeploymentController::getDeploymentsForReplicaSet(
    const ReplicaSet& rs) {
  std::vector<std::shared_ptr<const Deployment>> out;
  if (rs.metadata.labels.empty()) return out;
  for (const auto& d : deployments_.store().byIndex(informers::kNamespaceIndex, rs.metadata.namespace_)) {
    if (!d->spec.selector || (d->spec.selector->matchLabels.empty() && d->spec.selector->matchExpressions.empty()))
      continue;
    auto m = api::labelSelectorMatches(*d->spec.selector, rs.metadata.labels);
    if (m.ok() && *m) out.push_back(d);
  }
  if (out.size() > 1)
    KLOG_INFO("\"user error! more than one deployment is selecting replica set\" replicaSet=\"" +
              rs.metadata.namespace_ + "/" + rs.metadata.name + "\"");
  return out;
}

void DeploymentController::addReplicaSet(const RSPtr& rs) {
  if (rs->metadata.deletionTimestamp) {
    deleteReplicaSet(*rs);
    return;
  }
  if (const OwnerReference* r = getControllerOf(rs->metadata)) {
    if (auto d = resolveControllerRef(rs->metadata.namespace_, *r)) {
      KLOG_V(4, std::string("\"ReplicaSet added\"") + kLogger + " replicaSet=" + objectKey(rs->metadata));
      enqueue(*d);
    }
    return;
  }
  auto ds = getDeploymentsForReplicaSet(*rs);
  if (ds.empty()) return;
  KLOG_V(4, std::string("\"Orphan ReplicaSet added\"") + kLogger + " replicaSet=" + objectKey(rs->metadata));
  for (const auto& d : ds) enqueue(*d);
}

void DeploymentController::updateReplicaSet(const RSPtr& oldRS, const RSPtr& curRS) {
  if (curRS->metadata.resourceVersion == oldRS->metadata.resourceVersion) return;
  const OwnerReference* cur = getControllerOf(curRS->metadata);
  const OwnerReference* old = getControllerOf(oldRS->metadata);
  const bool refChanged = (cur == nullptr) != (old == nullptr) ||
                          (cur && (cur->uid != old->uid || cur->name != old->name || cur->kind != old->kind));
  if (refChanged && old)
    if (auto d = resolveControllerRef(oldRS->metadata.namespace_, *old)) enqueue(*d);
  if (cur) {
    if (auto d = resolveControllerRef(curRS->metadata.namespace_, *cur)) {
      KLOG_V(4, std::string("\"ReplicaSet updated\"") + kLogger + " replicaSet=" + objectKey(curRS->metadata));
      enqueue(*d);
    }
    return;
  }
  if (curRS->metadata.labels != oldRS->metadata.labels || refChanged) {
    auto ds = getDeploymentsForReplicaSet(*curRS);
    if (ds.empty()) return;
    KLOG_V(4, std::string("\"Orphan ReplicaSet updated\"") + kLogger + " replicaSet=" + objectKey(curRS->metadata));
    for (const auto& d : ds) enqueue(*d);
  }
}

void DeploymentController::deleteReplicaSet(const ReplicaSet& rs) {
  const OwnerReference* r = getControllerOf(rs.metadata);
  if (!r) return;
  if (auto d = resolveControllerRef(rs.metadata.namespace_, *r)) {
    KLOG_V(4, std::string("\"ReplicaSet deleted\"") + kLogger + " replicaSet=" + objectKey(rs.metadata));
    enqueue(*d);
  }
}

// Only Recreate waits for pods: a deleted pod may let it proceed.
void DeploymentController::deletePod(const Pod& pod) {
  const OwnerReference* r = getControllerOf(pod.metadata);
  if (!r || r->kind != "ReplicaSet") return;
  auto rs = rss_.store().get(pod.metadata.namespace_, r->name);
  if (!rs || rs->metadata.uid != r->uid) return;
  const OwnerReference* dr = getControllerOf(rs->metadata);
  if (!dr) return;
  auto d = resolveControllerRef(rs->metadata.namespace_, *dr);
  if (d && d->spec.strategy.type == "Recreate") enqueue(*d);
}

Result<std::vector<DeploymentController::RSPtr>> DeploymentController::getReplicaSetsForDeployment(const Deployment& d) {
  if (!d.spec.selector) return std::vector<RSPtr>{};
  auto probe = api::labelSelectorMatches(*d.spec.selector, {});
  if (!probe.ok())
    return Status(StatusCode::kInvalidArgument, "deployment " + d.metadata.namespace_ + "/" + d.metadata.name +
                                                    " has invalid label selector: " + probe.status().message());
  auto sel = std::make_shared<api::meta::v1::LabelSelector>(*d.spec.selector);
  LabelMatcher matcher = [sel](const Labels& l) {
    auto r = api::labelSelectorMatches(*sel, l);
    return r.ok() && *r;
  };
  const std::string ns = d.metadata.namespace_, name = d.metadata.name, uid = d.metadata.uid;
  ControllerRefManager<ReplicaSet> cm(
      d.metadata, kAPIVersion, kKind, matcher,
      [&]() -> Status {
        auto fresh = client::get<Deployment>(*client_, ns, name);
        if (!fresh.ok()) return fresh.status();
        if (fresh->metadata.uid != uid)
          return Status(StatusCode::kConflict, "original Deployment " + ns + "/" + name + " is gone: got uid " +
                                                   fresh->metadata.uid + ", wanted " + uid);
        if (fresh->metadata.deletionTimestamp)
          return Status(StatusCode::kConflict,
                        ns + "/" + name + " has just been deleted at " + fresh->metadata.deletionTimestamp->rfc3339());
        return Status::Ok();
      },
      [this](const std::string& rns, const std::string& rname, const std::string& patch) {
        return client::patch<ReplicaSet>(*client_, rns, rname, client::PatchType::kStrategicMerge, patch).status();
      });
  auto [claimed, err] = cm.claim(rss_.store().byIndex(informers::kNamespaceIndex, ns));
  if (!err.ok()) return err;
  return claimed;
}

std::map<std::string, std::vector<PodPtr>> DeploymentController::getPodMapForDeployment(const std::vector<RSPtr>& rss) {
  std::map<std::string, std::vector<PodPtr>> out;
  for (const auto& rs : rss) {
    OwnerReference r = newControllerRef(rs->metadata, "apps/v1", "ReplicaSet");
    out[rs->metadata.uid] = pods_.store().byIndex(kPodControllerIndex, podControllerIndexKey(rs->metadata.namespace_, &r));
  }
  return out;
}

runtime::SyncResult DeploymentController::syncDeployment(const std::string& key) {
  const auto began = std::chrono::steady_clock::now();
  KLOG_V(4, "\"Started syncing deployment\" deployment=" + quote(key) +
                " startTime=" + quote(goTime(std::chrono::system_clock::now())));
  struct Finished {
    const std::string& key;
    std::chrono::steady_clock::time_point began;
    ~Finished() {
      KLOG_V(4, "\"Finished syncing deployment\" deployment=" + quote(key) +
                    " duration=" + quote(goDuration(std::chrono::steady_clock::now() - began)));
    }
  } finished{key, began};
  auto [ns, name] = informers::splitMetaNamespaceKey(key);
  auto cached = deployments_.store().get(ns, name);
  if (!cached) {
    KLOG_V(4, "\"Deployment has been deleted\" deployment=\"" + key + "\"");
    return runtime::SyncResult::ok();
  }
  Deployment d = *cached;
  auto finish = [&](Status s) {
    if (s.ok() || isNamespaceTerminating(s)) return runtime::SyncResult::ok();
    return runtime::SyncResult::error(s);
  };
  if (d.spec.selector && d.spec.selector->matchLabels.empty() && d.spec.selector->matchExpressions.empty()) {
    event(d, client::kEventTypeWarning, "SelectingAll",
          "This deployment is selecting all pods. A non-empty selector is required.");
    if (d.status.observedGeneration < d.metadata.generation) {
      d.status.observedGeneration = d.metadata.generation;
      (void)updateStatus(d);
    }
    return runtime::SyncResult::ok();
  }
  auto rss = getReplicaSetsForDeployment(d);
  if (!rss.ok()) return finish(rss.status());
  if (d.metadata.deletionTimestamp) return finish(syncStatusOnly(d, *rss));
  if (Status s = checkPausedConditions(d); !s.ok()) return finish(s);
  if (d.spec.paused) return finish(sync(d, *rss));
  if (getRollbackTo(d)) return finish(rollback(d, *rss));
  auto scaling = isScalingEvent(d, *rss);
  if (!scaling.ok()) return finish(scaling.status());
  if (*scaling) return finish(sync(d, *rss));
  if (d.spec.strategy.type == "Recreate") return finish(rolloutRecreate(d, *rss, getPodMapForDeployment(*rss)));
  if (d.spec.strategy.type == "RollingUpdate") return finish(rolloutRolling(d, *rss));
  return finish(Status(StatusCode::kInvalidArgument, "unexpected deployment strategy type: " + d.spec.strategy.type));
}

}  // namespace kcm::controllers
