// persistentvolume-binder-controller: the claim and volume state machine (upstream pv_controller.go).
#include "controllers/volume/persistentvolume/pv_controller.h"

#include <algorithm>
#include <set>

#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"
#include "controllers/volume/common/volume_common.h"
#include "controllers/volume/persistentvolume/pv_helpers.h"

namespace kcm::controllers::volume::persistentvolume {

namespace {
metrics::Counter& retroactiveTotal() {
  static auto& c = metrics::Registry::global().counter(
      "retroactive_storageclass_total", "Total number of retroactive StorageClass assignments to persistent volume claim");
  return c;
}
metrics::Counter& retroactiveErrors() {
  static auto& c = metrics::Registry::global().counter(
      "retroactive_storageclass_errors_total",
      "Total number of failed retroactive StorageClass assignments to persistent volume claim");
  return c;
}
}  // namespace

void registerRetroactiveStorageClassMetrics() {
  retroactiveTotal();
  retroactiveErrors();
}

void RecordRetroactiveStorageClassMetric(bool success) {
  retroactiveTotal().inc();
  if (!success) retroactiveErrors().inc();
}

namespace {

using client::kEventTypeNormal;
using client::kEventTypeWarning;

std::string claimToClaimKey(const PersistentVolumeClaim& c) { return c.metadata.namespace_ + "/" + c.metadata.name; }
std::string claimrefToClaimKey(const api::core::v1::ObjectReference& r) { return r.namespace_ + "/" + r.name; }
std::string q(const std::string& s) { return log::quote(s); }

std::string getClaimStatusForLogging(const PersistentVolumeClaim& c) {
  return "phase: " + c.status.phase + ", bound to: \"" + c.spec.volumeName + "\", bindCompleted: " +
         (hasAnnotation(c.metadata, kAnnBindCompleted) ? "true" : "false") +
         ", boundByController: " + (hasAnnotation(c.metadata, kAnnBoundByController) ? "true" : "false");
}

std::string getVolumeStatusForLogging(const PersistentVolume& v) {
  std::string claim;
  if (v.spec.claimRef)
    claim = v.spec.claimRef->namespace_ + "/" + v.spec.claimRef->name + " (uid: " + v.spec.claimRef->uid + ")";
  return "phase: " + v.status.phase + ", bound to: \"" + claim + "\", boundByController: " +
         (hasAnnotation(v.metadata, kAnnBoundByController) ? "true" : "false");
}

bool isNotFound(const Status& s) { return s.code() == StatusCode::kNotFound; }

}  // namespace

Status PersistentVolumeController::syncClaim(const PersistentVolumeClaim& original) {
  KLOG_V(4, "\"Synchronizing PersistentVolumeClaim\" PVC=" + q(claimToClaimKey(original)) +
                " claimStatus=" + q(getClaimStatusForLogging(original)));
  auto claim = updateClaimMigrationAnnotations(original);
  if (!claim.ok()) return claim.status();
  if (!hasAnnotation(claim->metadata, kAnnBindCompleted)) return syncUnboundClaim(*claim);
  return syncBoundClaim(*claim);
}

Status PersistentVolumeController::emitEventForUnboundDelayBindingClaim(const PersistentVolumeClaim& claim) {
  std::string reason = "WaitForFirstConsumer";
  std::string message = "waiting for first consumer to be created before binding";
  auto podNames = findNonScheduledPodsByPVC(claim);
  if (!podNames.empty()) {
    reason = "WaitForPodScheduled";
    if (podNames.size() > 1) {
      std::string joined;
      for (const auto& n : podNames) joined += (joined.empty() ? "" : ",") + n;
      message = "waiting for pods " + joined + " to be scheduled";
    } else {
      message = "waiting for pod " + podNames[0] + " to be scheduled";
    }
  }
  claimEvent(claim, kEventTypeNormal, reason, message);
  return Status::Ok();
}

Status PersistentVolumeController::syncUnboundClaim(const PersistentVolumeClaim& claim) {
  const std::string key = claimToClaimKey(claim);
  if (claim.spec.volumeName.empty()) {
    // Any volume will do.
    auto delayBinding = IsDelayBindingMode(claim);
    if (!delayBinding.ok()) return delayBinding.status();
    auto volume = findBestMatchForClaim(claim, *delayBinding);
    if (!volume.ok()) {
      KLOG_V(2, "\"Synchronizing unbound PersistentVolumeClaim, Error finding PV for claim\" PVC=" + q(key) +
                    " err=" + q(volume.status().message()));
      return Status(volume.status().code(), "error finding PV for claim \"" + key + "\": " + volume.status().message());
    }
    if (!*volume) {
      KLOG_V(4, "\"Synchronizing unbound PersistentVolumeClaim, no volume found\" PVC=" + q(key));
      KLOG_V(4, "\"Attempting to assign storage class to unbound PersistentVolumeClaim\" PVC=" + q(key));
      auto updated = assignDefaultStorageClass(claim);
      if (!updated.ok()) RecordRetroactiveStorageClassMetric(false);
      else if (*updated) RecordRetroactiveStorageClassMetric(true);
      if (!updated.ok())
        return Status(updated.status().code(),
                      "can't update PersistentVolumeClaim[\"" + key + "\"]: " + updated.status().message());
      if (*updated) {
        KLOG_V(4, "\"PersistentVolumeClaim update successful, restarting claim sync\" PVC=" + q(key));
        return Status::Ok();
      }
      if (*delayBinding && !IsDelayBindingProvisioning(claim)) {
        // No pod using this claim has been scheduled yet.
        if (Status st = emitEventForUnboundDelayBindingClaim(claim); !st.ok()) return st;
      } else if (!GetPersistentVolumeClaimClass(claim).empty()) {
        // Provisioning updates the claim itself; binding follows in a later sync.
        return provisionClaim(claim);
      } else {
        claimEvent(claim, kEventTypeNormal, "FailedBinding",
                   "no persistent volumes available for this claim and no storage class is set");
      }
      auto r = updateClaimStatus(claim, "Pending", nullptr);
      return r.ok() ? Status::Ok() : r.status();
    }
    KLOG_V(4, "\"Synchronizing unbound PersistentVolumeClaim, volume found\" PVC=" + q(key) + " volumeName=" +
                  q((*volume)->metadata.name) + " volumeStatus=" + q(getVolumeStatusForLogging(**volume)));
    return bind(**volume, claim);
  }

  // The claim asks for a specific volume.
  KLOG_V(4, "\"Synchronizing unbound PersistentVolumeClaim, volume requested\" PVC=" + q(key) + " volumeName=" +
                q(claim.spec.volumeName));
  auto volume = volumes_.get(claim.spec.volumeName);
  if (!volume) {
    KLOG_V(4, "\"Synchronizing unbound PersistentVolumeClaim, volume requested and not found, will try again next "
              "time\" PVC=" + q(key) + " volumeName=" + q(claim.spec.volumeName));
    auto r = updateClaimStatus(claim, "Pending", nullptr);
    return r.ok() ? Status::Ok() : r.status();
  }
  KLOG_V(4, "\"Synchronizing unbound PersistentVolumeClaim, volume requested and found\" PVC=" + q(key) +
                " volumeName=" + q(claim.spec.volumeName) + " volumeStatus=" + q(getVolumeStatusForLogging(*volume)));
  if (!volume->spec.claimRef) {
    KLOG_V(4, "\"Synchronizing unbound PersistentVolumeClaim, volume is unbound, binding\" PVC=" + q(key));
    if (Status bad = checkVolumeSatisfyClaim(*volume, claim, params_.volumeAttributesClass); !bad.ok()) {
      KLOG_V(4, "\"Can't bind the claim to volume\" volumeName=" + q(volume->metadata.name) + " err=" + q(bad.message()));
      claimEvent(claim, kEventTypeWarning, "VolumeMismatch",
                 "Cannot bind to requested volume \"" + volume->metadata.name + "\": " + bad.message());
      auto r = updateClaimStatus(claim, "Pending", nullptr);
      return r.ok() ? Status::Ok() : r.status();
    }
    return bind(*volume, claim);
  }
  if (IsVolumeBoundToClaim(*volume, claim)) {
    KLOG_V(4, "\"Synchronizing unbound PersistentVolumeClaim, volume already bound, finishing the binding\" PVC=" + q(key));
    return bind(*volume, claim);
  }
  // The volume is someone else's.
  const std::string msg = "volume \"" + volume->metadata.name + "\" already bound to a different claim.";
  if (!hasAnnotation(claim.metadata, kAnnBoundByController)) {
    KLOG_V(4, "\"Synchronizing unbound PersistentVolumeClaim, volume already bound to different claim by user, will "
              "retry later\" PVC=" + q(key));
    claimEvent(claim, kEventTypeWarning, "FailedBinding", msg);
    auto r = updateClaimStatus(claim, "Pending", nullptr);
    return r.ok() ? Status::Ok() : r.status();
  }
  KLOG_V(4, "\"Synchronizing unbound PersistentVolumeClaim, volume already bound to different claim by controller, "
            "THIS SHOULD NEVER HAPPEN\" PVC=" + q(key) + " boundClaim=" + q(claimrefToClaimKey(*volume->spec.claimRef)));
  claimEvent(claim, kEventTypeWarning, "FailedBinding", msg);
  return Status(StatusCode::kInternal, "invalid binding of claim \"" + key + "\" to volume \"" +
                                           claim.spec.volumeName + "\": volume already claimed by \"" +
                                           claimrefToClaimKey(*volume->spec.claimRef) + "\"");
}

Status PersistentVolumeController::syncBoundClaim(const PersistentVolumeClaim& claim) {
  const auto lost = [&](const std::string& reason, const std::string& message) {
    auto r = updateClaimStatusWithEvent(claim, "Lost", nullptr, kEventTypeWarning, reason, message);
    return r.ok() ? Status::Ok() : r.status();
  };
  if (claim.spec.volumeName.empty())
    return lost("ClaimLost", "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!");
  auto volume = volumes_.get(claim.spec.volumeName);
  if (!volume) return lost("ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!");
  KLOG_V(4, "\"Synchronizing bound PersistentVolumeClaim, volume found\" PVC=" + q(claimToClaimKey(claim)) +
                " volumeName=" + q(claim.spec.volumeName) + " volumeStatus=" + q(getVolumeStatusForLogging(*volume)));
  if (!volume->spec.claimRef) {
    // The volume came unbound (or its update has not reached us yet): bind it again.
    KLOG_V(4, "\"Synchronizing bound PersistentVolumeClaim, volume is unbound, fixing\" PVC=" + q(claimToClaimKey(claim)));
    return bind(*volume, claim);
  }
  if (volume->spec.claimRef->uid == claim.metadata.uid) {
    KLOG_V(4, "\"Synchronizing bound PersistentVolumeClaim, claim is already correctly bound\" PVC=" +
                  q(claimToClaimKey(claim)));
    return bind(*volume, claim);
  }
  return lost("ClaimMisbound", "Two claims are bound to the same volume, this one is bound incorrectly");
}

Result<PersistentVolumeController::PVCPtr> PersistentVolumeController::claimForVolume(const PersistentVolume& volume) {
  const auto& ref = *volume.spec.claimRef;
  const std::string claimName = claimrefToClaimKey(ref);
  PVCPtr claim = claims_.get(claimName);
  if (!claim && volume.status.phase != "Released" && volume.status.phase != "Failed") {
    // A volume bound by an external provisioner or binder may be ahead of our cache: ask the informer, then the
    // apiserver, before treating the claim as gone.
    claim = claimInformer_.store().get(ref.namespace_, ref.name);
    if (!claim) {
      auto live = client::get<PersistentVolumeClaim>(*client_, ref.namespace_, ref.name);
      if (!live.ok() && !isNotFound(live.status())) return live.status();
      if (live.ok()) claim = std::make_shared<const PersistentVolumeClaim>(std::move(*live));
    }
  }
  if (!claim) {
    KLOG_V(4, "\"Synchronizing PersistentVolume, claim not found\" PVC=" + q(claimName) + " volumeName=" +
                  q(volume.metadata.name));
    return claim;
  }
  KLOG_V(4, "\"Synchronizing PersistentVolume, claim found\" PVC=" + q(claimName) + " claimStatus=" +
                q(getClaimStatusForLogging(*claim)) + " volumeName=" + q(volume.metadata.name));
  if (claim->metadata.uid != ref.uid) {
    // Our copy may predate the claim the volume points to: the apiserver decides.
    KLOG_V(4, "\"Maybe cached claim is not the newest one, we should fetch it from apiserver\" PVC=" + q(claimName));
    auto live = client::get<PersistentVolumeClaim>(*client_, ref.namespace_, ref.name);
    if (!live.ok() && !isNotFound(live.status())) return live.status();
    if (!live.ok() || live->metadata.uid != ref.uid) {
      KLOG_V(4, "\"Synchronizing PersistentVolume, claim has a newer UID than pv.ClaimRef, the old one must have been "
                "deleted\" PVC=" + q(claimName) + " volumeName=" + q(volume.metadata.name));
      return PVCPtr{};
    }
    KLOG_V(4, "\"Synchronizing PersistentVolume, claim has a same UID with pv.ClaimRef\" PVC=" + q(claimName) +
                  " volumeName=" + q(volume.metadata.name));
    claim = std::make_shared<const PersistentVolumeClaim>(std::move(*live));
  }
  return claim;
}

Status PersistentVolumeController::syncVolume(const PersistentVolume& original) {
  KLOG_V(4, "\"Synchronizing PersistentVolume\" volumeName=" + q(original.metadata.name) + " volumeStatus=" +
                q(getVolumeStatusForLogging(original)));
  auto annealed = updateVolumeMigrationAnnotationsAndFinalizers(original);
  if (!annealed.ok()) return annealed.status();
  PersistentVolume volume = std::move(*annealed);
  const std::string& name = volume.metadata.name;
  const auto phase = [&](const char* p) {
    auto r = updateVolumePhase(volume, p, "");
    return r.ok() ? Status::Ok() : r.status();
  };
  if (!volume.spec.claimRef) {
    KLOG_V(4, "\"Synchronizing PersistentVolume, volume is unused\" volumeName=" + q(name));
    return phase("Available");
  }
  const std::string claimKey = claimrefToClaimKey(*volume.spec.claimRef);
  if (volume.spec.claimRef->uid.empty()) {
    // Reserved for a claim that has not been bound to it yet: the claim's sync does that.
    KLOG_V(4, "\"Synchronizing PersistentVolume, volume is pre-bound to claim\" PVC=" + q(claimKey) + " volumeName=" + q(name));
    return phase("Available");
  }
  KLOG_V(4, "\"Synchronizing PersistentVolume, volume is bound to claim\" PVC=" + q(claimKey) + " volumeName=" + q(name));
  auto claim = claimForVolume(volume);
  if (!claim.ok()) return claim.status();

  if (!*claim) {
    // The claim is gone: release the volume (once) and apply its reclaim policy. A Failed phase stays, so the
    // user sees the failure while the reclaim is retried.
    if (volume.status.phase != "Released" && volume.status.phase != "Failed") {
      KLOG_V(2, "\"Volume is released and reclaim policy will be executed\" volumeName=" + q(name) + " reclaimPolicy=" +
                    q(volume.spec.persistentVolumeReclaimPolicy));
      auto r = updateVolumePhase(volume, "Released", "");
      if (!r.ok()) return r.status();
      volume = std::move(*r);
    }
    if (Status st = reclaimVolume(volume); !st.ok()) return st;
    if (volume.spec.persistentVolumeReclaimPolicy == "Retain")
      KLOG_V(4, "\"PersistentVolume references a claim that is not found\" PVC=" + q(claimKey) + " claimUID=" +
                    q(volume.spec.claimRef->uid) + " volumeName=" + q(name));
    return Status::Ok();
  }
  const PersistentVolumeClaim& c = **claim;
  if (c.spec.volumeName.empty()) {
    if (CheckVolumeModeMismatches(c.spec, volume.spec)) {
      // findBestMatchForClaim will never offer this volume to the claim: say why, on both.
      volumeEvent(volume, kEventTypeWarning, "VolumeMismatch",
                  "Cannot bind PersistentVolume to requested PersistentVolumeClaim \"" + c.metadata.name +
                      "\" due to incompatible volumeMode.");
      claimEvent(c, kEventTypeWarning, "VolumeMismatch",
                 "Cannot bind PersistentVolume \"" + name + "\" to requested PersistentVolumeClaim due to "
                 "incompatible volumeMode.");
      return Status::Ok();
    }
    if (hasAnnotation(volume.metadata, kAnnBoundByController))
      KLOG_V(4, "\"Synchronizing PersistentVolume, volume not bound yet, waiting for syncClaim to fix it\" volumeName=" + q(name));
    else
      KLOG_V(4, "\"Synchronizing PersistentVolume, volume was bound and got unbound (by user?), waiting for syncClaim "
                "to fix it\" volumeName=" + q(name));
    // The claim's sync finishes the binding; queue it now rather than at the next resync.
    enqueueClaim(claimToClaimKey(c));
    return Status::Ok();
  }
  if (c.spec.volumeName == name) {
    KLOG_V(4, "\"Synchronizing PersistentVolume, all is bound\" volumeName=" + q(name));
    return phase("Bound");
  }
  // The claim is bound to another volume.
  if (hasAnnotation(volume.metadata, kAnnDynamicallyProvisioned) && volume.spec.persistentVolumeReclaimPolicy == "Delete") {
    // Provisioned for this claim, which went elsewhere: not needed any more.
    if (volume.status.phase != "Released" && volume.status.phase != "Failed") {
      KLOG_V(2, "\"Dynamically provisioned volume is released and it will be deleted\" volumeName=" + q(name));
      auto r = updateVolumePhase(volume, "Released", "");
      if (!r.ok()) return r.status();
      volume = std::move(*r);
    }
    return reclaimVolume(volume);
  }
  if (hasAnnotation(volume.metadata, kAnnBoundByController))
    KLOG_V(4, "\"Synchronizing PersistentVolume, volume is bound by controller to a claim that is bound to another "
              "volume, unbinding\" volumeName=" + q(name));
  else
    KLOG_V(4, "\"Synchronizing PersistentVolume, volume is bound by user to a claim that is bound to another volume, "
              "waiting for the claim to get unbound\" volumeName=" + q(name));
  return unbindVolume(volume);
}

Result<PersistentVolumeClaim> PersistentVolumeController::updateClaimStatus(const PersistentVolumeClaim& claim,
                                                                            const std::string& phase,
                                                                            const PersistentVolume* volume) {
  const std::string key = claimToClaimKey(claim);
  KLOG_V(4, "\"Updating PersistentVolumeClaim status\" PVC=" + q(key) + " setPhase=" + q(phase));
  bool dirty = false;
  PersistentVolumeClaim clone = claim;
  if (claim.status.phase != phase) clone.status.phase = phase, dirty = true;
  if (!volume) {
    if (!claim.status.accessModes.empty()) clone.status.accessModes.clear(), dirty = true;
    if (!claim.status.capacity.empty()) clone.status.capacity.clear(), dirty = true;
    if (claim.status.currentVolumeAttributesClassName) clone.status.currentVolumeAttributesClassName.reset(), dirty = true;
  } else {
    if (claim.status.accessModes != volume->spec.accessModes) clone.status.accessModes = volume->spec.accessModes, dirty = true;
    // Capacity only when the claim becomes Bound: a later difference can be deliberate (filesystem vs device).
    if (claim.status.phase != phase) {
      auto volumeCap = volume->spec.capacity.find("storage");
      if (volumeCap == volume->spec.capacity.end())
        return Status(StatusCode::kInvalid, "PersistentVolume \"" + volume->metadata.name + "\" is without a storage capacity");
      auto claimCap = claim.status.capacity.find("storage");
      if (auto pre = volume->metadata.annotations.find(kAnnPreResizeCapacity); pre != volume->metadata.annotations.end()) {
        KLOG_V(2, "\"Volume requires filesystem resize: setting pvc status capacity\" PVC=" + q(key) + " volumeName=" +
                      q(volume->metadata.name) + " statusCapacity=" + q(pre->second));
        auto preQty = api::Quantity::parse(pre->second);
        if (!preQty) {
          KLOG_INFO("\"Parsing pre-resize-capacity from PV failed\" volumeName=" + q(volume->metadata.name));
          preQty = volumeCap->second;
        }
        clone.status.capacity["storage"] = *preQty;
        dirty = true;
      } else if (claimCap == claim.status.capacity.end() || volumeCap->second.compare(claimCap->second) != 0) {
        clone.status.capacity = volume->spec.capacity;
        dirty = true;
      }
    }
    // The attributes class is set here only while binding; afterwards it is the resizer's.
    if (params_.volumeAttributesClass && claim.status.phase == "Pending" && phase == "Bound" &&
        claim.status.currentVolumeAttributesClassName != volume->spec.volumeAttributesClassName) {
      clone.status.currentVolumeAttributesClassName = volume->spec.volumeAttributesClassName;
      dirty = true;
    }
  }
  if (!dirty) {
    KLOG_V(4, "\"Updating PersistentVolumeClaim status, phase already set\" PVC=" + q(key) + " phase=" + q(phase));
    return claim;
  }
  auto r = client::updateStatus<PersistentVolumeClaim>(*client_, clone);
  if (!r.ok()) {
    KLOG_V(4, "\"Updating PersistentVolumeClaim status, set phase failed\" PVC=" + q(key) + " phase=" + q(phase) +
                  " err=" + q(r.status().message()));
    return r;
  }
  if (auto s = storeClaimUpdate(*r); !s.ok()) return s.status();
  KLOG_V(2, "\"Claim entered phase\" PVC=" + q(key) + " phase=" + q(phase));
  return r;
}

Result<PersistentVolumeClaim> PersistentVolumeController::updateClaimStatusWithEvent(
    const PersistentVolumeClaim& claim, const std::string& phase, const PersistentVolume* volume, const char* type,
    const std::string& reason, const std::string& message) {
  if (claim.status.phase == phase) {
    KLOG_V(4, "\"Updating updateClaimStatusWithEvent, phase already set\" PVC=" + q(claimToClaimKey(claim)) +
                  " phase=" + q(phase));
    return claim;
  }
  auto r = updateClaimStatus(claim, phase, volume);
  if (!r.ok()) return r;
  KLOG_V(3, "\"Claim changed status\" PVC=" + q(claimToClaimKey(claim)) + " phase=" + q(phase) + " message=" + q(message));
  claimEvent(*r, type, reason, message);
  return r;
}

Result<PersistentVolume> PersistentVolumeController::updateVolumePhase(const PersistentVolume& volume,
                                                                       const std::string& phase,
                                                                       const std::string& message) {
  const std::string& name = volume.metadata.name;
  KLOG_V(4, "\"Updating PersistentVolume\" volumeName=" + q(name) + " setPhase=" + q(phase));
  if (volume.status.phase == phase) {
    KLOG_V(4, "\"Updating PersistentVolume: phase already set\" volumeName=" + q(name) + " phase=" + q(phase));
    return volume;
  }
  PersistentVolume clone = volume;
  clone.status.phase = phase;
  clone.status.message = message;
  auto r = client::updateStatus<PersistentVolume>(*client_, clone);
  if (!r.ok()) {
    KLOG_V(4, "\"Updating PersistentVolume: set phase failed\" volumeName=" + q(name) + " phase=" + q(phase) +
                  " err=" + q(r.status().message()));
    return r;
  }
  if (auto s = storeVolumeUpdate(*r); !s.ok()) return s.status();
  KLOG_V(2, "\"Volume entered phase\" volumeName=" + q(name) + " phase=" + q(phase));
  return r;
}

Result<PersistentVolume> PersistentVolumeController::updateVolumePhaseWithEvent(const PersistentVolume& volume,
                                                                                const std::string& phase,
                                                                                const char* type,
                                                                                const std::string& reason,
                                                                                const std::string& message) {
  if (volume.status.phase == phase) return volume;
  auto r = updateVolumePhase(volume, phase, message);
  if (!r.ok()) return r;
  KLOG_V(3, "\"Volume changed status\" volumeName=" + q(volume.metadata.name) + " changedPhase=" + q(phase) +
                " message=" + q(message));
  volumeEvent(*r, type, reason, message);
  return r;
}

Result<bool> PersistentVolumeController::assignDefaultStorageClass(const PersistentVolumeClaim& claim) {
  if (PersistentVolumeClaimHasClass(claim)) return false;
  // util.GetDefaultClass: the newest default class, then the first by name.
  std::shared_ptr<const StorageClass> best;
  for (const auto& c : classes_.store().list()) {
    const auto& a = c->metadata.annotations;
    const auto isTrue = [&](const char* k) { auto it = a.find(k); return it != a.end() && it->second == "true"; };
    if (!isTrue(kAnnIsDefaultStorageClass) && !isTrue(kAnnBetaIsDefaultStorageClass)) continue;
    const auto ts = [](const StorageClass& s) { return s.metadata.creationTimestamp; };
    if (!best || ts(*c) > ts(*best) || (ts(*c) == ts(*best) && c->metadata.name < best->metadata.name)) best = c;
  }
  if (!best) {
    KLOG_V(4, "\"Can not assign storage class to PersistentVolumeClaim: default storage class not found\" PVC=" +
                  q(claimToClaimKey(claim)));
    return false;
  }
  KLOG_V(4, "\"Assigning StorageClass to PersistentVolumeClaim\" PVC=" + q(claimToClaimKey(claim)) +
                " storageClassName=" + q(best->metadata.name));
  PersistentVolumeClaim clone = claim;
  clone.spec.storageClassName = best->metadata.name;
  auto r = client::update<PersistentVolumeClaim>(*client_, clone);
  if (!r.ok()) return r.status();
  KLOG_V(4, "\"Successfully assigned StorageClass to PersistentVolumeClaim\" PVC=" + q(claimToClaimKey(claim)) +
                " storageClassName=" + q(best->metadata.name));
  return true;
}

Result<PersistentVolume> PersistentVolumeController::bindVolumeToClaim(const PersistentVolume& volume,
                                                                       const PersistentVolumeClaim& claim) {
  auto [clone, dirty] = GetBindVolumeToClaim(volume, claim);
  if (!dirty) {
    KLOG_V(4, "\"Updating PersistentVolume: already bound to claim\" PVC=" + q(claimToClaimKey(claim)) +
                  " volumeName=" + q(volume.metadata.name));
    return volume;
  }
  KLOG_V(2, "\"Claim bound to volume\" PVC=" + q(claimToClaimKey(claim)) + " volumeName=" + q(volume.metadata.name));
  auto r = client::update<PersistentVolume>(*client_, clone);
  if (!r.ok()) {
    KLOG_V(4, "\"Updating PersistentVolume: binding to claim failed\" PVC=" + q(claimToClaimKey(claim)) +
                  " volumeName=" + q(volume.metadata.name) + " err=" + q(r.status().message()));
    return r;
  }
  if (auto s = storeVolumeUpdate(*r); !s.ok()) return s.status();
  return r;
}

Result<PersistentVolumeClaim> PersistentVolumeController::bindClaimToVolume(const PersistentVolumeClaim& claim,
                                                                            const PersistentVolume& volume) {
  bool dirty = false;
  PersistentVolumeClaim clone = claim;
  if (claim.spec.volumeName != volume.metadata.name) {
    clone.spec.volumeName = volume.metadata.name;
    if (!hasAnnotation(clone.metadata, kAnnBoundByController)) clone.metadata.annotations[kAnnBoundByController] = "yes";
    dirty = true;
  }
  if (!hasAnnotation(clone.metadata, kAnnBindCompleted)) {
    clone.metadata.annotations[kAnnBindCompleted] = "yes";
    dirty = true;
  }
  if (!dirty) {
    KLOG_V(4, "\"Updating PersistentVolumeClaim: already bound to volume\" PVC=" + q(claimToClaimKey(claim)) +
                  " volumeName=" + q(volume.metadata.name));
    return claim;
  }
  KLOG_V(2, "\"Volume bound to claim\" PVC=" + q(claimToClaimKey(claim)) + " volumeName=" + q(volume.metadata.name));
  auto r = client::update<PersistentVolumeClaim>(*client_, clone);
  if (!r.ok()) {
    KLOG_V(4, "\"Updating PersistentVolumeClaim: binding to volume failed\" PVC=" + q(claimToClaimKey(claim)) +
                  " volumeName=" + q(volume.metadata.name) + " err=" + q(r.status().message()));
    return r;
  }
  if (auto s = storeClaimUpdate(*r); !s.ok()) return s.status();
  return r;
}

Status PersistentVolumeController::bind(const PersistentVolume& volume0, const PersistentVolumeClaim& claim0) {
  // The volume is saved first (spec, then status), then the claim (spec, then status).
  const std::string key = claimToClaimKey(claim0);
  KLOG_V(4, "\"Binding volume to claim\" PVC=" + q(key) + " volumeName=" + q(volume0.metadata.name));
  const auto failed = [&](const char* what, const Status& st) {
    KLOG_V(3, std::string("\"Error binding volume to claim: ") + what + "\" PVC=" + q(key) + " volumeName=" +
                  q(volume0.metadata.name) + " err=" + q(st.message()));
    return st;
  };
  auto volume = bindVolumeToClaim(volume0, claim0);
  if (!volume.ok()) return failed("failed saving the volume", volume.status());
  volume = updateVolumePhase(*volume, "Bound", "");
  if (!volume.ok()) return failed("failed saving the volume status", volume.status());
  auto claim = bindClaimToVolume(claim0, *volume);
  if (!claim.ok()) return failed("failed saving the claim", claim.status());
  claim = updateClaimStatus(*claim, "Bound", &*volume);
  if (!claim.ok()) return failed("failed saving the claim status", claim.status());
  KLOG_V(4, "\"Volume bound to claim\" PVC=" + q(key) + " volumeName=" + q(volume->metadata.name));
  return Status::Ok();
}

Status PersistentVolumeController::unbindVolume(const PersistentVolume& volume) {
  KLOG_V(4, "\"Updating PersistentVolume: rolling back binding from claim\" PVC=" +
                q(claimrefToClaimKey(*volume.spec.claimRef)) + " volumeName=" + q(volume.metadata.name));
  PersistentVolume clone = volume;
  if (hasAnnotation(volume.metadata, kAnnBoundByController)) {
    clone.spec.claimRef.reset();
    clone.metadata.annotations.erase(kAnnBoundByController);
  } else {
    clone.spec.claimRef->uid.clear();  // pre-bound by the user: only the binding UID goes
  }
  auto r = client::update<PersistentVolume>(*client_, clone);
  if (!r.ok()) {
    KLOG_V(4, "\"Updating PersistentVolume: rollback failed\" volumeName=" + q(volume.metadata.name) + " err=" +
                  q(r.status().message()));
    return r.status();
  }
  if (auto s = storeVolumeUpdate(*r); !s.ok()) return s.status();
  KLOG_V(4, "\"Updating PersistentVolume: rolled back\" volumeName=" + q(r->metadata.name));
  auto p = updateVolumePhase(*r, "Available", "");
  return p.ok() ? Status::Ok() : p.status();
}

Status PersistentVolumeController::reclaimVolume(const PersistentVolume& volume) {
  if (auto it = volume.metadata.annotations.find(kAnnMigratedTo);
      it != volume.metadata.annotations.end() && !it->second.empty())
    return Status::Ok();  // migrated: the external provisioner reclaims it
  const std::string& policy = volume.spec.persistentVolumeReclaimPolicy;
  const std::string& name = volume.metadata.name;
  const std::string opSuffix = name + "[" + volume.metadata.uid + "]";
  if (policy == "Retain") {
    KLOG_V(4, "\"ReclaimVolume: policy is Retain, nothing to do\" volumeName=" + q(name));
  } else if (policy == "Recycle") {
    KLOG_V(4, "\"ReclaimVolume: policy is Recycle\" volumeName=" + q(name));
    scheduleOperation("recycle-" + opSuffix, [&] {
      recycleVolumeOperation(volume);
      return Status::Ok();
    });
  } else if (policy == "Delete") {
    KLOG_V(4, "\"ReclaimVolume: policy is Delete\" volumeName=" + q(name));
    scheduleOperation("delete-" + opSuffix, [&] { return deleteVolumeOperation(volume); });
  } else {
    auto r = updateVolumePhaseWithEvent(volume, "Failed", kEventTypeWarning, "VolumeUnknownReclaimPolicy",
                                        "Volume has unrecognized PersistentVolumeReclaimPolicy");
    if (!r.ok()) return r.status();
  }
  return Status::Ok();
}

Result<bool> PersistentVolumeController::isVolumeReleased(const PersistentVolume& volume) const {
  const std::string& name = volume.metadata.name;
  if (!volume.spec.claimRef) {
    KLOG_V(4, "\"isVolumeReleased: ClaimRef is nil\" volumeName=" + q(name));
    return false;
  }
  if (volume.spec.claimRef->uid.empty()) {
    KLOG_V(4, "\"isVolumeReleased: ClaimRef is not bound\" volumeName=" + q(name));
    return false;
  }
  auto claim = claims_.get(claimrefToClaimKey(*volume.spec.claimRef));
  if (claim && claim->metadata.uid == volume.spec.claimRef->uid) {
    if (!claim->spec.volumeName.empty() && claim->spec.volumeName != name) return true;  // bound elsewhere
    KLOG_V(4, "\"isVolumeReleased: ClaimRef is still valid, volume is not released\" volumeName=" + q(name));
    return false;
  }
  KLOG_V(2, "\"isVolumeReleased: volume is released\" volumeName=" + q(name));
  return true;
}

std::vector<std::string> PersistentVolumeController::isVolumeUsed(const PersistentVolume& volume) const {
  std::set<std::string> names;  // sorted, as sets.String.List()
  if (!volume.spec.claimRef) return {};
  for (const auto& pod : pods_.store().byIndex(common::kPodPVCIndex, claimrefToClaimKey(*volume.spec.claimRef)))
    if (!common::IsPodTerminated(*pod)) names.insert(pod->metadata.namespace_ + "/" + pod->metadata.name);
  return {names.begin(), names.end()};
}

std::vector<std::string> PersistentVolumeController::findNonScheduledPodsByPVC(const PersistentVolumeClaim& claim) const {
  std::vector<std::string> names;
  for (const auto& pod : pods_.store().byIndex(common::kPodPVCIndex, claimToClaimKey(claim)))
    if (!common::IsPodTerminated(*pod) && pod->spec.nodeName.empty()) names.push_back(pod->metadata.name);
  std::sort(names.begin(), names.end());  // index order is not stable here; upstream's follows its indexer
  return names;
}

}  // namespace kcm::controllers::volume::persistentvolume
