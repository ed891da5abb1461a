#include "controllers/scheduling/register_scheduling.h"

#include "api/gen/core_v1_json.h"
#include "api/gen/scheduling_v1beta1_json.h"
#include "controllers/context.h"
#include "controllers/controller.h"
#include "controllers/scheduling/podgroupprotection/podgroup_protection_controller.h"

namespace kcm::controllers {
namespace {

// The registry row requires GenericWorkload, as upstream's descriptor; one worker, as upstream.
Result<std::unique_ptr<Controller>> startPodGroupProtectionController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("podgroup-protection-controller");
  if (!c.ok()) return c.status();
  auto& f = *ctx.informerFactory;
  auto ctrl = std::make_shared<scheduling::podgroupprotection::Controller>(
      *c, f.forType<api::scheduling::v1beta1::PodGroup>(), f.forType<api::core::v1::Pod>());
  return newControllerLoop(ctrl, [](auto& p, std::stop_token stop) { p.run(1, stop); });
}

}  // namespace

void registerSchedulingInitFuncs(const std::function<void(const std::string&, InitFunc)>& setInit) {
  setInit("podgroup-protection-controller", startPodGroupProtectionController);
}

}  // namespace kcm::controllers
