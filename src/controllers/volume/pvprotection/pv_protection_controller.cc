#include "controllers/volume/pvprotection/pv_protection_controller.h"

#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/volume/protectionutil/protectionutil.h"

namespace kcm::controllers::volume::pvprotection {
namespace pu = protectionutil;

bool isBeingUsed(const PersistentVolume& pv) { return pv.status.phase == "Bound"; }

Controller::Controller(std::shared_ptr<client::RestClient> client, informers::SharedInformer<PersistentVolume>& pvs,
                       Clock& clock)
    : client_(std::move(client)), pvs_(pvs),
      base_("pvprotection", [this](const std::string& key) { return processPV(key); }, clock) {
  auto pvAddedUpdated = [this](const std::shared_ptr<const PersistentVolume>& pv) {
    KLOG_V(4, "\"Got event on PV\" PV=" + log::quote(pv->metadata.name));
    if (pu::NeedToAddFinalizer(pv->metadata, pu::kPVProtectionFinalizer) ||
        pu::IsDeletionCandidate(pv->metadata, pu::kPVProtectionFinalizer))
      base_.enqueue(pv->metadata.name);
  };
  informers::EventHandler<PersistentVolume> h;
  h.onAdd = pvAddedUpdated;
  h.onUpdate = [pvAddedUpdated](const auto&, const auto& pv) { pvAddedUpdated(pv); };
  registrations_.push_back(pvs_.addEventHandler(h));
}

void Controller::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting PV protection controller\"");
  base_.start(workers, stop, {[this] { return pvs_.hasSynced(); }});
}

runtime::SyncResult Controller::processPV(const std::string& name) {
  KLOG_V(4, "\"Processing PV\" PV=" + log::quote(name));
  auto pv = pvs_.store().get(name);
  if (!pv) {
    KLOG_V(4, "\"PV not found, ignoring\" PV=" + log::quote(name));
    return runtime::SyncResult::ok();
  }
  Status st;
  if (pu::IsDeletionCandidate(pv->metadata, pu::kPVProtectionFinalizer)) {
    if (!isBeingUsed(*pv)) st = setFinalizer(*pv, false);
    else KLOG_V(3, "\"Keeping PV because it is being used\" PV=" + log::quote(name));
  } else if (pu::NeedToAddFinalizer(pv->metadata, pu::kPVProtectionFinalizer)) {
    st = setFinalizer(*pv, true);
  }
  if (!st.ok()) return runtime::SyncResult::error(Status(st.code(), "PV " + name + " failed with : " + st.message()));
  return runtime::SyncResult::ok();
}

Status Controller::setFinalizer(const PersistentVolume& pv, bool add) {
  Status st = pu::updateFinalizer(*client_, pv, pu::kPVProtectionFinalizer, add);
  const std::string what = add ? "adding protection finalizer to" : "removing protection finalizer from";
  if (!st.ok()) {
    KLOG_V(3, "\"Error " + what + " PV\" PV=" + log::quote(pv.metadata.name) + " err=" + log::quote(st.message()));
    return st;
  }
  KLOG_V(3, std::string(add ? "\"Added protection finalizer to" : "\"Removed protection finalizer from") + " PV\" PV=" +
                log::quote(pv.metadata.name));
  return Status::Ok();
}

}  // namespace kcm::controllers::volume::pvprotection
