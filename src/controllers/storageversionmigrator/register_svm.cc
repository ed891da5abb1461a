#include "controllers/storageversionmigrator/register_svm.h"

#include "api/gen/storagemigration_v1_json.h"
#include "controllers/context.h"
#include "controllers/controller.h"
#include "controllers/garbagecollector/garbagecollector.h"
#include "controllers/storageversionmigrator/migrationrunner.h"
#include "controllers/storageversionmigrator/resourceversion.h"
#include "controllers/storageversionmigrator/storageversionmigrator.h"

namespace kcm::controllers {
namespace {

using namespace storageversionmigrator;

// The three loops, run and stopped together (upstream's concurrentRun).
struct SVMLoops {
  std::shared_ptr<MigrationRunnerController> runner;
  std::shared_ptr<ResourceVersionController> rv;
  std::shared_ptr<SVMController> svm;
};

Result<std::unique_ptr<Controller>> startStorageVersionMigratorController(ControllerContext& ctx) {
  constexpr const char* kName = "storage-version-migrator-controller";
  if (!ctx.featureGates->enabled("StorageVersionMigrator") || !ctx.featureGates->enabled("InformerResourceVersion"))
    return Status(StatusCode::kCancelled, "the StorageVersionMigrator or InformerResourceVersion feature is disabled");
  if (!ctx.options->garbageCollectorController.enableGarbageCollector)
    return Status(StatusCode::kInvalidArgument, "storage version migrator requires garbage collector");
  if (!ctx.featureGates->enabled("InOrderInformers"))
    return Status(StatusCode::kInvalidArgument,
                  "storage version migrator requires the InOrderInformers feature gate to be enabled");
  // It can make many requests while migrating: 20x the QPS, 100x the burst.
  auto cfg = ctx.clientBuilder->config(kName);
  if (!cfg.ok()) return cfg.status();
  cfg->qps *= 20;
  cfg->burst *= 100;
  auto c = client::RestClient::create(*cfg);
  if (!c.ok()) return c.status();
  auto discovery = std::make_shared<client::DiscoveryClient>(*c);
  auto& svms = ctx.informerFactory->forType<api::storagemigration::v1::StorageVersionMigration>();
  GetMonitorFunc getMonitor = [gc = ctx.garbageCollector](const client::GroupVersionResource& gvr) {
    MonitorView v;
    if (auto collector = gc.lock()) v.informer = collector->graphBuilder().getMonitor(gvr);
    return v;
  };
  auto loops = std::make_shared<SVMLoops>();
  loops->svm = std::make_shared<SVMController>(kName, *c, discovery, svms, getMonitor);
  loops->rv = std::make_shared<ResourceVersionController>(*c, discovery, svms);
  loops->runner = std::make_shared<MigrationRunnerController>(*c, svms);
  return newControllerLoop(loops, [](SVMLoops& l, std::stop_token stop) {
    l.svm->run(stop);
    l.rv->run(stop);
    l.runner->run(stop);
  });
}

}  // namespace

void registerStorageVersionMigratorInitFunc(const std::function<void(const std::string&, InitFunc)>& setInit) {
  setInit("storage-version-migrator-controller", startStorageVersionMigratorController);
}

}  // namespace kcm::controllers
