#include "controllers/volume/register_volume.h"

#include "api/gen/core_v1_json.h"
#include "controllers/context.h"
#include "controllers/controller.h"
#include "controllers/volume/ephemeral/ephemeral_controller.h"
#include "controllers/volume/pvcprotection/pvc_protection_controller.h"
#include "controllers/volume/pvprotection/pv_protection_controller.h"

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

}  // namespace

void registerVolumeInitFuncs(const std::function<void(const std::string&, InitFunc)>& setInit) {
  setInit("persistentvolume-protection-controller", startPersistentVolumeProtectionController);
  setInit("persistentvolumeclaim-protection-controller", startPersistentVolumeClaimProtectionController);
  setInit("ephemeral-volume-controller", startEphemeralVolumeController);
}

}  // namespace kcm::controllers
