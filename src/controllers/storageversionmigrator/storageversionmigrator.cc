#include "controllers/storageversionmigrator/storageversionmigrator.h"

#include <nlohmann/json.hpp>

#include "api/gen/meta_v1_json.h"
#include "api/gen/storagemigration_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/storageversionmigrator/svm_util.h"

namespace kcm::controllers::storageversionmigrator {
namespace {

using log::quote;

api::Time wallNow(Clock& c) {
  return api::Time::fromUnix(
      std::chrono::duration_cast<std::chrono::seconds>(c.wallNow().time_since_epoch()).count());
}

// isRetriableError: connection trouble, timeouts, 429, 503 and 500 are worth another try.
bool isRetriableError(const Status& s) {
  switch (s.code()) {
    case StatusCode::kTimeout:
    case StatusCode::kTooManyRequests:
    case StatusCode::kUnavailable:
    case StatusCode::kInternal:
      return true;
    default:
      return false;
  }
}

runtime::SyncResult fromStatus(const Status& s) {
  return s.ok() ? runtime::SyncResult::ok() : runtime::SyncResult::error(s);
}

}  // namespace

SVMController::SVMController(std::string controllerName, std::shared_ptr<client::RestClient> client,
                             std::shared_ptr<client::DiscoveryClient> discovery,
                             informers::SharedInformer<StorageVersionMigration>& svms, GetMonitorFunc getMonitor,
                             Clock& clock)
    : controllerName_(std::move(controllerName)), client_(std::move(client)), discovery_(std::move(discovery)),
      svms_(svms), getMonitor_(std::move(getMonitor)), clock_(clock),
      base_(controllerName_, [this](const std::string& key) { return sync(key); }, clock) {
  informers::EventHandler<StorageVersionMigration> h;
  h.onAdd = [this](const auto& s) {
    KLOG_V(4, "\"Adding\" svm=" + quote(s->metadata.name));
    base_.enqueue(s->metadata.name);
  };
  h.onUpdate = [this](const auto& o, const auto& s) {
    KLOG_V(4, "\"Updating\" svm=" + quote(o->metadata.name));
    base_.enqueue(s->metadata.name);
  };
  registrations_.push_back(svms_.addEventHandler(h));
}

void SVMController::run(std::stop_token stop) {
  KLOG_INFO("\"Starting\" controller=" + quote(controllerName_));
  base_.start(5, stop, {[this] { return svms_.hasSynced(); }});
}

runtime::SyncResult SVMController::sync(const std::string& name) {
  auto cached = svms_.store().get(name);
  if (!cached) return runtime::SyncResult::ok();
  StorageVersionMigration svm = *cached;
  if (isTerminal(svm)) {
    KLOG_V(4, "\"Migration has already succeeded or failed previously, skipping\" svm=" + quote(name));
    return runtime::SyncResult::ok();
  }
  if (svm.status.resourceVersion.empty()) {
    KLOG_V(4, "\"The latest resource version is empty. We will attempt to migrate once the resource version is "
              "available.\"");
    return runtime::SyncResult::ok();
  }
  const auto& gr = svm.spec.resource;
  const std::string grString = gr.group.empty() ? gr.resource.str() : gr.resource + "." + gr.group;
  const bool young = svm.metadata.creationTimestamp.unixSeconds + 60 > wallNow(clock_).unixSeconds;
  auto found = resourceFor(*discovery_, gr.group, gr.resource);
  if (!found.ok()) return runtime::SyncResult::error(found.status());
  if (!*found) {
    KLOG_V(4, "\"resource does not exist in our rest mapper\" resource=" + quote(grString));
    if (young)  // upstream wraps a nil error here, and says so
      return runtime::SyncResult::error(Status(
          StatusCode::kNotFound, "resource does not exist in rest mapper, requeuing to attempt again: %!w(<nil>)"));
    return fromStatus(failMigration(svm, "unable to obtain GVR from discovery"));
  }
  const client::APIResourceInfo& gvr = **found;
  MonitorView mon = getMonitor_({gvr.group, gvr.version, gvr.resource});
  if (!mon.informer)
    return runtime::SyncResult::error(
        Status(StatusCode::kNotFound, "no monitor found for resource " + gvrString(gvr)));
  if (!mon.informer->hasSynced()) {
    KLOG_V(4, "\"resource does not exist in GC\" gvr=" + quote(gvrString(gvr)));
    if (young)
      return runtime::SyncResult::error(Status(
          StatusCode::kUnavailable, "resource does not exist in GC, requeuing to attempt again: %!w(<nil>)"));
    return fromStatus(failMigration(svm, "resource does not exist in GC: %!w(<nil>)"));
  }
  const std::string gcListResourceVersion = mon.informer->lastSyncResourceVersion();
  const std::string listResourceVersion = svm.status.resourceVersion;
  auto cmp = CompareResourceVersion(gcListResourceVersion, listResourceVersion);
  if (!cmp.ok())
    return fromStatus(failMigration(
        svm, "error comparing resource versions between GC and SVM resource: " + cmp.status().message()));
  if (*cmp == -1)
    return runtime::SyncResult::error(Status(
        StatusCode::kUnavailable, "GC cache is not up to date, requeuing to attempt again. gcListResourceVersion: " +
                                      gcListResourceVersion + ", listResourceVersion: " + listResourceVersion));
  auto [err, failed] = runMigration(gvr, *mon.informer, svm, listResourceVersion);
  if (!err.ok()) return runtime::SyncResult::error(err);
  if (!failed) KLOG_V(4, "\"Finished syncing svm resource\" key=" + quote(name) + " gr=" + quote(grString));
  return runtime::SyncResult::ok();
}

std::pair<Status, bool> SVMController::runMigration(
    const client::APIResourceInfo& gvr, informers::SharedInformer<api::meta::v1::PartialObjectMetadata>& monitor,
    StorageVersionMigration& svm, const std::string& listResourceVersion) {
  const auto all = monitor.store().list();
  const int totalObjects = static_cast<int>(all.size());
  // Objects written after the recorded resourceVersion are already stored at the current version.
  std::vector<std::shared_ptr<const api::meta::v1::PartialObjectMetadata>> candidates;
  for (const auto& o : all) {
    auto cmp = CompareResourceVersion(o->metadata.resourceVersion, listResourceVersion);
    if (!cmp.ok()) {
      KLOG_ERROR("\"Unable to compare the resource version of the resource\" namespace=" +
                 quote(o->metadata.namespace_) + " name=" + quote(o->metadata.name) + " gvr=" + quote(gvrString(gvr)) +
                 " accessorRV=" + quote(o->metadata.resourceVersion) + " listResourceVersion=" +
                 quote(listResourceVersion) + " error=" + quote(cmp.status().message()));
      return {failMigration(svm, cmp.status().message()), true};
    }
    if (*cmp == 1) continue;
    candidates.push_back(o);
  }
  int candidatesToPatch = static_cast<int>(candidates.size());
  for (const auto& o : candidates) {
    Status st = patchObject(gvr, *o);
    if (st.code() == StatusCode::kConflict || st.code() == StatusCode::kNotFound) {
      KLOG_V(6, "\"Resource ignored due to conflict\" namespace=" + quote(o->metadata.namespace_) +
                    " name=" + quote(o->metadata.name) + " gvr=" + quote(gvrString(gvr)));
      --candidatesToPatch;
      continue;
    }
    if (isRetriableError(st)) {
      KLOG_V(6, "\"Resource patch failed due to an error that can be retried\" namespace=" +
                    quote(o->metadata.namespace_) + " name=" + quote(o->metadata.name) + " err=" + quote(st.message()));
      (void)updateRunningCondition(svm, candidatesToPatch, totalObjects, st);
      return {st, false};
    }
    if (!st.ok()) {
      KLOG_ERROR("\"Failed to migrate the resource\" err=" + quote(st.message()) + " namespace=" +
                 quote(o->metadata.namespace_) + " name=" + quote(o->metadata.name) + " gvr=" + quote(gvrString(gvr)));
      return {failMigrationWithObjectsMigrated(svm, st.message(), candidatesToPatch, totalObjects), true};
    }
    --candidatesToPatch;
    KLOG_V(4, "\"Successfully migrated the resource\" namespace=" + quote(o->metadata.namespace_) +
                  " name=" + quote(o->metadata.name) + " gvr=" + quote(gvrString(gvr)));
  }
  const api::Time now = wallNow(clock_);
  api::meta::v1::Condition running;
  running.type = kMigrationRunning, running.status = "True", running.lastTransitionTime = now;
  running.reason = kMigrationRunningReason;
  running.message = migrationRunningMessage(&candidatesToPatch, &totalObjects, nullptr);
  const bool changedRunning = SetStatusCondition(svm.status.conditions, running, now);
  api::meta::v1::Condition succeeded;
  succeeded.type = kMigrationSucceeded, succeeded.status = "True", succeeded.lastTransitionTime = now;
  succeeded.reason = kMigrationSuccessStatusReason, succeeded.message = "Migration completed";
  const bool changedSucceeded = SetStatusCondition(svm.status.conditions, succeeded, now);
  if (changedRunning || changedSucceeded)
    if (auto r = client::updateStatus<StorageVersionMigration>(*client_, svm); !r.ok()) return {r.status(), false};
  return {Status::Ok(), false};
}

Status SVMController::patchObject(const client::APIResourceInfo& gvr, const api::meta::v1::PartialObjectMetadata& obj) {
  // An empty change but for the resourceVersion, which makes it conditional on the object being unchanged.
  nlohmann::ordered_json body = {{"kind", gvr.kind},
                                 {"apiVersion", gvr.groupVersion()},
                                 {"metadata", {{"resourceVersion", obj.metadata.resourceVersion}}}};
  client::Request req;
  req.method = "PATCH";
  req.path = client::resourcePath(gvr.group, gvr.version, gvr.resource, gvr.namespaced ? obj.metadata.namespace_ : "",
                                  obj.metadata.name);
  req.body = body.dump();
  req.contentType = "application/merge-patch+json";
  req.query = {{"fieldManager", controllerName_}};
  return client_->send(req).status();
}

Status SVMController::updateRunningCondition(StorageVersionMigration& svm, int candidatesToPatch, int totalObjects,
                                             const Status& err) {
  const api::Time now = wallNow(clock_);
  api::meta::v1::Condition c;
  c.type = kMigrationRunning, c.status = "True", c.lastTransitionTime = now, c.reason = kMigrationRunningReason;
  c.message = migrationRunningMessage(&candidatesToPatch, &totalObjects, &err);
  if (!SetStatusCondition(svm.status.conditions, c, now)) return Status::Ok();
  return client::updateStatus<StorageVersionMigration>(*client_, svm).status();
}

Status SVMController::failMigration(StorageVersionMigration& svm, const std::string& err) {
  const api::Time now = wallNow(clock_);
  api::meta::v1::Condition c;
  c.type = kMigrationFailed, c.status = "True", c.lastTransitionTime = now, c.reason = kMigrationFailedStatusReason;
  c.message = "migration encountered unhandled error: " + err;
  if (!SetStatusCondition(svm.status.conditions, c, now)) return Status::Ok();
  return client::updateStatus<StorageVersionMigration>(*client_, svm).status();
}

Status SVMController::failMigrationWithObjectsMigrated(StorageVersionMigration& svm, const std::string& err,
                                                       int candidatesToPatch, int totalObjects) {
  const api::Time now = wallNow(clock_);
  api::meta::v1::Condition running;
  running.type = kMigrationRunning, running.status = "True", running.lastTransitionTime = now;
  running.reason = kMigrationRunningReason;
  running.message = migrationRunningMessage(&candidatesToPatch, &totalObjects, nullptr);
  const bool changedRunning = SetStatusCondition(svm.status.conditions, running, now);
  api::meta::v1::Condition failed;
  failed.type = kMigrationFailed, failed.status = "True", failed.lastTransitionTime = now;
  failed.reason = kMigrationFailedStatusReason;
  failed.message = std::to_string(candidatesToPatch) + "/" + std::to_string(totalObjects) +
                   " not yet migrated. migration encountered unhandled error: " + err;
  const bool changedFailed = SetStatusCondition(svm.status.conditions, failed, now);
  if (!changedRunning && !changedFailed) return Status::Ok();
  return client::updateStatus<StorageVersionMigration>(*client_, svm).status();
}

}  // namespace kcm::controllers::storageversionmigrator
