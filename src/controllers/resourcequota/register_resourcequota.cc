#include "controllers/resourcequota/register_resourcequota.h"

#include "api/gen/core_v1_json.h"
#include "api/gen/resource_v1_json.h"
#include "controllers/context.h"
#include "controllers/controller.h"
#include "controllers/resourcequota/resource_quota_controller.h"
#include "quota/core_evaluators.h"
#include "quota/resource_claims.h"

namespace kcm::controllers {
namespace {

// upstream quota/v1/evaluator/core.NewEvaluators: the evaluators with special logic, reading the shared
// informers. resourceclaims (with the DeviceClass and pod caches DRAExtendedResource needs) only where the apiserver
// serves resource.k8s.io/v1 (elsewhere upstream's lister would never sync; ours says so at once).
std::shared_ptr<quota::Registry> newCoreRegistry(informers::SharedInformerFactory& f, client::DiscoveryClient& d) {
  using namespace api;
  auto reg = std::make_shared<quota::Registry>();
  reg->add(quota::newPodEvaluator(quota::cacheListFunc(f.forType<core::v1::Pod>(), "v1, Resource=pods")));
  reg->add(quota::newServiceEvaluator(quota::cacheListFunc(f.forType<core::v1::Service>(), "v1, Resource=services")));
  reg->add(quota::newPersistentVolumeClaimEvaluator(
      quota::cacheListFunc(f.forType<core::v1::PersistentVolumeClaim>(), "v1, Resource=persistentvolumeclaims")));
  bool claimsServed = false;
  if (auto rs = d.serverResources(); rs.ok())
    for (const auto& r : *rs)
      if (r.group == "resource.k8s.io" && r.version == "v1" && r.resource == "resourceclaims") claimsServed = true;
  const std::string claimsGVR = "resource.k8s.io/v1, Resource=resourceclaims";
  if (claimsServed) {
    auto& claims = f.forType<resource::v1::ResourceClaim>();
    reg->add(quota::newResourceClaimEvaluator(quota::cacheListFunc(claims, claimsGVR),
                                              quota::deviceClassLookup(f.forType<resource::v1::DeviceClass>()),
                                              quota::verifiedPodUsageFunc(f.forType<core::v1::Pod>(), claims)));
  } else {
    reg->add(quota::newResourceClaimEvaluator(
        [claimsGVR](const std::string&) -> Result<std::vector<std::shared_ptr<const resource::v1::ResourceClaim>>> {
          return Status(StatusCode::kUnavailable, claimsGVR + " not yet synced");
        }));
  }
  quota::addLegacyObjectCountEvaluators(*reg, f);
  return reg;
}

Result<std::unique_ptr<Controller>> startResourceQuotaController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("resourcequota-controller");
  if (!c.ok()) return c.status();
  auto discovery = std::make_shared<client::DiscoveryClient>(*c);
  auto registry = newCoreRegistry(*ctx.informerFactory, *discovery);
  const auto& options = *ctx.options;
  resourcequota::ResourceQuotaController::Options opts;
  opts.resyncPeriod = std::chrono::duration_cast<Clock::Duration>(options.resourcequotaController.resourceQuotaSyncPeriod);
  auto ctrl = std::make_shared<resourcequota::ResourceQuotaController>(*c, *ctx.informerFactory, discovery, registry, opts);
  if (Status s = ctrl->init(); !s.ok()) return s;
  const int workers = options.resourcequotaController.concurrentResourceQuotaSyncs;
  return newControllerLoop(ctrl, [workers](auto& q, std::stop_token stop) { q.run(workers, stop); });
}

}  // namespace

void registerResourceQuotaInitFunc(const std::function<void(const std::string&, InitFunc)>& setInit) {
  setInit("resourcequota-controller", startResourceQuotaController);
}

}  // namespace kcm::controllers
