#include "controllers/devicetainteviction/register_devicetainteviction.h"

#include "api/gen/core_v1_json.h"
#include "api/gen/resource_v1_json.h"
#include "base/log.h"
#include "controllers/context.h"
#include "controllers/controller.h"
#include "controllers/devicetainteviction/device_taint_eviction.h"

namespace kcm::controllers {
namespace {

constexpr const char* kName = "device-taint-eviction-controller";

Result<std::unique_ptr<Controller>> startDeviceTaintEvictionController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client(kName);
  if (!c.ok()) return c.status();
  if (ctx.featureGates->enabled("DRAWorkloadResourceClaims"))
    KLOG_WARNING("\"DRAWorkloadResourceClaims is enabled but not implemented: pods of PodGroup claims are not "
                 "evicted\" controller=\"device-taint-eviction-controller\"");
  auto& f = *ctx.informerFactory;
  informers::SharedInformer<api::resource::v1::DeviceTaintRule>* rules = nullptr;
  if (ctx.featureGates->enabled("DRADeviceTaintRules")) rules = &f.forType<api::resource::v1::DeviceTaintRule>();
  auto ctrl = std::make_shared<devicetainteviction::Controller>(
      *c, ctx.newEventRecorder(*c, kName), f.forType<api::core::v1::Pod>(),
      f.forType<api::resource::v1::ResourceClaim>(), f.forType<api::resource::v1::ResourceSlice>(), rules,
      f.forType<api::resource::v1::DeviceClass>(), kName);
  const int workers = ctx.options->deviceTaintEvictionController.concurrentDeviceTaintEvictionSyncs;
  return newControllerLoop(ctrl, [workers](auto& p, std::stop_token stop) { p.run(workers, stop); });
}

}  // namespace

void registerDeviceTaintEvictionInitFunc(const std::function<void(const std::string&, InitFunc)>& setInit) {
  setInit(kName, startDeviceTaintEvictionController);
}

}  // namespace kcm::controllers
