#include "controllers/namespace/namespaced_resources_deleter.h"

#include <algorithm>

#include "api/gen/core_v1_json.h"
#include "api/gen/meta_v1_json.h"
#include "api/support/wall_time.h"
#include "base/log.h"

namespace kcm::controllers {

using api::core::v1::Namespace;
using api::core::v1::NamespaceCondition;
using client::GroupVersionResource;

namespace {

constexpr int64_t kFinalizerEstimateSeconds = 15;

struct ConditionInfo {
  const char* type;
  const char* okReason;
  const char* okMessage;
};
constexpr ConditionInfo kConditionTypes[] = {
    {"NamespaceDeletionDiscoveryFailure", "ResourcesDiscovered", "All resources successfully discovered"},
    {"NamespaceDeletionGroupVersionParsingFailure", "ParsedGroupVersions", "All legacy kube types successfully parsed"},
    {"NamespaceDeletionContentFailure", "ContentDeleted",
     "All content successfully deleted, may be waiting on finalization"},
    {"NamespaceContentRemaining", "ContentRemoved", "All content successfully removed"},
    {"NamespaceFinalizersRemaining", "ContentHasNoFinalizers", "All content-preserving finalizers finished"},
};

NamespaceCondition condition(const std::string& type, const std::string& status, const std::string& reason,
                             const std::string& message, api::Time now) {
  NamespaceCondition c;
  c.type = type;
  c.status = status;
  c.reason = reason;
  c.message = message;
  c.lastTransitionTime = now;
  return c;
}

// upstream namespaceConditionUpdater: failures found in this pass; every other condition type reads "ok".
struct ConditionUpdater {
  api::Time now;  // stamps new conditions and status transitions
  std::vector<NamespaceCondition> next;
  std::vector<std::string> deleteContentErrors;

