#include "controllers/storageversiongc/gc_controller.h"

#include "api/gen/apiserverinternal_v1alpha1_json.h"
#include "api/gen/coordination_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"

namespace kcm::controllers::storageversiongc {
namespace {

constexpr const char* kIdentityLeaseComponentLabelKey = "apiserver.kubernetes.io/identity";
constexpr const char* kKubeAPIServer = "kube-apiserver";
constexpr const char* kNamespaceSystem = "kube-system";

bool isKubeAPIServerLease(const Lease& l) {
  auto it = l.metadata.labels.find(kIdentityLeaseComponentLabelKey);
  return it != l.metadata.labels.end() && it->second == kKubeAPIServer;
}

}  // namespace

void SetCommonEncodingVersion(StorageVersion& sv, const api::Time& now) {
  const std::optional<std::string> old = sv.status.commonEncodingVersion;
  sv.status.commonEncodingVersion.reset();
  const auto& entries = sv.status.storageVersions;
  if (!entries.empty()) {
    bool agreed = true;
    for (const auto& e : entries) agreed &= e.encodingVersion == entries[0].encodingVersion;
    if (agreed) sv.status.commonEncodingVersion = entries[0].encodingVersion;
  }
  api::apiserverinternal::v1alpha1::StorageVersionCondition c;
  c.type = "AllEncodingVersionsEqual";
  c.observedGeneration = sv.metadata.generation;
  c.lastTransitionTime = now;
  if (sv.status.commonEncodingVersion) {
    c.status = "True", c.reason = "CommonEncodingVersionSet", c.message = "Common encoding version set";
  } else {
    c.status = "False", c.reason = "CommonEncodingVersionUnset", c.message = "Common encoding version unset";
  }
  const bool forceTransition = old && sv.status.commonEncodingVersion && *old != *sv.status.commonEncodingVersion;
  for (auto& e : sv.status.conditions) {
    if (e.type != c.type) continue;
    if (e.status != c.status || forceTransition) e.lastTransitionTime = c.lastTransitionTime;
    e.status = c.status, e.reason = c.reason, e.message = c.message, e.observedGeneration = c.observedGeneration;
    return;
  }
  sv.status.conditions.push_back(std::move(c));
}

Controller::Controller(std::shared_ptr<client::RestClient> client, informers::SharedInformer<Lease>& leases,
                       informers::SharedInformer<StorageVersion>& storageVersions, Clock& clock)
    : client_(std::move(client)), leases_(leases), storageVersions_(storageVersions), clock_(clock),
      leaseQueue_("storage_version_garbage_collector_leases",
                  [this](const std::string& k) { return processDeletedLease(k); }, clock),
      storageVersionQueue_("storage_version_garbage_collector_storageversions",
                           [this](const std::string& k) { return syncStorageVersion(k); }, clock) {
  informers::EventHandler<Lease> lh;
  lh.onDelete = [this](const auto& l, bool) { onDeleteLease(*l); };
  registrations_.push_back(leases_.addEventHandler(lh));
  informers::EventHandler<StorageVersion> sh;
  sh.onAdd = [this](const auto& sv) { enqueueStorageVersion(*sv); };
  sh.onUpdate = [this](const auto&, const auto& sv) { enqueueStorageVersion(*sv); };
  registrations_.push_back(storageVersions_.addEventHandler(sh));
}

void Controller::run(std::stop_token stop) {
  KLOG_INFO("\"Starting storage version garbage collector\"");
  std::vector<std::function<bool()>> synced = {[this] { return leases_.hasSynced(); },
                                               [this] { return storageVersions_.hasSynced(); }};
  leaseQueue_.start(1, stop, synced);
  storageVersionQueue_.start(1, stop, synced);
}

void Controller::onDeleteLease(const Lease& lease) {
  if (lease.metadata.namespace_ != kNamespaceSystem || !isKubeAPIServerLease(lease)) return;
  KLOG_V(4, "\"Observed lease deleted\" castObjName=" + log::quote(lease.metadata.name));
  leaseQueue_.enqueue(lease.metadata.name);
}

void Controller::enqueueStorageVersion(const StorageVersion& sv) {
  for (const auto& e : sv.status.storageVersions) {
    auto lease = leases_.store().get(kNamespaceSystem, e.apiServerID);
    if (!lease || !isKubeAPIServerLease(*lease)) {
      KLOG_V(4, "\"Observed storage version with invalid apiserver entry\" objName=" + log::quote(sv.metadata.name));
      storageVersionQueue_.enqueue(sv.metadata.name);
      return;
    }
  }
}

runtime::SyncResult Controller::processDeletedLease(const std::string& name) {
  // Only when the apiserver confirms the Lease is gone.
  auto lease = client::get<Lease>(*client_, kNamespaceSystem, name);
  if (lease.ok()) return runtime::SyncResult::ok();
  auto fail = [&name](const Status& st) {
    return runtime::SyncResult::error(Status(st.code(), "lease " + name + " failed with: " + st.message()));
  };
  if (lease.status().code() != StatusCode::kNotFound) return fail(lease.status());
  auto list = client::list<StorageVersion>(*client_, "");
  if (!list.ok()) return fail(list.status());
  std::vector<Status> errs;
  for (auto& sv : list->items) {
    std::vector<ServerStorageVersion> keep;
    bool stale = false;
    for (const auto& e : sv.status.storageVersions) {
      if (e.apiServerID == name) {
        stale = true;
        continue;
      }
      keep.push_back(e);
    }
    if (!stale) continue;
    if (Status st = updateOrDeleteStorageVersion(std::move(sv), std::move(keep)); !st.ok()) errs.push_back(st);
  }
  if (Status st = NewAggregate(errs); !st.ok()) return fail(st);
  return runtime::SyncResult::ok();
}

runtime::SyncResult Controller::syncStorageVersion(const std::string& name) {
  auto fail = [&name](const Status& st) {
    return runtime::SyncResult::error(Status(st.code(), "storage version " + name + " failed with: " + st.message()));
  };
  auto sv = client::get<StorageVersion>(*client_, "", name);
  if (!sv.ok()) {
    if (sv.status().code() == StatusCode::kNotFound) return runtime::SyncResult::ok();
    return fail(sv.status());
  }
  // Each entry's Lease is asked of the apiserver (not the cache): an entry stays only with a kube-apiserver's.
  std::vector<ServerStorageVersion> keep;
  bool invalid = false;
  for (const auto& e : sv->status.storageVersions) {
    auto lease = client::get<Lease>(*client_, kNamespaceSystem, e.apiServerID);
    if (!lease.ok() || !isKubeAPIServerLease(*lease)) {
      invalid = true;
      continue;
    }
    keep.push_back(e);
  }
  if (!invalid) return runtime::SyncResult::ok();
  if (Status st = updateOrDeleteStorageVersion(std::move(*sv), std::move(keep)); !st.ok()) return fail(st);
  return runtime::SyncResult::ok();
}

Status Controller::updateOrDeleteStorageVersion(StorageVersion sv, std::vector<ServerStorageVersion> keep) {
  if (keep.empty()) return client::remove<StorageVersion>(*client_, "", sv.metadata.name);
  sv.status.storageVersions = std::move(keep);
  SetCommonEncodingVersion(sv, api::Time::fromUnix(std::chrono::duration_cast<std::chrono::seconds>(
                                                       clock_.wallNow().time_since_epoch())
                                                       .count()));
  return client::updateStatus<StorageVersion>(*client_, sv).status();
}

}  // namespace kcm::controllers::storageversiongc
