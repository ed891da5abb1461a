#include "controllers/volume/pvcprotection/pvc_protection_controller.h"

#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/volume/common/volume_common.h"
#include "controllers/volume/protectionutil/protectionutil.h"

namespace kcm::controllers::volume::pvcprotection {
namespace pu = protectionutil;
using common::VolumeClaimName;
using common::VolumeIsForPod;

namespace {

std::string keyOf(const api::meta::v1::ObjectMeta& m) { return m.namespace_ + "/" + m.name; }

bool ephemeralFor(const Pod& pod, const api::core::v1::Volume& v, const PersistentVolumeClaim& pvc) {
  return v.ephemeral && VolumeClaimName(pod, v) == pvc.metadata.name && VolumeIsForPod(pod, pvc).ok();
}

// podIsShutDown: kubelet is done with the pod (or it was force-deleted): deleting with a zero grace period.
bool podIsShutDown(const Pod& pod) {
  return pod.metadata.deletionTimestamp && pod.metadata.deletionGracePeriodSeconds.value_or(-1) == 0;
}

const api::core::v1::PersistentVolumeClaimCondition* findUnused(const PersistentVolumeClaim& pvc) {
  for (const auto& c : pvc.status.conditions)
    if (c.type == "Unused") return &c;
  return nullptr;
}

}  // namespace

bool podUsesPVCForDeletion(const Pod& pod, const PersistentVolumeClaim& pvc) {
  if (pod.spec.nodeName.empty()) return false;
  for (const auto& v : pod.spec.volumes) {
    if ((v.persistentVolumeClaim && v.persistentVolumeClaim->claimName == pvc.metadata.name) ||
        (!podIsShutDown(pod) && ephemeralFor(pod, v, pvc))) {
      KLOG_V(2, "\"Pod uses PVC\" pod=" + log::quote(keyOf(pod.metadata)) + " PVC=" + log::quote(keyOf(pvc.metadata)));
      return true;
    }
  }
  return false;
}

bool podUsesPVCForUnusedSince(const Pod& pod, const PersistentVolumeClaim& pvc) {
  if (common::IsPodTerminated(pod)) return false;
  for (const auto& v : pod.spec.volumes)
    if ((v.persistentVolumeClaim && v.persistentVolumeClaim->claimName == pvc.metadata.name) || ephemeralFor(pod, v, pvc))
      return true;
  return false;
}

Controller::Controller(std::shared_ptr<client::RestClient> client, informers::SharedInformer<PersistentVolumeClaim>& pvcs,
                       informers::SharedInformer<Pod>& pods, bool unusedSinceTime, Clock& clock)
    : client_(std::move(client)), pvcs_(pvcs), pods_(pods), unusedSinceTime_(unusedSinceTime), clock_(clock),
      base_("pvcprotection", [this](const std::string& key) { return processPVC(key); }, clock) {
  pods_.store().addIndexer(common::kPodPVCIndex, common::PodPVCIndexFunc);
  auto pvcAddedUpdated = [this](const std::shared_ptr<const PersistentVolumeClaim>& pvc) {
    KLOG_V(4, "\"Got event on PVC\" pvc=" + log::quote(keyOf(pvc->metadata)));
    if ((unusedSinceTime_ && !findUnused(*pvc)) ||
        pu::NeedToAddFinalizer(pvc->metadata, pu::kPVCProtectionFinalizer) ||
        pu::IsDeletionCandidate(pvc->metadata, pu::kPVCProtectionFinalizer))
      base_.enqueue(keyOf(pvc->metadata));
  };
  informers::EventHandler<PersistentVolumeClaim> ch;
  ch.onAdd = pvcAddedUpdated;
  ch.onUpdate = [pvcAddedUpdated](const auto&, const auto& pvc) { pvcAddedUpdated(pvc); };
  registrations_.push_back(pvcs_.addEventHandler(ch));
  informers::EventHandler<Pod> ph;
  ph.onAdd = [this](const auto& p) { enqueuePVCs(*p, false); };
  ph.onUpdate = [this](const auto& old, const auto& p) {
    enqueuePVCs(*p, false);
    // An update may hide a delete and re-create under the same name: the old pod's claims are looked at too.
    if (old->metadata.uid != p->metadata.uid) enqueuePVCs(*old, true);
  };
  ph.onDelete = [this](const auto& p, bool) { enqueuePVCs(*p, true); };
  registrations_.push_back(pods_.addEventHandler(ph));
}

void Controller::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting PVC protection controller\"");
  base_.start(workers, stop, {[this] { return pvcs_.hasSynced(); }, [this] { return pods_.hasSynced(); }});
}

void Controller::enqueuePVCs(const Pod& pod, bool deleted) {
  // Without the gate only pods that can free a PVC matter: deleted, terminated or never scheduled.
  if (!unusedSinceTime_ && !deleted && !common::IsPodTerminated(pod) && !pod.spec.nodeName.empty()) return;
  KLOG_V(4, "\"Enqueuing PVCs for Pod\" logger=\"persistentvolumeclaim-protection-controller\" pod=" + log::quote(keyOf(pod.metadata)) + " podUID=" +
                log::quote(pod.metadata.uid));
  for (const auto& key : common::PodPVCIndexFunc(pod)) base_.enqueue(key);
}