  // upstream ProcessDiscoverResourcesErr: failed groups are counted in the message.
  void discoveryFailed(const Status& s, size_t failedGroups) {
    std::string msg = s.message();
    if (failedGroups > 0)
      msg = "Discovery failed for some groups, " + std::to_string(failedGroups) + " failing: " + msg;
    next.push_back(condition("NamespaceDeletionDiscoveryFailure", "True", "DiscoveryFailed", msg, now));
  }
  void contentTotals(const std::map<std::string, int>& gvrRemaining, const std::map<std::string, int>& finalizers) {
    std::vector<std::string> parts;
    for (const auto& [gr, n] : gvrRemaining)
      if (n) parts.push_back(gr + " has " + std::to_string(n) + " resource instances");
    if (!parts.empty()) {
      std::sort(parts.begin(), parts.end());
      std::string msg;
      for (const auto& p : parts) msg += (msg.empty() ? "" : ", ") + p;
      next.push_back(condition("NamespaceContentRemaining", "True", "SomeResourcesRemain",
                               "Some resources are remaining: " + msg, now));
    }
    parts.clear();
    for (const auto& [f, n] : finalizers)
      if (n) parts.push_back(f + " in " + std::to_string(n) + " resource instances");
    if (!parts.empty()) {
      std::sort(parts.begin(), parts.end());
      std::string msg;
      for (const auto& p : parts) msg += (msg.empty() ? "" : ", ") + p;
      next.push_back(condition("NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain",
                               "Some content in the namespace has finalizers remaining: " + msg, now));
    }
  }
  // Applies to the namespace's status; whether anything changed.
  bool update(api::core::v1::NamespaceStatus& status) {
    if (!deleteContentErrors.empty()) {
      std::sort(deleteContentErrors.begin(), deleteContentErrors.end());
      std::string msg;
      for (const auto& e : deleteContentErrors) msg += (msg.empty() ? "" : ", ") + e;
      next.push_back(condition("NamespaceDeletionContentFailure", "True", "ContentDeletionFailed",
                               "Failed to delete all resource types, " + std::to_string(deleteContentErrors.size()) +
                                   " remaining: " + msg,
                               now));
    }
    bool changed = false;
    for (const auto& info : kConditionTypes) {
      auto n = std::find_if(next.begin(), next.end(), [&](const auto& c) { return c.type == info.type; });
      NamespaceCondition want =
          n != next.end() ? *n : condition(info.type, "False", info.okReason, info.okMessage, now);
      auto old = std::find_if(status.conditions.begin(), status.conditions.end(),
                              [&](const auto& c) { return c.type == info.type; });
      if (old == status.conditions.end()) {
        status.conditions.push_back(want);
        changed = true;
      } else if (old->status != want.status || old->message != want.message || old->reason != want.reason) {
        if (old->status != want.status) old->lastTransitionTime = now;
        old->status = want.status;
        old->reason = want.reason;
        old->message = want.message;
        changed = true;
      }
    }
    return changed;
  }
};

std::string key(const std::string& op, const GroupVersionResource& gvr) { return op + " " + gvr.toString(); }

// schema.GroupVersionResource.String(): "/v1, Resource=pods" for the core group, as upstream's messages print it.
std::string gvrString(const GroupVersionResource& gvr) {
  return gvr.group + "/" + gvr.version + ", Resource=" + gvr.resource;
}

// upstream: errors.IsMethodNotSupported(err) || errors.IsNotFound(err) (405 / 404); anything else, 400 included,
// is an error.
bool methodNotSupported(const Status& s) {
  return s.code() == StatusCode::kNotFound || s.code() == StatusCode::kMethodNotAllowed;
}

}  // namespace

NamespacedResourcesDeleter::NamespacedResourcesDeleter(std::shared_ptr<client::RestClient> client,
                                                       DiscoverFunc discover, std::string finalizerToken,
                                                       Clock& clock)
    : client_(std::move(client)), discover_(std::move(discover)), finalizerToken_(std::move(finalizerToken)),
      clock_(clock) {}

bool NamespacedResourcesDeleter::supported(const std::string& op, const GroupVersionResource& gvr) {
  std::lock_guard l(opMu_);
  return !notSupported_.count(key(op, gvr));
}

void NamespacedResourcesDeleter::setNotSupported(const std::string& op, const GroupVersionResource& gvr) {
  std::lock_guard l(opMu_);
  notSupported_.insert(key(op, gvr));
}

Status NamespacedResourcesDeleter::initOpCache() {
  auto discovered = discover_();
  Status err = discovered.ok() ? discovered->groupDiscoveryError() : discovered.status();
  if (!err.ok()) KLOG_ERROR("\"Unable to get all supported resources from server\" err=\"" + err.message() + "\"");
  if (!discovered.ok() || discovered->resources.empty())
    return Status(StatusCode::kUnavailable, "Unable to get any supported resources from server");
  for (const auto& r : discovered->resources) {
    GroupVersionResource gvr{r.group, r.version, r.resource};
    for (const char* op : {"list", "deletecollection"})
      if (!r.hasVerb(op)) setNotSupported(op, gvr);
  }
  return Status::Ok();
}

Result<Namespace> NamespacedResourcesDeleter::retryOnConflict(
    Namespace ns, const std::function<Result<Namespace>(const Namespace&)>& fn) {
  for (;;) {
    auto r = fn(ns);
    if (r.ok() || r.status().code() != StatusCode::kConflict) return r;
    auto latest = client::get<Namespace>(*client_, "", ns.metadata.name);
    if (!latest.ok()) return latest.status();
    if (latest->metadata.uid != ns.metadata.uid)
      return Status(StatusCode::kConflict, "namespace uid has changed across retries");
    ns = std::move(latest).value();
  }
}

Result<Namespace> NamespacedResourcesDeleter::updateNamespaceStatus(const Namespace& ns) {
  if (!ns.metadata.deletionTimestamp || ns.status.phase == "Terminating") return ns;
  Namespace copy = ns;
  copy.status.phase = "Terminating";
  return client::updateStatus(*client_, copy);
}

Result<Namespace> NamespacedResourcesDeleter::finalizeNamespace(const Namespace& ns) {
  Namespace f;
  f.apiVersion = "v1";
  f.kind = "Namespace";
  f.metadata = ns.metadata;
  f.spec = ns.spec;
  std::set<std::string> keep;
  for (const auto& x : ns.spec.finalizers)
    if (x != finalizerToken_) keep.insert(x);
  f.spec.finalizers.assign(keep.begin(), keep.end());
  auto r = client::sendObject<Namespace>(*client_, "PUT",
                                         client::resourcePath("", "v1", "namespaces", "", ns.metadata.name, "finalize"), f, {});
  if (!r.ok() && r.status().code() == StatusCode::kNotFound) return ns;
  return r;
}

NamespacedResourcesDeleter::Outcome NamespacedResourcesDeleter::deleteNamespace(const std::string& name) {
  auto got = client::get<Namespace>(*client_, "", name);
  if (!got.ok()) return {got.status().code() == StatusCode::kNotFound ? Status::Ok() : got.status()};
  if (!got->metadata.deletionTimestamp) return {};
  auto ns = retryOnConflict(*got, [this](const Namespace& n) { return updateNamespaceStatus(n); });
  if (!ns.ok()) return {ns.status().code() == StatusCode::kNotFound ? Status::Ok() : ns.status()};
  if (!ns->metadata.deletionTimestamp || ns->spec.finalizers.empty()) return {};
  Outcome o = deleteAllContent(*ns);
  if (!o.status.ok() || o.remainingEstimateSeconds > 0) return o;
  auto fin = retryOnConflict(*ns, [this](const Namespace& n) { return finalizeNamespace(n); });
  if (!fin.ok() && fin.status().code() != StatusCode::kNotFound) return {fin.status()};
  return {};
}

Result<bool> NamespacedResourcesDeleter::deleteCollection(const GroupVersionResource& gvr, const std::string& ns) {
  if (!supported("deletecollection", gvr)) return false;
  client::DeleteOptions opts;
  opts.propagationPolicy = "Background";
  Status s = client::removeCollectionDynamic(*client_, gvr, ns, {}, opts);
  if (s.ok()) return true;
  if (methodNotSupported(s)) return false;
  return s;
}

Result<std::optional<api::meta::v1::PartialObjectMetadataList>> NamespacedResourcesDeleter::listCollection(
    const GroupVersionResource& gvr, const std::string& ns) {
  if (!supported("list", gvr)) return std::optional<api::meta::v1::PartialObjectMetadataList>();
  auto l = client::listMetadataPage(*client_, gvr, ns, {});
  if (l.ok()) return std::optional<api::meta::v1::PartialObjectMetadataList>(std::move(l).value());
  if (methodNotSupported(l.status())) return std::optional<api::meta::v1::PartialObjectMetadataList>();
  return l.status();
}

Status NamespacedResourcesDeleter::deleteEachItem(const GroupVersionResource& gvr, const std::string& ns) {
  auto l = listCollection(gvr, ns);
  if (!l.ok()) return l.status();
  if (!*l) return Status::Ok();
  client::DeleteOptions opts;
  opts.propagationPolicy = "Background";
  for (const auto& item : (*l)->items) {
    Status s = client::removeDynamic(*client_, gvr, ns, item.metadata.name, opts);
    if (!s.ok() && !methodNotSupported(s)) return s;
  }
  return Status::Ok();
}

Result<int64_t> NamespacedResourcesDeleter::estimateGracefulTermination(const GroupVersionResource& gvr,
                                                                        const std::string& ns, api::Time deletedAt) {
  int64_t estimate = 0;
  if (gvr.group.empty() && gvr.resource == "pods") {
    auto pods = client::list<api::core::v1::Pod>(*client_, ns);
    if (!pods.ok()) return pods.status();
    for (const auto& p : pods->items) {
      if (p.status.phase == "Succeeded" || p.status.phase == "Failed") continue;
      if (p.spec.terminationGracePeriodSeconds) estimate = std::max(estimate, *p.spec.terminationGracePeriodSeconds);
    }
  }
  if (api::timeNow(clock_).unixSeconds - deletedAt.unixSeconds >= estimate) estimate = 0;
  return estimate;
}

std::pair<NamespacedResourcesDeleter::GVRDeletion, Status> NamespacedResourcesDeleter::deleteAllContentForGVR(
    const GroupVersionResource& gvr, const std::string& ns, api::Time deletedAt) {
  auto estimate = estimateGracefulTermination(gvr, ns, deletedAt);
  if (!estimate.ok()) return {{}, estimate.status()};
  GVRDeletion out{*estimate, 0, {}};
  auto collection = deleteCollection(gvr, ns);
  if (!collection.ok()) return {out, collection.status()};
  if (!*collection)
    if (Status s = deleteEachItem(gvr, ns); !s.ok()) return {out, s};
  auto left = listCollection(gvr, ns);
  if (!left.ok()) return {out, left.status()};
  if (!*left || (*left)->items.empty()) return {GVRDeletion{*left ? 0 : *estimate, 0, {}}, Status::Ok()};
  out.numRemaining = static_cast<int>((*left)->items.size());
  for (const auto& item : (*left)->items)
    for (const auto& f : item.metadata.finalizers) ++out.finalizersToNumRemaining[f];
  if (*estimate != 0) return {out, Status::Ok()};
  if (!out.finalizersToNumRemaining.empty()) {
    out.finalizerEstimateSeconds = kFinalizerEstimateSeconds;
    return {out, Status::Ok()};
  }
  return {out, Status(StatusCode::kInternal, "unexpected items still remain in namespace: " + ns + " for gvr: " +
                                                 gvrString(gvr))};
}

NamespacedResourcesDeleter::Outcome NamespacedResourcesDeleter::deleteAllContent(Namespace& ns) {
  const std::string& name = ns.metadata.name;
  const api::Time deletedAt = *ns.metadata.deletionTimestamp;
  ConditionUpdater cu{api::timeNow(clock_), {}, {}};
  std::vector<Status> errs;
  auto note = [&](const Status& s) {
    if (!s.ok()) errs.push_back(s);
  };
  // Discovery errors are not fatal: what was discovered is emptied, and the error keeps the namespace from being
  // finalized (content of a failed group may still exist).
  auto discovered = discover_();
  std::vector<GroupVersionResource> gvrs;
  if (!discovered.ok()) {
    note(discovered.status());
    cu.discoveryFailed(discovered.status(), 0);
  } else {
    if (Status s = discovered->groupDiscoveryError(); !s.ok()) {
      note(s);
      cu.discoveryFailed(s, discovered->failedGroupVersions.size());
    }
    for (const auto& r : discovered->resources)
      if (r.hasVerb("delete")) gvrs.push_back({r.group, r.version, r.resource});
  }
  std::sort(gvrs.begin(), gvrs.end(), [](const auto& a, const auto& b) { return a.toString() < b.toString(); });
  std::map<std::string, int> gvrRemaining, finalizersRemaining;
  int64_t estimate = 0;
  auto account = [&](const GroupVersionResource& gvr, const GVRDeletion& d) {
    estimate = std::max(estimate, d.finalizerEstimateSeconds);
    if (d.numRemaining > 0) {
      gvrRemaining[gvr.resource + "." + gvr.group] = d.numRemaining;
      for (const auto& [f, n] : d.finalizersToNumRemaining) finalizersRemaining[f] += n;
    }
  };
  auto writeConditions = [&] {
    if (cu.update(ns.status))
      if (auto r = client::updateStatus(*client_, ns); !r.ok())
        KLOG_ERROR("\"Couldn't update status condition for namespace\" namespace=\"" + name + "\" err=\"" +
                   r.status().message() + "\"");
  };
  const GroupVersionResource pods{"", "v1", "pods"};
  if (std::find(gvrs.begin(), gvrs.end(), pods) != gvrs.end()) {
    // Pods first: their controllers must not see them go while they are still being torn down.
    auto [d, s] = deleteAllContentForGVR(pods, name, deletedAt);
    if (!s.ok()) {
      note(Status(s.code(), "failed to delete pods for namespace: " + name + ", err: " + s.message()));
      cu.deleteContentErrors.push_back(s.message());
    }
    account(pods, d);
    if (d.numRemaining > 0) {
      writeConditions();
      return {NewAggregate(errs), estimate};
    }
  }
  for (const auto& gvr : gvrs) {
    if (gvr == pods) continue;
    auto [d, s] = deleteAllContentForGVR(gvr, name, deletedAt);
    if (!s.ok()) {
      note(s);
      cu.deleteContentErrors.push_back(s.message());
    }
    account(gvr, d);
  }
  cu.contentTotals(gvrRemaining, finalizersRemaining);
  writeConditions();
  return {NewAggregate(errs), estimate};
}

NamespacedResourcesDeleter::DiscoverFunc discoverPreferredNamespacedResources(
    std::shared_ptr<client::DiscoveryClient> discovery) {
  auto mu = std::make_shared<std::mutex>();
  return [discovery = std::move(discovery), mu]() -> Result<client::DiscoveryResult> {
    std::lock_guard l(*mu);
    discovery->invalidate();
    return discovery->serverPreferredNamespacedResources();
  };
}

}  // namespace kcm::controllers
