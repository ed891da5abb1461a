#include "controllers/volume/register_volume.h"

#include "api/gen/core_v1_json.h"
#include "api/gen/storage_v1_json.h"
#include "controllers/context.h"
#include "controllers/controller.h"
#include "controllers/volume/attachdetach/attach_detach_controller.h"
#include "controllers/volume/ephemeral/ephemeral_controller.h"
#include "controllers/volume/expand/expand_controller.h"
#include "controllers/volume/persistentvolume/pv_controller.h"
#include "controllers/volume/pvcprotection/pvc_protection_controller.h"
#include "controllers/volume/pvprotection/pv_protection_controller.h"
#include "controllers/volume/selinuxwarning/selinux_warning_controller.h"
#include "controllers/volume/vacprotection/vac_protection_controller.h"

namespace kcm::controllers {
namespace {

Result<std::unique_ptr<Controller>> startPersistentVolumeProtectionController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("pv-protection-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<volume::pvprotection::Controller>(
      *c, ctx.informerFactory->forType<api::core::v1::PersistentVolume>());
  return newControllerLoop(ctrl, [](auto& p, std::stop_token stop) { p.run(1, stop); });
}

Result<std::unique_ptr<Controller>> startPersistentVolumeClaimProtectionController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("pvc-protection-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<volume::pvcprotection::Controller>(
      *c, ctx.informerFactory->forType<api::core::v1::PersistentVolumeClaim>(),
      ctx.informerFactory->forType<api::core::v1::Pod>(),
      ctx.featureGates->enabled("PersistentVolumeClaimUnusedSinceTime"));
  return newControllerLoop(ctrl, [](auto& p, std::stop_token stop) { p.run(1, stop); });
}

Result<std::unique_ptr<Controller>> startEphemeralVolumeController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("ephemeral-volume-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<volume::ephemeral::Controller>(
      *c, ctx.newEventRecorder(*c, "ephemeral_volume"), ctx.informerFactory->forType<api::core::v1::Pod>(),
      ctx.informerFactory->forType<api::core::v1::PersistentVolumeClaim>());
  const int workers = ctx.options->ephemeralVolumeController.concurrentEphemeralvolumeSyncs;
  return newControllerLoop(ctrl, [workers](auto& p, std::stop_token stop) { p.run(workers, stop); });
}

Result<std::unique_ptr<Controller>> startVolumeAttributesClassProtectionController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("volumeattributesclass-protection-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<volume::vacprotection::Controller>(
      *c, ctx.informerFactory->forType<api::core::v1::PersistentVolumeClaim>(),
      ctx.informerFactory->forType<api::core::v1::PersistentVolume>(),
      ctx.informerFactory->forType<api::storage::v1::VolumeAttributesClass>());
  return newControllerLoop(ctrl, [](auto& p, std::stop_token stop) { p.run(1, stop); });
}

Result<std::unique_ptr<Controller>> startPersistentVolumeBinderController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("persistent-volume-binder");
  if (!c.ok()) return c.status();
  const auto& o = ctx.options->persistentvolumeBinderController;
  volume::persistentvolume::ControllerParameters params;
  params.syncPeriod = std::chrono::duration_cast<Clock::Duration>(o.pvclaimbinderSyncPeriod);
  params.enableDynamicProvisioning = o.enableDynamicProvisioning;
  params.enableHostPathProvisioning = o.enableHostpathProvisioner;
  params.volumeAttributesClass = ctx.featureGates->enabled("VolumeAttributesClass");
  params.recyclerMinimumTimeoutHostPath = o.pvRecyclerMinimumTimeoutHostpath;
  params.recyclerTimeoutIncrementHostPath = o.pvRecyclerTimeoutIncrementHostpath;
  params.recyclerMinimumTimeoutNFS = o.pvRecyclerMinimumTimeoutNfs;
  params.recyclerTimeoutIncrementNFS = o.pvRecyclerIncrementTimeoutNfs;
  // --pv-recycler-pod-template-filepath-*: not implemented (the default recycler pod is used); the daemon's
  // not-implemented-flag warning names them when set.
  auto ctrl = std::make_shared<volume::persistentvolume::PersistentVolumeController>(
      *c, ctx.newEventRecorder(*c, "persistentvolume-controller"),
      ctx.informerFactory->forType<api::core::v1::PersistentVolume>(),
      ctx.informerFactory->forType<api::core::v1::PersistentVolumeClaim>(),
      ctx.informerFactory->forType<api::storage::v1::StorageClass>(),
      ctx.informerFactory->forType<api::core::v1::Pod>(), ctx.informerFactory->forType<api::core::v1::Node>(), params);
  return newControllerLoop(ctrl, [](auto& p, std::stop_token stop) { p.Run(stop); });
}