runtime::SyncResult Controller::processPVC(const std::string& key) {
  KLOG_V(4, "\"Processing PVC\" PVC=" + log::quote(key));
  auto pvc = pvcs_.store().get(key);
  if (!pvc) {
    KLOG_V(4, "\"PVC not found, ignoring\" PVC=" + log::quote(key));
    return runtime::SyncResult::ok();
  }
  auto failed = [&](const Status& st) {
    return runtime::SyncResult::error(
        Status(st.code(), "PVC " + pvc->metadata.name + "/" + pvc->metadata.namespace_ + " failed with: " + st.message()));
  };
  // The condition waits for binding, so it does not race the binder's writes.
  if (unusedSinceTime_ && !pvc->metadata.deletionTimestamp && pvc->status.phase == "Bound") {
    auto used = isBeingUsedWith(*pvc, podUsesPVCForUnusedSince);
    if (!used.ok()) return failed(used.status());
    if (Status st = updateUnusedCondition(*pvc, *used); !st.ok()) return failed(st);
  }
  if (pu::IsDeletionCandidate(pvc->metadata, pu::kPVCProtectionFinalizer)) {
    auto used = isBeingUsedWith(*pvc, podUsesPVCForDeletion);
    if (!used.ok()) return failed(used.status());
    if (!*used) {
      if (Status st = setFinalizer(*pvc, false); !st.ok()) return failed(st);
      return runtime::SyncResult::ok();
    }
    KLOG_V(2, "\"Keeping PVC because it is being used\" PVC=" + log::quote(key));
  }
  if (pu::NeedToAddFinalizer(pvc->metadata, pu::kPVCProtectionFinalizer))
    if (Status st = setFinalizer(*pvc, true); !st.ok()) return failed(st);
  return runtime::SyncResult::ok();
}

Result<bool> Controller::isBeingUsedWith(const PersistentVolumeClaim& pvc, PodUsage usage) {
  // The cache first: a pod found there settles it without a live list.
  for (const auto& pod : pods_.store().byIndex(common::kPodPVCIndex, keyOf(pvc.metadata)))
    if (usage(*pod, pvc)) return true;
  KLOG_V(4, "\"No Pod using PVC was found in the Informer's cache\" PVC=" + log::quote(keyOf(pvc.metadata)));
  // Not in the cache does not mean no such pod: it may not have arrived yet. Ask the apiserver.
  auto live = client::list<Pod>(*client_, pvc.metadata.namespace_);
  if (!live.ok()) return Status(live.status().code(), "live list of pods failed: " + live.status().message());
  for (const auto& pod : live->items)
    if (usage(pod, pvc)) return true;
  KLOG_V(2, "\"PVC is unused\" PVC=" + log::quote(keyOf(pvc.metadata)));
  return false;
}

Status Controller::updateUnusedCondition(const PersistentVolumeClaim& pvc, bool isUsed) {
  const auto* existing = findUnused(pvc);
  std::string status, reason, message;
  if (isUsed && (!existing || existing->status == "True")) {
    status = "False", reason = "PodUsingPVC", message = "A pod is currently referencing this PVC";
  } else if (!isUsed && (!existing || existing->status != "True")) {
    status = "True", reason = "NoPodsUsingPVC", message = "No pods are currently referencing this PVC";
  } else {
    return Status::Ok();
  }
  PersistentVolumeClaim clone = pvc;
  api::core::v1::PersistentVolumeClaimCondition c;
  c.type = "Unused";
  c.status = status;
  c.reason = reason;
  c.message = message;
  c.lastTransitionTime = api::Time::fromUnix(std::chrono::system_clock::to_time_t(clock_.wallNow()));
  bool replaced = false;
  for (auto& e : clone.status.conditions)
    if (e.type == "Unused") e = c, replaced = true;
  if (!replaced) clone.status.conditions.push_back(c);
  auto r = client::updateStatus<PersistentVolumeClaim>(*client_, clone);
  if (!r.ok()) {
    KLOG_ERROR("\"Error updating Unused condition in PVC status\" err=" + log::quote(r.status().message()) +
               " PVC=" + log::quote(keyOf(pvc.metadata)));
    return r.status();
  }
  KLOG_V(3, "\"Updated Unused condition in PVC status\" PVC=" + log::quote(keyOf(pvc.metadata)) + " status=" +
                log::quote(status));
  return Status::Ok();
}

Status Controller::setFinalizer(const PersistentVolumeClaim& pvc, bool add) {
  Status st = pu::updateFinalizer(*client_, pvc, pu::kPVCProtectionFinalizer, add);
  const std::string what = add ? "adding protection finalizer to" : "removing protection finalizer from";
  if (!st.ok()) {
    KLOG_ERROR("\"Error " + what + " PVC\" err=" + log::quote(st.message()) + " PVC=" + log::quote(keyOf(pvc.metadata)));
    return st;
  }
  KLOG_V(3, std::string(add ? "\"Added protection finalizer to" : "\"Removed protection finalizer from") + " PVC\" PVC=" +
                log::quote(keyOf(pvc.metadata)));
  return Status::Ok();
}

}  // namespace kcm::controllers::volume::pvcprotection
