#include "controllers/volume/vacprotection/vac_protection_controller.h"

#include <chrono>
#include <set>

#include "api/gen/core_v1_json.h"
#include "api/gen/storage_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/volume/protectionutil/protectionutil.h"

namespace kcm::controllers::volume::vacprotection {
namespace pu = protectionutil;

namespace {

std::string pvcKey(const PersistentVolumeClaim& pvc) { return pvc.metadata.namespace_ + "/" + pvc.metadata.name; }

// The names `before` has and `after` lacks: the VACs an update may have released.
std::vector<std::string> dropped(const std::vector<std::string>& before, const std::vector<std::string>& after) {
  const std::set<std::string> kept(after.begin(), after.end());
  std::vector<std::string> out;
  for (const auto& n : before)
    if (!kept.count(n)) out.push_back(n);
  return out;
}

}  // namespace

std::vector<std::string> getPVCReferencedVACNames(const PersistentVolumeClaim& pvc) {
  std::set<std::string> names;
  auto note = [&names](const std::string& n) {
    if (!n.empty()) names.insert(n);
  };
  note(pvc.spec.volumeAttributesClassName.value_or(""));
  note(pvc.status.currentVolumeAttributesClassName.value_or(""));
  if (pvc.status.modifyVolumeStatus) note(pvc.status.modifyVolumeStatus->targetVolumeAttributesClassName);
  return {names.begin(), names.end()};
}

std::vector<std::string> getPVReferencedVACNames(const PersistentVolume& pv) {
  const std::string name = pv.spec.volumeAttributesClassName.value_or("");
  if (name.empty()) return {};
  return {name};
}

Controller::Controller(std::shared_ptr<client::RestClient> client, informers::SharedInformer<PersistentVolumeClaim>& pvcs,
                       informers::SharedInformer<PersistentVolume>& pvs,
                       informers::SharedInformer<VolumeAttributesClass>& vacs, Clock& clock)
    : client_(std::move(client)), pvcs_(pvcs), pvs_(pvs), vacs_(vacs), clock_(clock),
      base_("vacprotection", [this](const std::string& key) { return processVAC(key); }, clock) {
  // The indexes first: a handler registered on a filled cache gets its adds at once.
  pvs_.store().addIndexer(kVACNameKeyIndex, getPVReferencedVACNames);
  pvcs_.store().addIndexer(kVACNameKeyIndex, getPVCReferencedVACNames);

  informers::EventHandler<VolumeAttributesClass> vh;
  vh.onAdd = [this](const auto& vac) { vacAddedUpdated(*vac); };
  vh.onUpdate = [this](const auto&, const auto& vac) { vacAddedUpdated(*vac); };
  registrations_.push_back(vacs_.addEventHandler(vh));

  // Only changes that can release a VAC matter for claims and volumes: no add handlers.
  informers::EventHandler<PersistentVolumeClaim> ch;
  ch.onUpdate = [this](const auto& old, const auto& cur) { pvcUpdated(*old, *cur); };
  ch.onDelete = [this](const auto& pvc, bool) { pvcDeleted(*pvc); };
  registrations_.push_back(pvcs_.addEventHandler(ch));

  informers::EventHandler<PersistentVolume> ph;
  ph.onUpdate = [this](const auto& old, const auto& cur) { pvUpdated(*old, *cur); };
  ph.onDelete = [this](const auto& pv, bool) { pvDeleted(*pv); };
  registrations_.push_back(pvs_.addEventHandler(ph));
}

void Controller::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting VAC protection controller\"");
  base_.start(workers, stop,
              {[this] { return pvs_.hasSynced(); }, [this] { return pvcs_.hasSynced(); },
               [this] { return vacs_.hasSynced(); }});
}

