#include "controllers/resourceclaim/register_resourceclaim.h"

#include "api/gen/core_v1_json.h"
#include "api/gen/resource_v1_json.h"
#include "base/log.h"
#include "controllers/context.h"
#include "controllers/controller.h"
#include "controllers/resourceclaim/resourceclaim_controller.h"

namespace kcm::controllers {
namespace {

Result<std::unique_ptr<Controller>> startResourceClaimController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("resource-claim-controller");
  if (!c.ok()) return c.status();
  resourceclaim::Features features;
  features.adminAccess = ctx.featureGates->enabled("DRAAdminAccess");
  features.prioritizedList = ctx.featureGates->enabled("DRAPrioritizedList");
  if (ctx.featureGates->enabled("DRAWorkloadResourceClaims"))
    KLOG_WARNING("\"DRAWorkloadResourceClaims is enabled but not implemented: PodGroup claims are not created, "
                 "reserved or released\" controller=\"resourceclaim-controller\"");
  auto& f = *ctx.informerFactory;
  auto ctrl = std::make_shared<resourceclaim::Controller>(
      *c, ctx.newEventRecorder(*c, "resource_claim"), f.forType<api::core::v1::Pod>(),
      f.forType<api::resource::v1::ResourceClaim>(), f.forType<api::resource::v1::ResourceClaimTemplate>(), features);
  const int workers = ctx.options->resourceclaimController.concurrentResourceclaimSyncs;
  return newControllerLoop(ctrl, [workers](auto& p, std::stop_token stop) { p.run(workers, stop); });
}

}  // namespace

void registerResourceClaimInitFunc(const std::function<void(const std::string&, InitFunc)>& setInit) {
  setInit("resourceclaim-controller", startResourceClaimController);
}

}  // namespace kcm::controllers
