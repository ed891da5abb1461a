#include "controllers/storageversionmigrator/resourceversion.h"

#include "api/gen/meta_v1_json.h"
#include "api/gen/storagemigration_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/storageversionmigrator/svm_util.h"

namespace kcm::controllers::storageversionmigrator {
namespace {

// A namespace name no object can be in: the list returns only its resourceVersion.
constexpr const char* kFakeSVMNamespaceName = "@fake:svm_ns!";

api::Time wallNow(Clock& c) {
  return api::Time::fromUnix(
      std::chrono::duration_cast<std::chrono::seconds>(c.wallNow().time_since_epoch()).count());
}

// Discovery's resources of one group-version; NotFound when the group-version is not served.
Result<std::vector<client::APIResourceInfo>> resourcesForGroupVersion(client::DiscoveryClient& d,
                                                                      const client::APIResourceInfo& gvr) {
  auto all = d.serverGroupsAndResources();
  if (!all.ok()) return all.status();
  if (auto f = all->failedGroupVersions.find(gvr.groupVersion()); f != all->failedGroupVersions.end())
    return Status(StatusCode::kUnavailable, f->second);
  std::vector<client::APIResourceInfo> out;
  for (const auto& r : all->resources)
    if (r.group == gvr.group && r.version == gvr.version) out.push_back(r);
  if (out.empty())
    return Status(StatusCode::kNotFound, "the server could not find the requested resource");
  return out;
}

}  // namespace

ResourceVersionController::ResourceVersionController(std::shared_ptr<client::RestClient> client,
                                                     std::shared_ptr<client::DiscoveryClient> discovery,
                                                     informers::SharedInformer<StorageVersionMigration>& svms,
                                                     Clock& clock)
    : client_(std::move(client)), discovery_(std::move(discovery)), svms_(svms), clock_(clock),
      base_("resource-version-controller", [this](const std::string& key) { return sync(key); }, clock) {
  informers::EventHandler<StorageVersionMigration> h;
  h.onAdd = [this](const auto& s) {
    KLOG_V(4, "\"Adding\" svm=" + log::quote(s->metadata.name));
    base_.enqueue(s->metadata.name);
  };
  h.onUpdate = [this](const auto& o, const auto& s) {
    KLOG_V(4, "\"Updating\" svm=" + log::quote(o->metadata.name));
    base_.enqueue(s->metadata.name);
  };
  registrations_.push_back(svms_.addEventHandler(h));
}

void ResourceVersionController::run(std::stop_token stop) {
  KLOG_INFO("\"Starting\" controller=\"resource-version-controller\"");
  base_.start(1, stop, {[this] { return svms_.hasSynced(); }});
}

runtime::SyncResult ResourceVersionController::sync(const std::string& name) {
  auto cached = svms_.store().get(name);
  if (!cached) return runtime::SyncResult::ok();
  StorageVersionMigration svm = *cached;
  const auto& conds = svm.status.conditions;
  if (!IsStatusConditionTrue(conds, kMigrationRunning)) {
    KLOG_V(4, "\"Migration is not running yet, skipping\" svm=" + log::quote(name));
    return runtime::SyncResult::ok();
  }
  if (isTerminal(svm)) {
    KLOG_V(4, "\"Migration has already succeeded or failed previously, skipping\" svm=" + log::quote(name));
    return runtime::SyncResult::ok();
  }
  if (!svm.status.resourceVersion.empty()) {
    KLOG_V(4, "\"Resource version is already set\" svm=" + log::quote(name));
    return runtime::SyncResult::ok();
  }
  auto found = resourceFor(*discovery_, svm.spec.resource.group, svm.spec.resource.resource);
  if (!found.ok()) return runtime::SyncResult::error(found.status());
  if (!*found) {
    // A resource just added (a new CRD) may not be discovered yet: retry for a minute, then give up.
    if (svm.metadata.creationTimestamp.unixSeconds + 60 > wallNow(clock_).unixSeconds) {
      resetMapperIfStale();
      return runtime::SyncResult::error(Status(StatusCode::kNotFound,
                                               "resource does not exist in our rest mapper, requeuing to attempt again"));
    }
    Status st = failMigration(std::move(svm), "resource does not exist in discovery");
    return st.ok() ? runtime::SyncResult::ok() : runtime::SyncResult::error(st);
  }
  const client::APIResourceInfo& gvr = **found;
  auto migratable = isResourceMigratable(gvr);
  if (!migratable.ok()) return runtime::SyncResult::error(migratable.status());
  if (!*migratable) {
    const std::string err = "resource \"" + gvrString(gvr) + "\" does not support discovery operations: [update patch list]";
    KLOG_ERROR("\"resource is not able to be migrated, not retrying\" err=" + log::quote(err) +
               " gvr=" + log::quote(gvrString(gvr)));
    Status st = failMigration(std::move(svm), err);
    return st.ok() ? runtime::SyncResult::ok() : runtime::SyncResult::error(st);
  }
  auto latest = getLatestResourceVersion(gvr);
  if (!latest.ok()) return runtime::SyncResult::error(latest.status());
  if (auto valid = CompareResourceVersion(*latest, *latest); !valid.ok()) {
    Status st = failMigration(std::move(svm), "latest resourceVersion for " + gvrString(gvr) +
                                                  " is not valid: " + valid.status().message());
    return st.ok() ? runtime::SyncResult::ok() : runtime::SyncResult::error(st);
  }
  svm.status.resourceVersion = *latest;
  auto r = client::updateStatus<StorageVersionMigration>(*client_, svm);
  if (!r.ok())
    return runtime::SyncResult::error(
        Status(r.status().code(), "error updating status for " + name + ": " + r.status().message()));
  KLOG_V(4, "\"Resource version has been successfully added\" svm=" + log::quote(name));
  return runtime::SyncResult::ok();
}

Result<bool> ResourceVersionController::isResourceMigratable(const client::APIResourceInfo& gvr) {
  auto list = resourcesForGroupVersion(*discovery_, gvr);
  if (!list.ok()) {
    if (list.status().code() == StatusCode::kNotFound) return false;
    return list.status();
  }
  for (const auto& r : *list)
    if (r.resource == gvr.resource) return r.hasVerb("update") && r.hasVerb("patch") && r.hasVerb("list");
  return Status(StatusCode::kNotFound, "resource \"" + gvrString(gvr) + "\" not found in discovery");
}

Result<std::string> ResourceVersionController::getLatestResourceVersion(const client::APIResourceInfo& gvr) {
  auto list = resourcesForGroupVersion(*discovery_, gvr);
  if (!list.ok()) return list.status();
  std::optional<bool> namespaced;
  for (const auto& r : *list)
    if (r.resource == gvr.resource) namespaced = r.namespaced;
  if (!namespaced) return Status(StatusCode::kNotFound, "resource \"" + gvrString(gvr) + "\" not found");
  client::ListOptions o;
  o.limit = 1;
  auto page = client::listMetadataPage(*client_, {gvr.group, gvr.version, gvr.resource},
                                       *namespaced ? kFakeSVMNamespaceName : "", o);
  if (!page.ok())
    return Status(page.status().code(),
                  "error getting latest resourceVersion for " + gvrString(gvr) + ": " + page.status().message());
  return page->metadata.resourceVersion.str();
}

Status ResourceVersionController::failMigration(StorageVersionMigration svm, const std::string& message) {
  setStatusConditions(svm, kMigrationFailed, kMigrationFailedStatusReason, message, wallNow(clock_));
  return client::updateStatus<StorageVersionMigration>(*client_, svm).status();
}

void ResourceVersionController::resetMapperIfStale() {
  std::lock_guard l(resetMu_);
  if (clock_.now() - lastReset_ > std::chrono::seconds(10)) {
    discovery_->invalidate();
    lastReset_ = clock_.now();
  }
}

}  // namespace kcm::controllers::storageversionmigrator