runtime::SyncResult Controller::processVAC(const std::string& vacName) {
  KLOG_V(4, "\"Processing VAC\" VAC=" + log::quote(vacName));
  struct Finished {
    const std::string& name;
    Clock& clock;
    Clock::TimePoint start;
    ~Finished() {
      KLOG_V(4, "\"Finished processing VAC\" VAC=" + log::quote(name) + " cost=\"" +
                    std::to_string(std::chrono::duration<double>(clock.now() - start).count()) + "s\"");
    }
  } finished{vacName, clock_, clock_.now()};

  auto vac = vacs_.store().get(vacName);
  if (!vac) {
    KLOG_V(4, "\"VAC not found, ignoring\" VAC=" + log::quote(vacName));
    return runtime::SyncResult::ok();
  }
  auto failed = [&](const Status& st) {
    return runtime::SyncResult::error(Status(st.code(), "VAC " + vacName + " failed with : " + st.message()));
  };
  if (pu::IsDeletionCandidate(vac->metadata, kVACProtectionFinalizer)) {
    if (!isBeingUsed(*vac)) {
      if (Status st = removeFinalizer(*vac); !st.ok()) return failed(st);
      return runtime::SyncResult::ok();
    }
    // Upstream names the key "PVC" here although the value is the VAC's name; kept for log parity.
    KLOG_V(4, "\"Keeping VAC because it is being used\" PVC=" + log::quote(vacName));
  }
  if (pu::NeedToAddFinalizer(vac->metadata, kVACProtectionFinalizer))
    if (Status st = addFinalizer(*vac); !st.ok()) return failed(st);
  return runtime::SyncResult::ok();
}

Status Controller::addFinalizer(const VolumeAttributesClass& vac) {
  Status st = pu::updateFinalizer(*client_, vac, kVACProtectionFinalizer, true);
  if (!st.ok()) {
    KLOG_V(3, "\"Error adding protection finalizer to VAC\" VAC=" + log::quote(vac.metadata.name) +
                  " err=" + log::quote(st.message()));
    return st;
  }
  KLOG_V(3, "\"Added protection finalizer to VAC\" VAC=" + log::quote(vac.metadata.name));
  return Status::Ok();
}

Status Controller::removeFinalizer(const VolumeAttributesClass& vac) {
  Status st = pu::updateFinalizer(*client_, vac, kVACProtectionFinalizer, false);
  if (!st.ok()) {
    KLOG_V(3, "\"Error removing protection finalizer from VAC\" VAC=" + log::quote(vac.metadata.name) +
                  " err=" + log::quote(st.message()));
    return st;
  }
  KLOG_V(3, "\"Removed protection finalizer from VAC\" VAC=" + log::quote(vac.metadata.name));
  return Status::Ok();
}

bool Controller::isBeingUsed(const VolumeAttributesClass& vac) const {
  // The caches only (see the header): volumes first, then claims.
  if (!pvs_.store().byIndex(kVACNameKeyIndex, vac.metadata.name).empty()) return true;
  return !pvcs_.store().byIndex(kVACNameKeyIndex, vac.metadata.name).empty();
}

void Controller::vacAddedUpdated(const VolumeAttributesClass& vac) {
  KLOG_V(4, "\"Got event on VAC\" VAC=" + log::quote(vac.metadata.name));
  if (pu::NeedToAddFinalizer(vac.metadata, kVACProtectionFinalizer) ||
      pu::IsDeletionCandidate(vac.metadata, kVACProtectionFinalizer))
    base_.enqueue(vac.metadata.name);
}

void Controller::pvcDeleted(const PersistentVolumeClaim& pvc) {
  KLOG_V(4, "\"Got event on PVC\" PVC=" + log::quote(pvcKey(pvc)));
  for (const auto& name : getPVCReferencedVACNames(pvc)) base_.enqueue(name);
}

void Controller::pvcUpdated(const PersistentVolumeClaim& oldPVC, const PersistentVolumeClaim& newPVC) {
  KLOG_V(4, "\"Got event on PVC\" PVC=" + log::quote(pvcKey(newPVC)));
  for (const auto& name : dropped(getPVCReferencedVACNames(oldPVC), getPVCReferencedVACNames(newPVC)))
    base_.enqueue(name);
}

void Controller::pvUpdated(const PersistentVolume& oldPV, const PersistentVolume& newPV) {
  KLOG_V(4, "\"Got event on PV\" PV=" + log::quote(newPV.metadata.name));
  for (const auto& name : dropped(getPVReferencedVACNames(oldPV), getPVReferencedVACNames(newPV)))
    base_.enqueue(name);
}

void Controller::pvDeleted(const PersistentVolume& pv) {
  KLOG_V(4, "\"Got event on PV\" PV=" + log::quote(pv.metadata.name));
  for (const auto& name : getPVReferencedVACNames(pv)) base_.enqueue(name);
}

}  // namespace kcm::controllers::volume::vacprotection
