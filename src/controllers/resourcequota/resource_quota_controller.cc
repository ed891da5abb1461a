#include "controllers/resourcequota/resource_quota_controller.h"

#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "quota/core_evaluators.h"

namespace kcm::controllers::resourcequota {

using api::core::v1::ResourceQuota;

namespace {

std::string resourceKey(const client::APIResourceInfo& r) { return r.group + "/" + r.version + "/" + r.resource; }


// Semantic equality of two resource lists (Quantity.Cmp per name; nil and empty alike).
bool sameLimits(const api::StringMap<api::Quantity>& a, const api::StringMap<api::Quantity>& b) {
  return quota::equals(quota::toResourceList(a), quota::toResourceList(b));
}

}  // namespace

ResourceQuotaController::ResourceQuotaController(std::shared_ptr<client::RestClient> client,
                                                 informers::SharedInformerFactory& factory,
                                                 std::shared_ptr<client::DiscoveryClient> discovery,
                                                 std::shared_ptr<quota::Registry> registry, Options opts, Clock& clock)
    : client_(std::move(client)), quotas_(factory.forType<ResourceQuota>()), factory_(factory),
      discovery_(std::move(discovery)), registry_(std::move(registry)), opts_(opts), clock_(clock),
      primary_("resourcequota_primary", [this](const std::string& k) { return syncResourceQuotaFromKey(k); }, clock),
      priority_("resourcequota_priority", [this](const std::string& k) { return syncResourceQuotaFromKey(k); }, clock) {
  informers::EventHandler<ResourceQuota> h;
  h.onAdd = [this](const auto& rq) { addQuota(*rq); };
  // Status updates are ours: only a change of spec.hard calls for a recalculation (the full resync covers the rest).
  h.onUpdate = [this](const auto& old, const auto& cur) {
    if (!sameLimits(old->spec.hard, cur->spec.hard)) addQuota(*cur);
  };
  h.onDelete = [this](const auto& rq, bool) { primary_.enqueueObject(*rq); };
  registrations_.push_back(quotas_.addEventHandler(h, opts_.resyncPeriod > Clock::Duration::zero()
                                                          ? opts_.resyncPeriod
                                                          : Clock::Duration::max()));
  if (discovery_)
    monitor_ = std::make_unique<QuotaMonitor>(
        factory_, quota::defaultIgnoredResources(),
        [this](const std::string& gr, const std::string& ns) { replenishQuota(gr, ns); }, *registry_, clock_);
}

ResourceQuotaController::~ResourceQuotaController() {
  registrations_.clear();
  discoverySync_.stop();
  fullResync_.stop();
}

Result<std::vector<client::APIResourceInfo>> ResourceQuotaController::quotableResources(
    std::map<std::string, std::string>* failedGroups, Status* partial) {
  discovery_->invalidate();
  auto discovered = discovery_->serverPreferredNamespacedResources();
  if (!discovered.ok()) return Status(discovered.status().code(), "failed to discover resources: " + discovered.status().message());
  std::vector<client::APIResourceInfo> out;
  for (const auto& r : discovered->resources)
    if (r.hasVerb("create") && r.hasVerb("list") && r.hasVerb("watch") && r.hasVerb("delete")) out.push_back(r);
  if (failedGroups) *failedGroups = discovered->failedGroupVersions;
  *partial = discovered->groupDiscoveryError();
  return out;
}

Status ResourceQuotaController::init() {
  if (!monitor_) return Status::Ok();
  Status partial;
  auto resources = quotableResources(nullptr, &partial);
  if (!resources.ok()) return resources.status();
  // A group that failed discovery is not fatal: a later sync picks it up. Logged with the constructor's logger.
  if (!partial.ok())
    KLOG_ERROR("\"Initial discovery check failure, continuing and counting on future sync update\" "
               "logger=\"resourcequota-controller\" err=" + log::quote(partial.message()));
  monitor_->syncMonitors(*resources, /*fromConstructor=*/true);
  return Status::Ok();
}

void ResourceQuotaController::resyncMonitors() {
  if (!monitor_) return;
  // Discovery first, outside the lock the workers' monitorsReady() takes (the Periodic runs one pass at a time).
  std::map<std::string, std::string> failed;
  Status partial;
  auto resources = quotableResources(&failed, &partial);
  if (!resources.ok() || !partial.ok())
    KLOG_ERROR("\"Error during resource discovery\" err=" +
               log::quote(resources.ok() ? partial.message() : resources.status().message()));
  // The next period retries; a partial answer with some resources goes on, keeping the failed groups' monitors.
  if (!resources.ok() || (!partial.ok() && resources->empty())) return;
  std::lock_guard l(syncMu_);
  std::set<std::string> newResources;
  for (const auto& r : *resources) newResources.insert(resourceKey(r));
  // A group that failed discovery keeps the resources it had.
  std::vector<client::APIResourceInfo> keep = *resources;
  if (!failed.empty())
    for (const auto& old : oldResources_) {
      const auto slash = old.rfind('/');
      const std::string gv = old.substr(0, slash), group = gv.substr(0, gv.find('/')),
                        version = gv.substr(gv.find('/') + 1);
      if (failed.count(group.empty() ? version : group + "/" + version) && newResources.insert(old).second) {
        client::APIResourceInfo info;
        info.group = group, info.version = version, info.resource = old.substr(slash + 1), info.namespaced = true;
        keep.push_back(info);
      }
    }
  if (newResources == oldResources_) {
    KLOG_V(4, "\"no resource updates from discovery, skipping resource quota sync\"");
    return;
  }
  KLOG_V(2, "\"syncing resource quota controller with updated resources from discovery\" diff=\"" +
                client::printResourceDiff(oldResources_, newResources) + "\"");
  auto counts = monitor_->syncMonitors(keep);
  if (running_ && counts.added > 0) factory_.start(*running_);
  oldResources_ = std::move(newResources);
  // upstream waits (workers paused) up to one period for the monitors to sync.
  pausedUntil_ = clock_.now() + opts_.discoveryPeriod;
  paused_ = true;
}

bool ResourceQuotaController::monitorsReady() {
  if (!paused_.load()) return true;
  std::lock_guard l(syncMu_);
  if (!paused_) return true;
  if (monitor_->isSynced()) {
    paused_ = false;
    KLOG_V(2, "\"synced quota controller\"");
    return true;
  }
  if (clock_.now() >= pausedUntil_) {
    paused_ = false;
    KLOG_ERROR("\"Timed out waiting for quota monitor sync\"");
    return true;
  }
  return false;
}

void ResourceQuotaController::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting resource quota controller\"");
  {
    std::lock_guard l(syncMu_);
    running_ = stop;
  }
  if (monitor_) {
    monitor_->run(stop);
    discoverySync_.start(clock_, opts_.discoveryPeriod, stop, [this] { resyncMonitors(); });
  }
  std::vector<std::function<bool()>> synced = {[this] { return quotas_.hasSynced(); }};
  if (monitor_) synced.push_back([this] { return monitor_->isSynced(/*fromConstructor=*/true); });
  primary_.start(workers, stop, synced);
  priority_.start(workers, stop, synced);
  if (opts_.resyncPeriod > Clock::Duration::zero()) {
    fullResync_.start(clock_, opts_.resyncPeriod, stop, [this] { enqueueAll(); });
  } else {
    KLOG_INFO("\"periodic quota controller resync disabled\"");
  }
}

