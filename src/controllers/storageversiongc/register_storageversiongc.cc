#include "controllers/storageversiongc/register_storageversiongc.h"

#include "api/gen/apiserverinternal_v1alpha1_json.h"
#include "api/gen/coordination_v1_json.h"
#include "controllers/context.h"
#include "controllers/controller.h"
#include "controllers/storageversiongc/gc_controller.h"

namespace kcm::controllers {
namespace {

Result<std::unique_ptr<Controller>> startStorageVersionGCController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("storage-version-garbage-collector");
  if (!c.ok()) return c.status();
  auto& f = *ctx.informerFactory;
  auto ctrl = std::make_shared<storageversiongc::Controller>(
      *c, f.forType<api::coordination::v1::Lease>(), f.forType<api::apiserverinternal::v1alpha1::StorageVersion>());
  return newControllerLoop(ctrl, [](auto& p, std::stop_token stop) { p.run(stop); });
}

}  // namespace

void registerStorageVersionGCInitFunc(const std::function<void(const std::string&, InitFunc)>& setInit) {
  setInit("storageversion-garbage-collector-controller", startStorageVersionGCController);
}

}  // namespace kcm::controllers