Result<std::unique_ptr<Controller>> startPersistentVolumeExpanderController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("expand-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<volume::expand::Controller>(
      *c, ctx.newEventRecorder(*c, "volume_expand"),
      ctx.informerFactory->forType<api::core::v1::PersistentVolumeClaim>());
  // upstream always runs defaultWorkerCount (10) workers; no flag sets it
  return newControllerLoop(ctrl, [](auto& p, std::stop_token stop) { p.run(volume::expand::kDefaultWorkerCount, stop); });
}

Result<std::unique_ptr<Controller>> startPersistentVolumeAttachDetachController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("attachdetach-controller");
  if (!c.ok()) return c.status();
  const auto& o = ctx.options->persistentvolumeAttachDetachController;
  volume::attachdetach::Parameters params;
  params.reconcilerSyncPeriod = std::chrono::duration_cast<Clock::Duration>(o.attachDetachReconcileSyncPeriod);
  params.disableReconciliationSync = o.disableAttachDetachReconcileSync;
  params.disableForceDetachOnTimeout = o.disableForceDetachOnTimeout;
  auto& f = *ctx.informerFactory;
  auto ctrl = std::make_shared<volume::attachdetach::AttachDetachController>(
      *c, ctx.newEventRecorder(*c, "attachdetach-controller"), f.forType<api::core::v1::Pod>(),
      f.forType<api::core::v1::Node>(), f.forType<api::core::v1::PersistentVolumeClaim>(),
      f.forType<api::core::v1::PersistentVolume>(), f.forType<api::storage::v1::CSIDriver>(),
      f.forType<api::storage::v1::VolumeAttachment>(), params);
  return newControllerLoop(ctrl, [](auto& p, std::stop_token stop) { p.Run(stop); });
}

Result<std::unique_ptr<Controller>> startSELinuxWarningController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("selinux-warning-controller");
  if (!c.ok()) return c.status();
  auto& f = *ctx.informerFactory;
  auto ctrl = std::make_shared<volume::selinuxwarning::Controller>(
      ctx.newEventRecorder(*c, "selinux_warning"), f.forType<api::core::v1::Pod>(),
      f.forType<api::core::v1::PersistentVolumeClaim>(), f.forType<api::core::v1::PersistentVolume>(),
      f.forType<api::storage::v1::CSIDriver>());
  return newControllerLoop(ctrl, [](auto& p, std::stop_token stop) { p.run(1, stop); });
}

}  // namespace

void registerVolumeInitFuncs(const std::function<void(const std::string&, InitFunc)>& setInit) {
  setInit("persistentvolume-protection-controller", startPersistentVolumeProtectionController);
  setInit("persistentvolumeclaim-protection-controller", startPersistentVolumeClaimProtectionController);
  setInit("ephemeral-volume-controller", startEphemeralVolumeController);
  setInit("volumeattributesclass-protection-controller", startVolumeAttributesClassProtectionController);
  setInit("persistentvolume-binder-controller", startPersistentVolumeBinderController);
  setInit("persistentvolume-expander-controller", startPersistentVolumeExpanderController);
  setInit("persistentvolume-attach-detach-controller", startPersistentVolumeAttachDetachController);
  setInit("selinux-warning-controller", startSELinuxWarningController);
}

}  // namespace kcm::controllers
