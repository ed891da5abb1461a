#include "controllers/resourcepoolstatusrequest/register_resourcepoolstatusrequest.h"

#include "api/gen/resource_v1_json.h"
#include "api/gen/resource_v1alpha3_json.h"
#include "controllers/context.h"
#include "controllers/controller.h"
#include "controllers/resourcepoolstatusrequest/controller.h"

namespace kcm::controllers {
namespace {

constexpr const char* kName = "resourcepoolstatusrequest-controller";

Result<std::unique_ptr<Controller>> startResourcePoolStatusRequestController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client(kName);
  if (!c.ok()) return c.status();
  auto& f = *ctx.informerFactory;
  // The DeviceTaintRule informer only with its gate, so that an apiserver not serving the API does not hold the
  // controller at cache sync.
  informers::SharedInformer<api::resource::v1::DeviceTaintRule>* rules = nullptr;
  if (ctx.featureGates->enabled("DRADeviceTaintRules")) rules = &f.forType<api::resource::v1::DeviceTaintRule>();
  auto ctrl = std::make_shared<resourcepoolstatusrequest::Controller>(
      *c, f.forType<api::resource::v1alpha3::ResourcePoolStatusRequest>(),
      f.forType<api::resource::v1::ResourceSlice>(), f.forType<api::resource::v1::ResourceClaim>(), rules);
  return newControllerLoop(ctrl, [](auto& p, std::stop_token stop) { p.run(stop); });
}

}  // namespace

void registerResourcePoolStatusRequestInitFunc(const std::function<void(const std::string&, InitFunc)>& setInit) {
  setInit(kName, startResourcePoolStatusRequestController);
}

}  // namespace kcm::controllers
