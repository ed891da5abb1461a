// persistentvolume-binder-controller: provisioning, deletion and recycling (upstream pv_controller.go's
// *Operation functions). Upstream runs each on a goroutinemap with exponential backoff on error; here they run
// in the worker that schedules them, under the same backoff, so a failing one is not retried at every sync.
#include <optional>

#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/volume/persistentvolume/pv_controller.h"
#include "controllers/volume/persistentvolume/pv_helpers.h"
#include "controllers/volume/persistentvolume/volume_plugins.h"

namespace kcm::controllers::volume::persistentvolume {
namespace {

using client::kEventTypeNormal;
using client::kEventTypeWarning;

std::string claimToClaimKey(const PersistentVolumeClaim& c) { return c.metadata.namespace_ + "/" + c.metadata.name; }
std::string q(const std::string& s) { return log::quote(s); }

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// findDeletablePlugin: the in-tree deleter of a volume, nullopt when its deleter is external.
Result<std::optional<Plugin>> findDeletablePlugin(const PersistentVolume& volume) {
  if (auto it = volume.metadata.annotations.find(kAnnDynamicallyProvisioned);
      it != volume.metadata.annotations.end() && !it->second.empty()) {
    auto p = FindDeletablePluginByName(it->second);
    if (p.ok()) return std::optional<Plugin>(*p);
    if (it->second.rfind("kubernetes.io/", 0) != 0) return std::optional<Plugin>{};  // external provisioner
    return p.status();
  }
  if (hasAnnotation(volume.metadata, kAnnMigratedTo)) return std::optional<Plugin>{};
  if (volume.spec.csi) return std::optional<Plugin>{};
  auto p = FindDeletablePluginBySpec(volume);
  if (!p.ok())
    return Status(p.status().code(), "error getting deleter volume plugin for volume \"" + volume.metadata.name +
                                         "\": " + p.status().message());
  return std::optional<Plugin>(*p);
}

}  // namespace

void PersistentVolumeController::scheduleOperation(const std::string& name, const std::function<Status()>& op) {
  KLOG_V(4, "\"scheduleOperation\" operationName=" + q(name));
  if (!operations_.mayRun(name)) {
    KLOG_V(4, "\"Operation postponed due to exponential backoff\" operationName=" + q(name));
    return;
  }
  Status st = op();
  operations_.done(name, !st.ok());
}

void PersistentVolumeController::recycleVolumeOperation(const PersistentVolume& volume) {
  const std::string& name = volume.metadata.name;
  KLOG_V(4, "\"RecycleVolumeOperation started\" volumeName=" + q(name));
  auto current = client::get<PersistentVolume>(*client_, "", name);
  if (!current.ok()) {
    KLOG_V(3, "\"Error reading persistent volume\" volumeName=" + q(name) + " err=" + q(current.status().message()));
    return;
  }
  auto released = isVolumeReleased(*current);
  if (!released.ok() || !*released) {
    KLOG_V(3, "\"Volume no longer needs recycling, skipping\" volumeName=" + q(name));
    return;
  }
  auto pods = isVolumeUsed(*current);
  // A claim of that name in our cache is a new one (the volume is released), so the pods are its, not ours.
  const bool claimCached = volume.spec.claimRef && claims_.get(volume.spec.claimRef->namespace_ + "/" +
                                                               volume.spec.claimRef->name) != nullptr;
  if (!pods.empty() && !claimCached) {
    const std::string msg = "Volume is used by pods: " + joined(pods, ",");
    KLOG_V(3, "\"Can't recycle volume\" volumeName=" + q(name) + " msg=" + q(msg));
    volumeEvent(volume, kEventTypeNormal, "VolumeFailedRecycle", msg);
    return;
  }
  auto plugin = FindRecyclablePluginBySpec(*current);
  if (!plugin.ok()) {
    auto r = updateVolumePhaseWithEvent(*current, "Failed", kEventTypeWarning, "VolumeFailedRecycle",
                                        "No recycler plugin found for the volume!");
    if (!r.ok())
      KLOG_V(4, "\"RecycleVolumeOperation: failed to mark volume as failed\" volumeName=" + q(name) + " err=" +
                    q(r.status().message()));
    return;
  }
  if (Status st = recycle(*current, *plugin); !st.ok()) {
    auto r = updateVolumePhaseWithEvent(*current, "Failed", kEventTypeWarning, "VolumeFailedRecycle",
                                        "Recycle failed: " + st.message());
    if (!r.ok())
      KLOG_V(4, "\"RecycleVolumeOperation: failed to mark volume as failed\" volumeName=" + q(name) + " err=" +
                    q(r.status().message()));
  }
}

Status PersistentVolumeController::deleteVolumeOperation(const PersistentVolume& volume) {
  const std::string& name = volume.metadata.name;
  KLOG_V(4, "\"DeleteVolumeOperation started\" volumeName=" + q(name));
  auto plugin = findDeletablePlugin(volume);
  if (!plugin.ok()) {
    auto r = updateVolumePhaseWithEvent(volume, "Failed", kEventTypeWarning, "VolumeFailedDelete",
                                        plugin.status().message());
    if (!r.ok()) {
      KLOG_V(4, "\"DeleteVolumeOperation: failed to mark volume as failed\" volumeName=" + q(name) + " err=" +
                    q(r.status().message()));
      return r.status();
    }
  }
  if (!plugin.ok() || !*plugin) {
    KLOG_V(3, "\"External deleter for volume requested, ignoring\" volumeName=" + q(name));
    return Status::Ok();
  }
  KLOG_V(5, "\"Found a deleter plugin for volume\" pluginName=" + q(pluginName(**plugin)) + " volumeName=" + q(name));
  auto current = client::get<PersistentVolume>(*client_, "", name);
  if (!current.ok()) {
    KLOG_V(3, "\"Error reading persistent volume\" volumeName=" + q(name) + " err=" + q(current.status().message()));
    return Status::Ok();
  }
  auto released = isVolumeReleased(*current);
  if (!released.ok()) return Status::Ok();
  if (!*released) {
    KLOG_V(3, "\"Volume no longer needs deletion, skipping\" volumeName=" + q(name));
    return Status::Ok();
  }
  if (Status st = doDeleteVolume(volume); !st.ok()) {
    KLOG_V(3, "\"Deletion of volume failed\" volumeName=" + q(name) + " err=" + q(st.message()));
    auto r = updateVolumePhaseWithEvent(volume, "Failed", kEventTypeWarning, "VolumeFailedDelete", st.message());
    if (!r.ok())
      KLOG_V(4, "\"DeleteVolumeOperation: failed to mark volume as failed\" volumeName=" + q(name) + " err=" +
                    q(r.status().message()));
    return st;
  }
  KLOG_V(4, "\"DeleteVolumeOperation: success\" volumeName=" + q(name));
  if (Status st = client::remove<PersistentVolume>(*client_, "", name); !st.ok())
    KLOG_V(3, "\"Failed to delete volume from database\" volumeName=" + q(name) + " err=" + q(st.message()));
  return Status::Ok();
}

Status PersistentVolumeController::doDeleteVolume(const PersistentVolume& volume) {
  KLOG_V(4, "\"doDeleteVolume\" volumeName=" + q(volume.metadata.name));
  if (!volume.spec.hostPath)
    return Status(StatusCode::kInvalid, "failed to create deleter for volume \"" + volume.metadata.name +
                                            "\": spec.PersistentVolumeSource.HostPath is nil");
  if (Status st = deleteHostPath(volume); !st.ok()) return st;
  KLOG_V(2, "\"Volume deleted\" volumeName=" + q(volume.metadata.name));
  return removeDeletionProtectionFinalizer(volume);
}

Status PersistentVolumeController::removeDeletionProtectionFinalizer(const PersistentVolume& volume) {
  auto current = client::get<PersistentVolume>(*client_, "", volume.metadata.name);
  if (!current.ok()) {
    KLOG_ERROR("\"Error reading persistent volume\" volumeName=" + q(volume.metadata.name) + " err=" +
               q(current.status().message()));
    return current.status();
  }
  PersistentVolume clone = *current;
  auto& f = clone.metadata.finalizers;
  if (std::find(f.begin(), f.end(), kPVDeletionInTreeProtectionFinalizer) == f.end()) return Status::Ok();
  std::erase(f, std::string(kPVDeletionInTreeProtectionFinalizer));
  auto r = client::update<PersistentVolume>(*client_, clone);
  if (!r.ok())
    return Status(r.status().code(), "persistent volume controller can't update finalizer: " + r.status().message());
  if (auto s = storeVolumeUpdate(*r); !s.ok())
    return Status(s.status().code(), "persistent Volume Controller can't anneal migration finalizer: " + s.status().message());
  KLOG_V(2, "\"PV in-tree protection finalizer removed from volume\" volumeName=" + q(volume.metadata.name));
  return Status::Ok();
}

Status PersistentVolumeController::provisionClaim(const PersistentVolumeClaim& claim) {
  if (!params_.enableDynamicProvisioning) return Status::Ok();
  const std::string key = claimToClaimKey(claim);
  KLOG_V(4, "\"provisionClaim: started\" PVC=" + q(key));
  // findProvisionablePlugin: the class's in-tree plugin, or none for external and migrated provisioners.
  const std::string className = GetPersistentVolumeClaimClass(claim);
  auto cls = classes_.store().get(className);
  Status failure;
  std::optional<Plugin> plugin;
  if (!cls) {
    failure = Status(StatusCode::kNotFound, "storageclass.storage.k8s.io \"" + className + "\" not found");
  } else if (!IsMigrationEnabledForPlugin(cls->provisioner)) {
    auto p = FindProvisionablePluginByName(cls->provisioner);
    if (p.ok()) plugin = *p;
    else if (cls->provisioner.rfind("kubernetes.io/", 0) == 0) failure = p.status();
  }
  if (!failure.ok()) {
    claimEvent(claim, kEventTypeWarning, "ProvisioningFailed", failure.message());
    KLOG_ERROR("\"Error finding provisioning plugin for claim\" PVC=" + q(key) + " err=" + q(failure.message()));
    return Status::Ok();  // retried at every sync of the claim
  }
  const std::string opName = "provision-" + key + "[" + claim.metadata.uid + "]";
  scheduleOperation(opName, [&] {
    return plugin ? provisionClaimOperation(claim, *cls) : provisionClaimOperationExternal(claim, *cls);
  });
  return Status::Ok();
}

Status PersistentVolumeController::provisionClaimOperation(const PersistentVolumeClaim& claim0,
                                                           const StorageClass& storageClass) {
  const std::string key = claimToClaimKey(claim0);
  const std::string claimClass = GetPersistentVolumeClaimClass(claim0);
  KLOG_V(4, "\"provisionClaimOperation started\" PVC=" + q(key) + " storageClassName=" + q(claimClass));
  const std::string plugin = kHostPathPluginName;
  const auto fail = [&](const PersistentVolumeClaim& c, const std::string& msg, Status st) {
    claimEvent(c, kEventTypeWarning, "ProvisioningFailed", msg);
    return st;
  };
  if (claim0.spec.dataSource) {
    const std::string msg = "plugin \"" + plugin + "\" is not a CSI plugin. Only CSI plugin can provision a claim with a datasource";
    KLOG_V(2, q(msg));
    return fail(claim0, msg, Status(StatusCode::kInvalid, msg));
  }
  auto claim = setClaimProvisioner(claim0, storageClass.provisioner);
  if (!claim.ok()) {
    KLOG_V(2, "\"Error saving claim\" PVC=" + q(key) + " err=" + q(claim.status().message()));
    return claim.status();
  }
  const std::string pvName = "pvc-" + claim->metadata.uid;
  auto existing = client::get<PersistentVolume>(*client_, "", pvName);
  if (existing.ok()) {
    KLOG_V(4, "\"provisionClaimOperation: volume already exists, skipping\" PVC=" + q(key));
    return Status::Ok();
  }
  if (existing.status().code() != StatusCode::kNotFound) return existing.status();

  VolumeOptions options;
  options.reclaimPolicy = storageClass.reclaimPolicy.value_or("Delete");
  options.mountOptions = api::toStdStrings(storageClass.mountOptions);
  options.pvName = pvName;
  options.pvc = &*claim;
  if (!options.mountOptions.empty()) {
    const std::string msg = "Mount options are not supported by the provisioner but StorageClass \"" +
                            storageClass.metadata.name + "\" has mount options [" + joined(options.mountOptions, " ") + "]";
    return fail(*claim, msg, Status(StatusCode::kInvalid, "provisioner \"" + plugin + "\" doesn't support mount options"));
  }
  if (!params_.enableHostPathProvisioning) {
    Status st = provisionHostPath(false, options).status();
    KLOG_V(2, "\"Failed to create provisioner for claim with StorageClass\" PVC=" + q(key) + " storageClassName=" +
                  q(storageClass.metadata.name) + " err=" + q(st.message()));
    return fail(*claim, "Failed to create provisioner: " + st.message(), st);
  }
  if (auto node = claim->metadata.annotations.find(kAnnSelectedNode); node != claim->metadata.annotations.end()) {
    if (!nodes_.store().get(node->second)) {
      Status st(StatusCode::kNotFound, "node \"" + node->second + "\" not found");
      return fail(*claim, "Failed to get target node: " + st.message(), st);
    }
  }
  auto volume = provisionHostPath(true, options);
  if (!volume.ok()) {
    rescheduleProvisioning(*claim);
    KLOG_V(2, "\"Failed to provision volume for claim with StorageClass\" PVC=" + q(key) + " storageClassName=" +
                  q(storageClass.metadata.name) + " err=" + q(volume.status().message()));
    return fail(*claim, "Failed to provision volume with StorageClass \"" + storageClass.metadata.name + "\": " +
                            volume.status().message(), volume.status());
  }
  KLOG_V(3, "\"Volume for claim created\" PVC=" + q(key) + " volumeName=" + q(volume->metadata.name));
  volume->spec.claimRef = GetClaimReference(*claim);
  volume->status.phase = "Bound";
  volume->spec.storageClassName = claimClass;
  volume->metadata.annotations[kAnnBoundByController] = "yes";
  volume->metadata.annotations[kAnnDynamicallyProvisioned] = plugin;
  if (volume->spec.persistentVolumeReclaimPolicy == "Delete")
    volume->metadata.finalizers = {kPVDeletionInTreeProtectionFinalizer};

  auto created = client::create<PersistentVolume>(*client_, "", *volume);
  if (created.ok() || created.status().code() == StatusCode::kAlreadyExists) {
    if (created.ok()) {
      KLOG_V(3, "\"Volume for claim saved\" PVC=" + q(key) + " volumeName=" + q(volume->metadata.name));
      (void)storeVolumeUpdate(*created);
    } else {
      KLOG_V(3, "\"Volume for claim already exists, reusing\" PVC=" + q(key) + " volumeName=" + q(volume->metadata.name));
    }
    KLOG_V(2, "\"Volume provisioned for claim\" PVC=" + q(key) + " volumeName=" + q(volume->metadata.name));
    claimEvent(*claim, kEventTypeNormal, "ProvisioningSucceeded",
               "Successfully provisioned volume " + volume->metadata.name + " using " + plugin);
    return Status::Ok();
  }
  // The storage exists but its PV could not be saved: remove the storage again.
  const std::string msg = "Error creating provisioned PV object for claim " + key + ": " + created.status().message() +
                          ". Deleting the volume.";
  KLOG_V(3, q(msg));
  claimEvent(*claim, kEventTypeWarning, "ProvisioningFailed", msg);
  if (Status st = deleteHostPath(*volume); !st.ok()) {
    const std::string cleanup = "Error cleaning provisioned volume for claim " + key + ": " + st.message() +
                                ". Please delete manually.";
    KLOG_V(2, q(cleanup));
    claimEvent(*claim, kEventTypeWarning, "ProvisioningCleanupFailed", cleanup);
  }
  return Status::Ok();
}

Status PersistentVolumeController::provisionClaimOperationExternal(const PersistentVolumeClaim& claim0,
                                                                   const StorageClass& storageClass) {
  const std::string key = claimToClaimKey(claim0);
  KLOG_V(4, "\"provisionClaimOperationExternal started\" PVC=" + q(key) + " storageClassName=" +
                q(GetPersistentVolumeClaimClass(claim0)));
  std::string provisioner = storageClass.provisioner;
  if (IsMigrationEnabledForPlugin(provisioner)) {
    auto driver = GetCSINameFromInTreeName(provisioner);
    if (!driver.ok()) {
      const std::string msg = "error getting CSI name for In tree plugin " + provisioner + ": " + driver.status().message();
      claimEvent(claim0, kEventTypeWarning, "ProvisioningFailed", msg);
      return driver.status();
    }
    provisioner = *driver;
  }
  auto claim = setClaimProvisioner(claim0, provisioner);
  if (!claim.ok()) {
    KLOG_V(2, "\"Error saving claim\" PVC=" + q(key) + " err=" + q(claim.status().message()));
    claimEvent(claim0, kEventTypeWarning, "ProvisioningFailed", "Error saving claim: " + claim.status().message());
    return claim.status();
  }
  const std::string msg = "Waiting for a volume to be created either by the external provisioner '" + provisioner +
                          "' or manually by the system administrator. If volume creation is delayed, please verify "
                          "that the provisioner is running and correctly registered.";
  claimEvent(*claim, kEventTypeNormal, "ExternalProvisioning", msg);
  KLOG_V(3, "\"provisionClaimOperationExternal provisioning claim\" PVC=" + q(key) + " msg=" + q(msg));
  return Status::Ok();
}

void PersistentVolumeController::rescheduleProvisioning(const PersistentVolumeClaim& claim) {
  if (!hasAnnotation(claim.metadata, kAnnSelectedNode)) return;  // not the scheduler's doing
  PersistentVolumeClaim clone = claim;
  clone.metadata.annotations.erase(kAnnSelectedNode);
  auto r = client::update<PersistentVolumeClaim>(*client_, clone);
  if (!r.ok()) {
    KLOG_V(4, "\"Failed to delete annotation 'storagehelpers.AnnSelectedNode' for PersistentVolumeClaim\" PVC=" +
                  q(claimToClaimKey(claim)) + " err=" + q(r.status().message()));
    return;
  }
  (void)storeClaimUpdate(*r);
}

}  // namespace kcm::controllers::volume::persistentvolume