void ResourceQuotaController::enqueueAll() {
  for (const auto& rq : quotas_.store().list()) primary_.enqueueObject(*rq);
  KLOG_V(4, "\"Resource quota controller queued all resource quota for full calculation of usage\"");
}

void ResourceQuotaController::addQuota(const ResourceQuota& rq) {
  // A declared limit not yet in status, or one without a usage an evaluator could compute: first.
  if (!sameLimits(rq.spec.hard, rq.status.hard)) {
    priority_.enqueueObject(rq);
    return;
  }
  for (const auto& [constraint, _] : rq.status.hard) {
    if (rq.status.used.contains(constraint)) continue;
    for (const auto& e : registry_->list())
      if (!e->matchingResources({constraint}).empty()) {
        priority_.enqueueObject(rq);
        return;
      }
  }
  primary_.enqueueObject(rq);
}

runtime::SyncResult ResourceQuotaController::syncResourceQuotaFromKey(const std::string& key) {
  if (monitor_ && !monitorsReady()) return runtime::SyncResult::after(std::chrono::seconds(1));
  auto rq = quotas_.store().get(key);
  if (!rq) {
    KLOG_INFO("\"Resource quota has been deleted\" key=\"" + key + "\"");
    return runtime::SyncResult::ok();
  }
  Status s = syncResourceQuota(*rq);
  if (!s.ok()) return runtime::SyncResult::error(s);
  return runtime::SyncResult::ok();
}

Status ResourceQuotaController::syncResourceQuota(const ResourceQuota& rq) {
  const bool statusLimitsDirty = !sameLimits(rq.spec.hard, rq.status.hard);
  bool dirty = statusLimitsDirty || rq.status.hard.empty() || rq.status.used.empty();
  const quota::ResourceList hard = quota::toResourceList(rq.spec.hard);
  const quota::ResourceList oldUsed = quota::toResourceList(rq.status.used);
  quota::ResourceList used = oldUsed;
  auto usage = quota::calculateUsage(rq.metadata.namespace_, api::toStdStrings(rq.spec.scopes), hard, *registry_,
                                     rq.spec.scopeSelector ? &*rq.spec.scopeSelector : nullptr);
  // On an error the other resources' usage is still written.
  for (auto& [k, v] : usage.used) used[k] = v;
  used = quota::mask(used, quota::resourceNames(hard));
  dirty = dirty || !quota::equals(used, oldUsed);
  Status err = usage.error;
  if (dirty) {
    ResourceQuota updated = rq;
    updated.status = {};
    updated.status.hard = quota::toQuantities(hard);
    updated.status.used = quota::toQuantities(used);
    auto r = client::updateStatus(*client_, updated);
    if (!r.ok()) err = err.ok() ? r.status() : Status(err.code(), "[" + err.message() + ", " + r.status().message() + "]");
  }
  return err;
}

void ResourceQuotaController::replenishQuota(const std::string& groupResource, const std::string& ns) {
  auto evaluator = registry_->get(groupResource);
  if (!evaluator) return;
  // Only the quotas of that namespace tracking a resource of this kind.
  for (const auto& rq : quotas_.store().byIndex(informers::kNamespaceIndex, ns)) {
    std::vector<quota::ResourceName> names;
    for (const auto& [k, _] : rq->status.hard) names.push_back(k);
    if (!evaluator->matchingResources(names).empty()) primary_.enqueueObject(*rq);
  }
}

}  // namespace kcm::controllers::resourcequota
