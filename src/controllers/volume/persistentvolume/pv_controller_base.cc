// persistentvolume-binder-controller: construction, queues, caches, resync and the migration annotations
// (upstream pv_controller_base.go and index.go).
#include <algorithm>

#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/volume/common/volume_common.h"
#include "controllers/volume/persistentvolume/pv_controller.h"
#include "controllers/volume/persistentvolume/pv_helpers.h"
#include "controllers/volume/persistentvolume/volume_plugins.h"

namespace kcm::controllers::volume::persistentvolume {
namespace {

template <class T>
std::string keyOf(const T& o) {
  return informers::metaNamespaceKey(o);
}

runtime::SyncResult toResult(const Status& st) {
  if (st.ok()) return runtime::SyncResult::ok();
  // Version conflicts are frequent and the next sync recovers from them (upstream logs them at V(3)).
  if (st.code() == StatusCode::kConflict) return runtime::SyncResult::ignorable(st);
  return runtime::SyncResult::error(st);
}

// storeObjectUpdate: the object goes in unless the cache holds a newer resourceVersion. True when stored.
template <class T>
Result<bool> storeObjectUpdate(informers::Store<T>& store, const T& obj, const char* className) {
  const std::string key = keyOf(obj);
  auto old = store.get(key);
  if (old) {
    const auto parse = [](const std::string& rv) -> std::optional<long long> {
      try {
        size_t n = 0;
        long long v = std::stoll(rv, &n);
        if (n == rv.size()) return v;
      } catch (...) {
      }
      return std::nullopt;
    };
    auto newRV = parse(obj.metadata.resourceVersion);
    if (!newRV)
      return Status(StatusCode::kInvalid, "error parsing ResourceVersion \"" + obj.metadata.resourceVersion + "\" of " +
                                              className + " \"" + key + "\"");
    auto oldRV = parse(old->metadata.resourceVersion);
    if (!oldRV)
      return Status(StatusCode::kInvalid, "error parsing old ResourceVersion \"" + old->metadata.resourceVersion +
                                              "\" of " + className + " \"" + key + "\"");
    if (*oldRV > *newRV) {
      KLOG_V(4, "\"storeObjectUpdate: ignoring obj\" storageClassName=" + log::quote(className) + " objName=" +
                    log::quote(key) + " resourceVersion=" + log::quote(obj.metadata.resourceVersion));
      return false;
    }
  }
  store.upsert(key, std::make_shared<const T>(obj));
  return true;
}

// updateMigrationAnnotations: pv.kubernetes.io/migrated-to follows the provisioner's migration state.
bool updateMigrationAnnotations(api::StringMap<api::String>& ann, bool claim) {
  if (ann.empty()) return false;
  auto it = ann.find(claim ? kAnnStorageProvisioner : kAnnDynamicallyProvisioned);
  if (it == ann.end() && claim) it = ann.find(kAnnBetaStorageProvisioner);
  if (it == ann.end()) return false;
  const std::string provisioner = it->second;
  auto migrated = ann.find(kAnnMigratedTo);
  const std::string migratedTo = migrated == ann.end() ? "" : migrated->second;
  if (IsMigrationEnabledForPlugin(provisioner)) {
    auto driver = GetCSINameFromInTreeName(provisioner);
    if (!driver.ok()) return false;
    if (migratedTo != *driver) {
      ann[kAnnMigratedTo] = *driver;
      return true;
    }
  } else if (!migratedTo.empty()) {
    ann.erase(kAnnMigratedTo);
    return true;
  }
  return false;
}

bool hasFinalizer(const std::vector<api::String>& f, const char* name) {
  return std::find(f.begin(), f.end(), name) != f.end();
}
void dropFinalizer(std::vector<api::String>& f, const char* name) { std::erase(f, api::String(name)); }

// modifyDeletionFinalizers: kubernetes.io/pv-controller on dynamically provisioned in-tree volumes with policy
// Delete, off with Retain/Recycle or once migrated; the external provisioner's finalizer off in-tree volumes.
bool modifyDeletionFinalizers(PersistentVolume& volume) {
  auto it = volume.metadata.annotations.find(kAnnDynamicallyProvisioned);
  if (it == volume.metadata.annotations.end()) return false;
  auto& f = volume.metadata.finalizers;
  const std::string provisioner = it->second;
  if (IsMigrationEnabledForPlugin(provisioner)) {
    if (!hasFinalizer(f, kPVDeletionInTreeProtectionFinalizer)) return false;
    dropFinalizer(f, kPVDeletionInTreeProtectionFinalizer);
    return true;
  }
  if (provisioner.rfind("kubernetes.io/", 0) != 0) return false;
  bool modified = false;
  const std::string& policy = volume.spec.persistentVolumeReclaimPolicy;
  if (policy == "Delete" && !hasFinalizer(f, kPVDeletionInTreeProtectionFinalizer)) {
    KLOG_V(4, "\"Adding in-tree pv deletion protection finalizer on volume\" volumeName=" +
                  log::quote(volume.metadata.name));
    f.emplace_back(kPVDeletionInTreeProtectionFinalizer);
    modified = true;
  } else if ((policy == "Retain" || policy == "Recycle") && hasFinalizer(f, kPVDeletionInTreeProtectionFinalizer)) {
    KLOG_V(4, "\"Removing in-tree pv deletion protection finalizer on volume\" volumeName=" +
                  log::quote(volume.metadata.name));
    dropFinalizer(f, kPVDeletionInTreeProtectionFinalizer);
    modified = true;
  }
  if (hasFinalizer(f, kPVDeletionProtectionFinalizer)) {
    KLOG_V(4, "\"Removing external pv deletion protection finalizer on volume\" volumeName=" +
                  log::quote(volume.metadata.name));
    dropFinalizer(f, kPVDeletionProtectionFinalizer);
    modified = true;
  }
  return modified;
}

}  // namespace

PersistentVolumeController::PersistentVolumeController(
    std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
    informers::SharedInformer<PersistentVolume>& volumes, informers::SharedInformer<PersistentVolumeClaim>& claims,
    informers::SharedInformer<StorageClass>& classes, informers::SharedInformer<Pod>& pods,
    informers::SharedInformer<Node>& nodes, ControllerParameters params, Clock& clock)
    : client_(std::move(client)), recorder_(std::move(recorder)), volumeInformer_(volumes), claimInformer_(claims),
      classes_(classes), pods_(pods), nodes_(nodes), params_(params), clock_(clock), operations_(clock),
      claimQueue_(std::make_unique<runtime::ControllerBase>(
          "claims", [this](const std::string& k) { return syncClaimByKey(k); }, clock)),
      volumeQueue_(std::make_unique<runtime::ControllerBase>(
          "volumes", [this](const std::string& k) { return syncVolumeByKey(k); }, clock)) {
  volumes_.addIndexer("accessmodes", [](const PersistentVolume& pv) {
    return std::vector<std::string>{GetAccessModesAsString(pv.spec.accessModes)};
  });
  informers::EventHandler<PersistentVolume> vh;
  vh.onAdd = [this](const auto& v) { enqueueVolume(v->metadata.name); };
  vh.onUpdate = [this](const auto&, const auto& v) { enqueueVolume(v->metadata.name); };
  vh.onDelete = [this](const auto& v, bool) { enqueueVolume(v->metadata.name); };
  registrations_.push_back(volumeInformer_.addEventHandler(vh));
  informers::EventHandler<PersistentVolumeClaim> ch;
  ch.onAdd = [this](const auto& c) { enqueueClaim(keyOf(*c)); };
  ch.onUpdate = [this](const auto&, const auto& c) { enqueueClaim(keyOf(*c)); };
  ch.onDelete = [this](const auto& c, bool) { enqueueClaim(keyOf(*c)); };
  registrations_.push_back(claimInformer_.addEventHandler(ch));
  pods_.store().addIndexer(common::kPodPVCIndex, common::PodPVCIndexFunc);
  // A recycler pod's progress is its volume's: sync the volume when the pod changes.
  const auto recyclerPod = [this](const Pod& p) {
    const std::string prefix = kRecyclerPodPrefix;
    if (p.metadata.namespace_ == "default" && p.metadata.name.rfind(prefix, 0) == 0)
      enqueueVolume(p.metadata.name.substr(prefix.size()));
  };
  informers::EventHandler<Pod> ph;
  ph.onUpdate = [recyclerPod](const auto&, const auto& p) { recyclerPod(*p); };
  ph.onDelete = [recyclerPod](const auto& p, bool) { recyclerPod(*p); };
  registrations_.push_back(pods_.addEventHandler(ph));
}

void PersistentVolumeController::Run(std::stop_token stop) {
  KLOG_INFO("\"Starting persistent volume controller\"");
  auto synced = [this] {
    if (!(volumeInformer_.hasSynced() && claimInformer_.hasSynced() && classes_.hasSynced() && pods_.hasSynced() &&
          nodes_.hasSynced()))
      return false;
    std::call_once(cachesInitialized_, [this] {
      initializeCaches();
      registerRetroactiveStorageClassMetrics();
    });
    return true;
  };
  resync_.start(clock_, params_.syncPeriod, stop, [this] { resync(); }, synced);
  volumeQueue_->start(1, stop, {synced});
  claimQueue_->start(1, stop, {synced});
}

PersistentVolumeController::~PersistentVolumeController() {
  registrations_.clear();
  resync_.stop();
  // Each queue waits for its syncs as it goes; a sync of the other one may still add to it until then.
  for (auto* q : {&claimQueue_, &volumeQueue_}) {
    std::unique_ptr<runtime::ControllerBase> going;
    {
      std::unique_lock l(queuesMu_);
      going = std::move(*q);
    }
    going.reset();
  }
}

void PersistentVolumeController::enqueueClaim(const std::string& key) {
  std::shared_lock l(queuesMu_);
  if (claimQueue_) claimQueue_->enqueue(key);
}

void PersistentVolumeController::enqueueVolume(const std::string& name) {
  std::shared_lock l(queuesMu_);
  if (volumeQueue_) volumeQueue_->enqueue(name);
}

void PersistentVolumeController::initializeCaches() {
  for (const auto& v : volumeInformer_.store().list())
    if (auto r = storeVolumeUpdate(*v); !r.ok()) KLOG_ERROR("\"Error updating volume cache\" err=" + log::quote(r.status().message()));
  for (const auto& c : claimInformer_.store().list())
    if (auto r = storeClaimUpdate(*c); !r.ok()) KLOG_ERROR("\"Error updating claim cache\" err=" + log::quote(r.status().message()));
  KLOG_V(4, "\"Controller initialized\"");
}

Result<bool> PersistentVolumeController::storeVolumeUpdate(const PersistentVolume& volume) {
  return storeObjectUpdate(volumes_, volume, "volume");
}
Result<bool> PersistentVolumeController::storeClaimUpdate(const PersistentVolumeClaim& claim) {
  return storeObjectUpdate(claims_, claim, "claim");
}

Status PersistentVolumeController::updateVolume(const PVPtr& volume) {
  auto stored = storeVolumeUpdate(*volume);
  if (!stored.ok()) return stored.status();
  if (!*stored) return Status::Ok();
  Status st = syncVolume(*volume);
  if (!st.ok() && st.code() != StatusCode::kConflict)
    KLOG_ERROR("\"Could not sync volume\" volumeName=" + log::quote(volume->metadata.name) + " err=" + log::quote(st.message()));
  return st;
}

void PersistentVolumeController::deleteVolume(const PersistentVolume& volume) {
  volumes_.erase(volume.metadata.name);
  KLOG_V(4, "\"volume deleted\" volumeName=" + log::quote(volume.metadata.name));
  if (!volume.spec.claimRef) return;
  // The claim learns at once that its volume is gone (Lost) instead of at the next resync.
  const std::string claimKey = volume.spec.claimRef->namespace_ + "/" + volume.spec.claimRef->name;
  KLOG_V(5, "\"deleteVolume: scheduling sync of claim\" PVC=" + log::quote(claimKey) + " volumeName=" +
                log::quote(volume.metadata.name));
  enqueueClaim(claimKey);
}

Status PersistentVolumeController::updateClaim(const PVCPtr& claim) {
  auto stored = storeClaimUpdate(*claim);
  if (!stored.ok()) return stored.status();
  if (!*stored) return Status::Ok();
  Status st = syncClaim(*claim);
  if (!st.ok() && st.code() != StatusCode::kConflict)
    KLOG_ERROR("\"Could not sync claim\" PVC=" + log::quote(keyOf(*claim)) + " err=" + log::quote(st.message()));
  return st;
}

void PersistentVolumeController::deleteClaim(const PersistentVolumeClaim& claim) {
  claims_.erase(keyOf(claim));
  KLOG_V(4, "\"Claim deleted\" PVC=" + log::quote(keyOf(claim)));
  if (claim.spec.volumeName.empty()) {
    KLOG_V(5, "\"deleteClaim: volume not bound\" PVC=" + log::quote(keyOf(claim)));
    return;
  }
  // The volume is released at once instead of at the next resync.
  KLOG_V(5, "\"deleteClaim: scheduling sync of volume\" PVC=" + log::quote(keyOf(claim)) + " volumeName=" +
                log::quote(claim.spec.volumeName));
  enqueueVolume(claim.spec.volumeName);
}

runtime::SyncResult PersistentVolumeController::syncVolumeByKey(const std::string& key) {
  KLOG_V(5, "\"syncVolumeByKey\" volumeKey=" + log::quote(key));
  if (auto volume = volumeInformer_.store().get(key)) return toResult(updateVolume(volume));
  auto cached = volumes_.get(key);
  if (!cached) {
    KLOG_V(2, "\"Deletion of volume was already processed\" volumeKey=" + log::quote(key));
    return runtime::SyncResult::ok();
  }
  deleteVolume(*cached);
  return runtime::SyncResult::ok();
}

runtime::SyncResult PersistentVolumeController::syncClaimByKey(const std::string& key) {
  KLOG_V(5, "\"syncClaimByKey\" claimKey=" + log::quote(key));
  if (auto claim = claimInformer_.store().get(key)) return toResult(updateClaim(claim));
  auto cached = claims_.get(key);
  if (!cached) {
    KLOG_V(2, "\"Deletion of claim was already processed\" claimKey=" + log::quote(key));
    return runtime::SyncResult::ok();
  }
  deleteClaim(*cached);
  return runtime::SyncResult::ok();
}

void PersistentVolumeController::resync() {
  KLOG_V(4, "\"Resyncing PV controller\"");
  for (const auto& c : claimInformer_.store().list()) enqueueClaim(keyOf(*c));
  for (const auto& v : volumeInformer_.store().list()) enqueueVolume(v->metadata.name);
}

Result<PersistentVolumeClaim> PersistentVolumeController::updateClaimMigrationAnnotations(
    const PersistentVolumeClaim& claim) {
  PersistentVolumeClaim clone = claim;
  if (!updateMigrationAnnotations(clone.metadata.annotations, true)) return clone;
  auto r = client::update<PersistentVolumeClaim>(*client_, clone);
  if (!r.ok())
    return Status(r.status().code(),
                  "persistent Volume Controller can't anneal migration annotations: " + r.status().message());
  if (auto s = storeClaimUpdate(*r); !s.ok())
    return Status(s.status().code(),
                  "persistent Volume Controller can't anneal migration annotations: " + s.status().message());
  return r;
}

Result<PersistentVolume> PersistentVolumeController::updateVolumeMigrationAnnotationsAndFinalizers(
    const PersistentVolume& volume) {
  PersistentVolume clone = volume;
  const bool annModified = updateMigrationAnnotations(clone.metadata.annotations, false);
  const bool finalizersModified = modifyDeletionFinalizers(clone);
  if (!annModified && !finalizersModified) return clone;
  const std::string what = "persistent Volume Controller can't anneal migration annotations or finalizer: ";
  auto r = client::update<PersistentVolume>(*client_, clone);
  if (!r.ok()) return Status(r.status().code(), what + r.status().message());
  if (auto s = storeVolumeUpdate(*r); !s.ok()) return Status(s.status().code(), what + s.status().message());
  return r;
}

Result<PersistentVolumeClaim> PersistentVolumeController::setClaimProvisioner(const PersistentVolumeClaim& claim,
                                                                              const std::string& provisioner) {
  if (auto it = claim.metadata.annotations.find(kAnnStorageProvisioner);
      it != claim.metadata.annotations.end() && it->second == provisioner)
    return claim;
  PersistentVolumeClaim clone = claim;
  clone.metadata.annotations[kAnnBetaStorageProvisioner] = provisioner;
  clone.metadata.annotations[kAnnStorageProvisioner] = provisioner;
  updateMigrationAnnotations(clone.metadata.annotations, true);
  auto r = client::update<PersistentVolumeClaim>(*client_, clone);
  if (!r.ok()) return r;
  if (auto s = storeClaimUpdate(*r); !s.ok()) return s.status();
  return r;
}

Result<PersistentVolumeController::PVPtr> PersistentVolumeController::findBestMatchForClaim(
    const PersistentVolumeClaim& claim, bool delayBinding) const {
  // Every access-mode set some volume has that includes all the claim asks for, fewest modes first.
  std::vector<std::vector<api::String>> candidates;
  std::vector<std::string> seen;
  for (const auto& v : volumes_.list()) {
    const std::string key = GetAccessModesAsString(v->spec.accessModes);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    auto modes = GetAccessModesFromString(key);
    if (ContainsAllAccessModes(modes, claim.spec.accessModes)) candidates.push_back(std::move(modes));
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const auto& a, const auto& b) { return a.size() < b.size(); });
  for (const auto& modes : candidates) {
    auto volumes = volumes_.byIndex("accessmodes", GetAccessModesAsString(modes));
    auto best = FindMatchingVolume(claim, volumes, delayBinding, params_.volumeAttributesClass);
    if (!best.ok() || *best) return best;
  }
  return PVPtr{};
}

Result<bool> PersistentVolumeController::IsDelayBindingMode(const PersistentVolumeClaim& claim) const {
  const std::string className = GetPersistentVolumeClaimClass(claim);
  if (className.empty()) return false;
  auto cls = classes_.store().get(className);
  if (!cls) return false;
  if (!cls->volumeBindingMode)
    return Status(StatusCode::kInvalid, "VolumeBindingMode not set for StorageClass \"" + className + "\"");
  return *cls->volumeBindingMode == "WaitForFirstConsumer";
}

void PersistentVolumeController::claimEvent(const PersistentVolumeClaim& c, const char* type,
                                            const std::string& reason, const std::string& msg) {
  recorder_->event({"PersistentVolumeClaim", "v1", c.metadata.namespace_, c.metadata.name, c.metadata.uid,
                    c.metadata.resourceVersion, ""},
                   type, reason, msg);
}

void PersistentVolumeController::volumeEvent(const PersistentVolume& v, const char* type, const std::string& reason,
                                             const std::string& msg) {
  recorder_->event({"PersistentVolume", "v1", "", v.metadata.name, v.metadata.uid, v.metadata.resourceVersion, ""},
                   type, reason, msg);
}

}  // namespace kcm::controllers::volume::persistentvolume
