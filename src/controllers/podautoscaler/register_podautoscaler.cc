#include "controllers/podautoscaler/register_podautoscaler.h"

#include "api/gen/autoscaling_v2_json.h"
#include "api/gen/core_v1_json.h"
#include "controllers/context.h"
#include "controllers/controller.h"
#include "controllers/podautoscaler/horizontal.h"

namespace kcm::controllers {
namespace {

Result<std::unique_ptr<Controller>> startHorizontalPodAutoscalerController(ControllerContext& ctx) {
  // One identity for the scale, metrics and HPA clients, as upstream's "horizontal-pod-autoscaler".
  auto c = ctx.clientBuilder->client("horizontal-pod-autoscaler");
  if (!c.ok()) return c.status();
  const auto& options = *ctx.options;
  podautoscaler::HorizontalControllerOptions opts;
  opts.resyncPeriod = options.horizontalPodAutoscalerController.horizontalPodAutoscalerSyncPeriod;
  opts.downscaleStabilisationWindow = options.horizontalPodAutoscalerController.horizontalPodAutoscalerDownscaleStabilization;
  opts.tolerance = options.horizontalPodAutoscalerController.horizontalPodAutoscalerTolerance;
  opts.cpuInitializationPeriod = options.horizontalPodAutoscalerController.horizontalPodAutoscalerCpuInitializationPeriod;
  opts.delayOfInitialReadinessStatus = options.horizontalPodAutoscalerController.horizontalPodAutoscalerInitialReadinessDelay;
  const auto& gates = *ctx.featureGates;
  opts.scaleToZero = gates.enabled("HPAScaleToZero");
  opts.generation = gates.enabled("HPAGeneration");
  opts.configurableTolerance = gates.enabled("HPAConfigurableTolerance");
  opts.podLevelResources = gates.enabled("PodLevelResources");
  opts.staleConsistency = gates.enabled("StaleControllerConsistencyHPA");
  auto recorder = ctx.newEventRecorder(*c, "horizontal-pod-autoscaler");
  auto ctrl = std::make_shared<podautoscaler::HorizontalController>(
      *c, recorder, ctx.discovery, podautoscaler::newRESTMetricsClient(*c, ctx.discovery),
      ctx.informerFactory->forType<api::autoscaling::v2::HorizontalPodAutoscaler>(),
      ctx.informerFactory->forType<api::core::v1::Pod>(), opts);
  const int workers = options.horizontalPodAutoscalerController.concurrentHorizontalPodAutoscalerSyncs;
  return newControllerLoop(ctrl, [workers](auto& h, std::stop_token stop) { h.run(workers, stop); });
}

}  // namespace

void registerPodAutoscalerInitFunc(const std::function<void(const std::string&, InitFunc)>& setInit) {
  setInit("horizontal-pod-autoscaler-controller", startHorizontalPodAutoscalerController);
}

}  // namespace kcm::controllers
