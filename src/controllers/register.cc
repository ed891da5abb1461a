// Init functions of the controllers implemented so far, attached to the descriptor table.
#include <fstream>
#include <sstream>

#include "api/gen/apps_v1_json.h"
#include "api/gen/batch_v1_json.h"
#include "api/gen/coordination_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/gen/discovery_v1_json.h"
#include "api/gen/networking_v1_json.h"
#include "api/gen/policy_v1_json.h"
#include "api/gen/rbac_v1_json.h"
#include "base/log.h"
#include "controllers/bootstrap/bootstrapsigner.h"
#include "controllers/bootstrap/tokencleaner.h"
#include "controllers/certificates/register_certificates.h"
#include "controllers/clusterroleaggregation/clusterroleaggregation_controller.h"
#include "controllers/context.h"
#include "controllers/cronjob/cronjob_controller.h"
#include "controllers/daemon/daemon_controller.h"
#include "controllers/controller.h"
#include "controllers/deployment/deployment_controller.h"
#include "controllers/disruption/disruption_controller.h"
#include "controllers/endpoint/endpoints_controller.h"
#include "controllers/endpointslice/endpointslice_controller.h"
#include "controllers/endpointslicemirroring/endpointslicemirroring_controller.h"
#include "controllers/garbagecollector/garbagecollector.h"
#include "controllers/job/job_controller.h"
#include "controllers/namespace/namespace_controller.h"
#include "controllers/register.h"
#include "controllers/nodeipam/ipam_config.h"
#include "controllers/nodeipam/range_allocator.h"
#include "controllers/nodelifecycle/node_lifecycle_controller.h"
#include "controllers/podautoscaler/register_podautoscaler.h"
#include "controllers/podgc/gc_controller.h"
#include "controllers/registry.h"
#include "controllers/replicaset/replica_set.h"
#include "controllers/resourceclaim/register_resourceclaim.h"
#include "controllers/scheduling/register_scheduling.h"
#include "controllers/storageversiongc/register_storageversiongc.h"
#include "controllers/storageversionmigrator/register_svm.h"
#include "controllers/resourcequota/register_resourcequota.h"
#include "controllers/rootcacertpublisher/publisher.h"
#include "controllers/serviceaccount/serviceaccounts_controller.h"
#include "controllers/servicecidrs/servicecidrs_controller.h"
#include "controllers/serviceaccounttoken/tokens_controller.h"
#include "controllers/statefulset/stateful_set.h"
#include "controllers/tainteviction/taint_eviction.h"
#include "controllers/ttl/ttl_controller.h"
#include "controllers/ttlafterfinished/ttlafterfinished_controller.h"
#include "controllers/devicetainteviction/register_devicetainteviction.h"
#include "controllers/resourcepoolstatusrequest/register_resourcepoolstatusrequest.h"
#include "controllers/validatingadmissionpolicystatus/register_vapstatus.h"
#include "controllers/volume/register_volume.h"

namespace kcm::controllers {
namespace {

// Names registered that the descriptor table lacks: a typo here must not silently leave a controller out.
std::vector<std::string>& unknownNames() {
  static std::vector<std::string> names;
  return names;
}

void setInit(const std::string& name, InitFunc f) {
  for (auto& d : mutableControllerDescriptors())
    if (d.name == name) {
      d.init = std::move(f);
      return;
    }
  unknownNames().push_back(name);
}

Result<std::unique_ptr<Controller>> startServiceAccountController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("service-account-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<ServiceAccountsController>(
      *c, ctx.informerFactory->forType<api::core::v1::ServiceAccount>(),
      ctx.informerFactory->forType<api::core::v1::Namespace>());
  // upstream runs 1 worker, no flag
  return newControllerLoop(ctrl, [](auto& c, std::stop_token stop) { c.run(1, stop); });
}

// --root-ca-file's content, else the kubeconfig's CA (upstream's fallback for both controllers that publish it).
Result<std::string> rootCA(const ControllerContext& ctx) {
  const std::string& file = ctx.options->serviceaccountController.rootCaFile;
  if (file.empty()) return ctx.rootClient->config().caData;
  std::ifstream f(file);
  if (!f) return Status(StatusCode::kInvalidArgument, "error reading root-ca-file at " + file);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Result<std::unique_ptr<Controller>> startRootCACertPublisher(ControllerContext& ctx) {
  auto ca = rootCA(ctx);
  if (!ca.ok()) return ca.status();
  auto c = ctx.clientBuilder->client("root-ca-cert-publisher");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<RootCACertPublisher>(*c, *ca,
                                                    ctx.informerFactory->forType<api::core::v1::ConfigMap>(),
                                                    ctx.informerFactory->forType<api::core::v1::Namespace>());
  return newControllerLoop(ctrl, [](auto& c, std::stop_token stop) { c.run(1, stop); });
}

// Both disabled by default; kubeadm enables them by name (--controllers=*,bootstrapsigner,tokencleaner).
Result<std::unique_ptr<Controller>> startBootstrapSignerController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("bootstrap-signer");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<bootstrap::Signer>(*c, ctx.informerFactory->forType<api::core::v1::Secret>(),
                                                  ctx.informerFactory->forType<api::core::v1::ConfigMap>());
  return newControllerLoop(ctrl, [](auto& c, std::stop_token stop) { c.run(stop); });
}

Result<std::unique_ptr<Controller>> startTokenCleanerController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("token-cleaner");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<bootstrap::TokenCleaner>(*c, ctx.informerFactory->forType<api::core::v1::Secret>());
  return newControllerLoop(ctrl, [](auto& c, std::stop_token stop) { c.run(stop); });
}

Result<std::unique_ptr<Controller>> startEndpointsController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("endpoint-controller");
  if (!c.ok()) return c.status();
  const auto& endpointsController = ctx.options->endpointsController;
  auto ctrl = std::make_shared<endpoint::EndpointsController>(
      *c, ctx.informerFactory->forType<api::core::v1::Pod>(), ctx.informerFactory->forType<api::core::v1::Service>(),
      ctx.informerFactory->forType<api::core::v1::Endpoints>(), ctx.newEventRecorder(*c, endpoint::kControllerName),
      std::chrono::duration_cast<Clock::Duration>(endpointsController.endpointUpdatesBatchPeriod));
  const int workers = endpointsController.concurrentEndpointSyncs;
  return newControllerLoop(ctrl, [workers](auto& e, std::stop_token stop) { e.run(workers, stop); });
}

Result<std::unique_ptr<Controller>> startEndpointSliceController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("endpointslice-controller");
  if (!c.ok()) return c.status();
  const auto& endpointsliceController = ctx.options->endpointsliceController;
  auto ctrl = std::make_shared<endpointslice::EndpointSliceController>(
      *c, ctx.informerFactory->forType<api::core::v1::Pod>(), ctx.informerFactory->forType<api::core::v1::Service>(),
      ctx.informerFactory->forType<api::core::v1::Node>(),
      ctx.informerFactory->forType<api::discovery::v1::EndpointSlice>(), endpointsliceController.maxEndpointsPerSlice,
      ctx.newEventRecorder(*c, "endpoint-slice-controller"),
      std::chrono::duration_cast<Clock::Duration>(endpointsliceController.endpointsliceUpdatesBatchPeriod));
  const int workers = endpointsliceController.concurrentServiceEndpointSyncs;
  return newControllerLoop(ctrl, [workers](auto& e, std::stop_token stop) { e.run(workers, stop); });
}

Result<std::unique_ptr<Controller>> startEndpointSliceMirroringController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("endpointslicemirroring-controller");
  if (!c.ok()) return c.status();
  const auto& endpointsliceMirroringController = ctx.options->endpointsliceMirroringController;
  auto ctrl = std::make_shared<endpointslicemirroring::EndpointSliceMirroringController>(
      *c, ctx.informerFactory->forType<api::core::v1::Endpoints>(),
      ctx.informerFactory->forType<api::discovery::v1::EndpointSlice>(),
      ctx.informerFactory->forType<api::core::v1::Service>(),
      endpointsliceMirroringController.mirroringMaxEndpointsPerSubset,
      ctx.newEventRecorder(*c, "endpoint-slice-mirroring-controller"),
      std::chrono::duration_cast<Clock::Duration>(endpointsliceMirroringController.mirroringEndpointsliceUpdatesBatchPeriod));
  const int workers = endpointsliceMirroringController.mirroringConcurrentServiceEndpointSyncs;
  return newControllerLoop(ctrl, [workers](auto& e, std::stop_token stop) { e.run(workers, stop); });
}

Result<std::unique_ptr<Controller>> startServiceCIDRsController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("service-cidrs-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<servicecidrs::ServiceCIDRsController>(
      *c, ctx.informerFactory->forType<api::networking::v1::ServiceCIDR>(),
      ctx.informerFactory->forType<api::networking::v1::IPAddress>(),
      ctx.newEventRecorder(*c, servicecidrs::kControllerName));
  // upstream runs 5 workers, no flag
  return newControllerLoop(ctrl, [](auto& s, std::stop_token stop) { s.run(5, stop); });
}

// upstream's disruption-controller keeps its own event broadcaster, source component "controllermanager".
Result<std::unique_ptr<Controller>> startDisruptionController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("disruption-controller");
  if (!c.ok()) return c.status();
  auto& f = *ctx.informerFactory;
  disruption::DisruptionController::Informers inf{
      f.forType<api::core::v1::Pod>(), f.forType<api::policy::v1::PodDisruptionBudget>(),
      f.forType<api::core::v1::ReplicationController>(), f.forType<api::apps::v1::ReplicaSet>(),
      f.forType<api::apps::v1::Deployment>(), f.forType<api::apps::v1::StatefulSet>()};
  auto ctrl = std::make_shared<disruption::DisruptionController>(*c, inf, ctx.discovery,
                                                                 ctx.newEventRecorder(*c, "controllermanager"));
  const int workers = ctx.options->disruptionController.concurrentDisruptionSyncs;
  return newControllerLoop(ctrl, [workers](auto& d, std::stop_token stop) { d.run(workers, stop); });
}

Result<std::unique_ptr<Controller>> startTTLAfterFinishedController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("ttl-after-finished-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<ttlafterfinished::TTLAfterFinishedController>(
      *c, ctx.informerFactory->forType<api::batch::v1::Job>());
  const int workers = ctx.options->ttlAfterFinishedController.concurrentTtlAfterFinishedSyncs;
  return newControllerLoop(ctrl, [workers](auto& t, std::stop_token stop) { t.run(workers, stop); });
}

Result<std::unique_ptr<Controller>> startJobController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("job-controller");
  if (!c.ok()) return c.status();
  job::JobControllerOptions o;
  o.staleConsistency = ctx.featureGates->enabled("StaleControllerConsistencyJob");
  o.resetStartTimeOnSuspend = ctx.featureGates->enabled("MutableSchedulingDirectivesForSuspendedJobs");
  if (ctx.featureGates->enabled("WorkloadWithJob"))  // alpha, off by default at the pin
    KLOG_WARNING("\"WorkloadWithJob is enabled but not implemented: Jobs get no Workload or PodGroup\" "
                 "controller=\"job-controller\"");
  auto ctrl = std::make_shared<job::JobController>(*c, ctx.newEventRecorder(*c, "job-controller"),
                                                   ctx.informerFactory->forType<api::batch::v1::Job>(),
                                                   ctx.informerFactory->forType<api::core::v1::Pod>(), o);
  const int workers = ctx.options->jobController.concurrentJobSyncs;
  return newControllerLoop(ctrl, [workers](auto& j, std::stop_token stop) { j.run(workers, stop); });
}

Result<std::unique_ptr<Controller>> startDaemonSetController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("daemon-set-controller");
  if (!c.ok()) return c.status();
  daemon::DaemonSetsControllerOptions o;
  o.staleConsistency = ctx.featureGates->enabled("StaleControllerConsistencyDaemonSet");
  o.comparisonOperators = ctx.featureGates->enabled("TaintTolerationComparisonOperators");
  auto ctrl = std::make_shared<daemon::DaemonSetsController>(
      *c, ctx.newEventRecorder(*c, "daemonset-controller"), ctx.informerFactory->forType<api::apps::v1::DaemonSet>(),
      ctx.informerFactory->forType<api::apps::v1::ControllerRevision>(),
      ctx.informerFactory->forType<api::core::v1::Pod>(), ctx.informerFactory->forType<api::core::v1::Node>(), o);
  const int workers = ctx.options->daemonsetController.concurrentDaemonsetSyncs;
  return newControllerLoop(ctrl, [workers](auto& d, std::stop_token stop) { d.run(workers, stop); });
}

Result<std::unique_ptr<Controller>> startStatefulSetController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("statefulset-controller");
  if (!c.ok()) return c.status();
  statefulset::StatefulSetControllerOptions o;
  o.staleConsistency = ctx.featureGates->enabled("StaleControllerConsistencyStatefulSet");
  o.maxUnavailable = ctx.featureGates->enabled("MaxUnavailableStatefulSet");
  o.semanticRevisionComparison = ctx.featureGates->enabled("StatefulSetSemanticRevisionComparison");
  if (ctx.featureGates->enabled("StatefulSetRecreateStrategy"))  // alpha, off by default at the pin
    KLOG_WARNING("\"StatefulSetRecreateStrategy is enabled but not implemented: the Recreate strategy is refused\" "
                 "controller=\"statefulset-controller\"");
  auto ctrl = std::make_shared<statefulset::StatefulSetController>(
      *c, ctx.newEventRecorder(*c, "statefulset-controller"), ctx.informerFactory->forType<api::apps::v1::StatefulSet>(),
      ctx.informerFactory->forType<api::core::v1::Pod>(),
      ctx.informerFactory->forType<api::core::v1::PersistentVolumeClaim>(),
      ctx.informerFactory->forType<api::apps::v1::ControllerRevision>(), o);
  const int workers = ctx.options->statefulsetController.concurrentStatefulsetSyncs;
  return newControllerLoop(ctrl, [workers](auto& s, std::stop_token stop) { s.run(workers, stop); });
}

Result<std::unique_ptr<Controller>> startCronJobController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("cronjob-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<cronjob::CronJobController>(*c, ctx.newEventRecorder(*c, "cronjob-controller"),
                                                           ctx.informerFactory->forType<api::batch::v1::CronJob>(),
                                                           ctx.informerFactory->forType<api::batch::v1::Job>());
  const int workers = ctx.options->cronjobController.concurrentCronJobSyncs;
  return newControllerLoop(ctrl, [workers](auto& j, std::stop_token stop) { j.run(workers, stop); });
}

Result<std::unique_ptr<Controller>> startTTLController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("ttl-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<TTLController>(*c, ctx.informerFactory->forType<api::core::v1::Node>());
  // upstream runs 5 workers, no flag
  return newControllerLoop(ctrl, [](auto& c, std::stop_token stop) { c.run(5, stop); });
}

// startNodeIpamController: RangeAllocator only (built-in cloud allocators are gone upstream too); IPv4, IPv6 or
// dual-stack.
Result<std::unique_ptr<Controller>> startNodeIpamController(ControllerContext& ctx) {
  const auto& o = *ctx.options;
  if (!o.generic.allocateNodeCidrs)
    return Status(StatusCode::kCancelled, "node-ipam-controller needs --allocate-node-cidrs=true");
  const std::string& clusterCIDR = o.generic.clusterCidr;
  if (clusterCIDR.empty())
    return Status(StatusCode::kInvalidArgument,
                  "kube-controller-manager --cluster-cidr flag must not be empty when --allocate-node-cidrs is set");
  const auto& nodeIpamController = o.nodeIpamController;
  auto cfg = nodeIpamConfig(clusterCIDR, nodeIpamController.nodeCidrMaskSize, nodeIpamController.nodeCidrMaskSizeIpv4,
                            nodeIpamController.nodeCidrMaskSizeIpv6, nodeIpamController.serviceClusterIpRange);
  if (!cfg.ok()) return cfg.status();
  auto c = ctx.clientBuilder->client("node-controller");
  if (!c.ok()) return c.status();
  auto alloc = RangeAllocator::create(*c, ctx.newEventRecorder(*c, "cidrAllocator"),
                                      ctx.informerFactory->forType<api::core::v1::Node>(), cfg->clusterCIDRs,
                                      cfg->nodeMaskSizes, cfg->serviceCIDRs, RealClock::get(), ctx.stop);
  if (!alloc.ok()) return alloc.status();
  std::shared_ptr<RangeAllocator> ctrl = std::move(alloc).value();
  // upstream's cidrUpdateWorkers
  return newControllerLoop(ctrl, [](auto& c, std::stop_token stop) { c.run(30, stop); });
}

Result<std::unique_ptr<Controller>> startPodGCController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("pod-garbage-collector");
  if (!c.ok()) return c.status();
  const int threshold = ctx.options->podGarbageCollectorController.terminatedPodGcThreshold;
  auto ctrl = std::make_shared<PodGCController>(*c, ctx.informerFactory->forType<api::core::v1::Pod>(),
                                                ctx.informerFactory->forType<api::core::v1::Node>(),
                                                threshold);
  return newControllerLoop(ctrl, [](auto& c, std::stop_token stop) { c.run(stop); });
}

Result<std::unique_ptr<Controller>> startClusterRoleAggregationController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("clusterrole-aggregation-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<ClusterRoleAggregationController>(
      *c, ctx.informerFactory->forType<api::rbac::v1::ClusterRole>());
  // upstream runs 5 workers, no flag
  return newControllerLoop(ctrl, [](auto& c, std::stop_token stop) { c.run(5, stop); });
}

// The token controller always uses the root credentials (upstream's rootClientBuilder, "tokens-controller"):
// it must run before per-controller service-account credentials can work.
Result<std::unique_ptr<Controller>> startServiceAccountTokenController(ControllerContext& ctx) {
  auto gen = LegacyTokenGenerator::fromPemFile(ctx.options->serviceaccountController.serviceAccountPrivateKeyFile);
  if (!gen.ok()) return gen.status();
  auto ca = rootCA(ctx);
  if (!ca.ok()) return ca.status();
  SimpleClientBuilder root(ctx.rootClient->config());
  auto c = root.client("tokens-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<TokensController>(*c, std::move(gen).value(), *ca,
                                                 ctx.informerFactory->forType<api::core::v1::ServiceAccount>(),
                                                 ctx.informerFactory->forType<api::core::v1::Secret>());
  const int workers = ctx.options->serviceaccountController.concurrentServiceaccountTokenSyncs;
  return newControllerLoop(ctrl, [workers](auto& c, std::stop_token stop) { c.run(workers, stop); });
}

Result<std::unique_ptr<Controller>> startNodeLifecycleController(ControllerContext& ctx) {
  const auto& nodeLifecycleController = ctx.options->nodeLifecycleController;
  NodeLifecycleOptions o;
  o.nodeMonitorPeriod = std::chrono::duration_cast<Clock::Duration>(nodeLifecycleController.nodeMonitorPeriod);
  o.nodeStartupGracePeriod = std::chrono::duration_cast<Clock::Duration>(nodeLifecycleController.nodeStartupGracePeriod);
  o.nodeMonitorGracePeriod = std::chrono::duration_cast<Clock::Duration>(nodeLifecycleController.nodeMonitorGracePeriod);
  o.evictionLimiterQPS = nodeLifecycleController.nodeEvictionRate;
  o.secondaryEvictionLimiterQPS = nodeLifecycleController.secondaryNodeEvictionRate;
  o.unhealthyZoneThreshold = nodeLifecycleController.unhealthyZoneThreshold;
  o.largeClusterThreshold = nodeLifecycleController.largeClusterSizeThreshold;
  o.leaseCircuitBreaker = ctx.featureGates->enabled("NodeControllerLeaseCircuitBreaker");
  auto c = ctx.clientBuilder->client("node-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<NodeLifecycleController>(
      *c, ctx.newEventRecorder(*c, "node-controller"),
      ctx.informerFactory->forType<api::coordination::v1::Lease>(), ctx.informerFactory->forType<api::core::v1::Pod>(),
      ctx.informerFactory->forType<api::core::v1::Node>(), o);
  return newControllerLoop(ctrl, [](auto& c, std::stop_token stop) { c.run(stop); });
}

Result<std::unique_ptr<Controller>> startTaintEvictionController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("node-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<TaintEvictionController>(
      *c, ctx.newEventRecorder(*c, "taint-eviction-controller"),
      ctx.informerFactory->forType<api::core::v1::Pod>(), ctx.informerFactory->forType<api::core::v1::Node>(),
      "taint-eviction-controller", ctx.featureGates->enabled("TaintTolerationComparisonOperators"));
  return newControllerLoop(ctrl, [](auto& c, std::stop_token stop) { c.run(stop); });
}

template <class K>
Result<std::unique_ptr<Controller>> startReplicaSetLike(ControllerContext& ctx, const char* clientName, int workers) {
  auto c = ctx.clientBuilder->client(clientName);
  if (!c.ok()) return c.status();
  ReplicaSetControllerOptions o;
  o.staleConsistency = ctx.featureGates->enabled("StaleControllerConsistencyReplicaSet");
  o.terminatingReplicas = ctx.featureGates->enabled("DeploymentReplicaSetTerminatingReplicas");
  auto ctrl = std::make_shared<ReplicaSetControllerT<K>>(*c, ctx.newEventRecorder(*c, clientName),
                                                         ctx.informerFactory->forType<typename K::Object>(),
                                                         ctx.informerFactory->forType<api::core::v1::Pod>(), o);
  return newControllerLoop(ctrl, [workers](auto& c, std::stop_token stop) { c.run(workers, stop); });
}

}  // namespace

namespace {
Result<std::unique_ptr<Controller>> startDeploymentController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("deployment-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<DeploymentController>(
      *c, ctx.newEventRecorder(*c, "deployment-controller"),
      ctx.informerFactory->forType<api::apps::v1::Deployment>(), ctx.informerFactory->forType<api::apps::v1::ReplicaSet>(),
      ctx.informerFactory->forType<api::core::v1::Pod>(), ctx.featureGates->enabled("DeploymentReplicaSetTerminatingReplicas"));
  const int workers = ctx.options->deploymentController.concurrentDeploymentSyncs;
  return newControllerLoop(ctrl, [workers](auto& c, std::stop_token stop) { c.run(workers, stop); });
}
// The namespace controller deletes a lot at once: its client gets QPS x20 and burst x100, as upstream.
Result<std::unique_ptr<Controller>> startNamespaceController(ControllerContext& ctx) {
  auto cfg = ctx.clientBuilder->config("namespace-controller");
  if (!cfg.ok()) return cfg.status();
  cfg->qps *= 20;
  cfg->burst *= 100;
  auto c = client::RestClient::create(*cfg);
  if (!c.ok()) return c.status();
  const auto& namespaceController = ctx.options->namespaceController;
  // Fresh discovery on every call; failed groups are reported, not dropped silently.
  auto deleter = std::make_unique<NamespacedResourcesDeleter>(
      *c, discoverPreferredNamespacedResources(std::make_shared<client::DiscoveryClient>(*c)), "kubernetes");
  if (Status s = deleter->initOpCache(); !s.ok()) return s;
  auto ctrl = std::make_shared<NamespaceController>(std::move(deleter),
                                                    ctx.informerFactory->forType<api::core::v1::Namespace>(),
                                                    std::chrono::duration_cast<Clock::Duration>(
                                                        namespaceController.namespaceSyncPeriod));
  const int workers = namespaceController.concurrentNamespaceSyncs;
  return newControllerLoop(ctrl, [workers](auto& c, std::stop_token stop) { c.run(workers, stop); });
}

// The collector's metadata client gets twice the QPS, as upstream. No discovery here: run() syncs it at once and
// every 30 s, and a failure is retried, never fatal (upstream core.go).
Result<std::unique_ptr<Controller>> startGarbageCollectorController(ControllerContext& ctx) {
  const auto& garbageCollectorController = ctx.options->garbageCollectorController;
  if (!garbageCollectorController.enableGarbageCollector)
    return Status(StatusCode::kCancelled, "garbage collector disabled by --enable-garbage-collector=false");
  auto cfg = ctx.clientBuilder->config("generic-garbage-collector");
  if (!cfg.ok()) return cfg.status();
  cfg->qps *= 2;
  auto c = client::RestClient::create(*cfg);
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<gc::GarbageCollector>(*c, std::make_shared<client::DiscoveryClient>(*c),
                                                     *ctx.informerFactory,
                                                     ctx.newEventRecorder(*c, "garbage-collector-controller"));
  ctx.garbageCollector = ctrl;
  ctx.addDebugHandler("/debug/controllers/garbagecollector/graph",
                      [weak = std::weak_ptr<gc::GarbageCollector>(ctrl)]() -> std::string {
                        auto gc = weak.lock();
                        return gc ? gc->graphDOT() : "";
                      });
  const int workers = garbageCollectorController.concurrentGcSyncs;
  return newControllerLoop(ctrl, [workers](auto& c, std::stop_token stop) { c.run(workers, stop); });
}

}  // namespace

Status registerControllerInitFuncs() {
  setInit("garbage-collector-controller", startGarbageCollectorController);
  setInit("namespace-controller", startNamespaceController);
  setInit("deployment-controller", startDeploymentController);
  setInit("replicaset-controller", [](ControllerContext& ctx) {
    return startReplicaSetLike<ReplicaSetKind>(ctx, "replicaset-controller", ctx.options->replicasetController.concurrentReplicasetSyncs);
  });
  setInit("replicationcontroller-controller", [](ControllerContext& ctx) {
    return startReplicaSetLike<ReplicationControllerKind>(ctx, "replication-controller", ctx.options->replicationcontrollerController.concurrentRcSyncs);
  });
  setInit("node-lifecycle-controller", startNodeLifecycleController);
  setInit("taint-eviction-controller", startTaintEvictionController);
  setInit("serviceaccount-token-controller", startServiceAccountTokenController);
  setInit("clusterrole-aggregation-controller", startClusterRoleAggregationController);
  setInit("pod-garbage-collector-controller", startPodGCController);
  setInit("node-ipam-controller", startNodeIpamController);
  setInit("ttl-controller", startTTLController);
  setInit("disruption-controller", startDisruptionController);
  setInit("ttl-after-finished-controller", startTTLAfterFinishedController);
  setInit("job-controller", startJobController);
  setInit("cronjob-controller", startCronJobController);
  setInit("daemonset-controller", startDaemonSetController);
  setInit("statefulset-controller", startStatefulSetController);
  setInit("endpoints-controller", startEndpointsController);
  setInit("endpointslice-controller", startEndpointSliceController);
  setInit("endpointslice-mirroring-controller", startEndpointSliceMirroringController);
  setInit("service-cidr-controller", startServiceCIDRsController);
  setInit("serviceaccount-controller", startServiceAccountController);
  setInit("root-ca-certificate-publisher-controller", startRootCACertPublisher);
  setInit("bootstrap-signer-controller", startBootstrapSignerController);
  setInit("token-cleaner-controller", startTokenCleanerController);
  registerCertificatesInitFuncs(setInit, rootCA);
  registerResourceQuotaInitFunc(setInit);
  registerPodAutoscalerInitFunc(setInit);
  registerVolumeInitFuncs(setInit);
  registerResourceClaimInitFunc(setInit);
  registerStorageVersionMigratorInitFunc(setInit);
  registerStorageVersionGCInitFunc(setInit);
  registerValidatingAdmissionPolicyStatusInitFunc(setInit);
  registerDeviceTaintEvictionInitFunc(setInit);
  registerResourcePoolStatusRequestInitFunc(setInit);
  registerSchedulingInitFuncs(setInit);
  std::string missing;
  for (const auto& d : controllerDescriptors())
    if (!d.init) missing += (missing.empty() ? "" : ", ") + d.name;
  if (!missing.empty()) return Status(StatusCode::kInternal, "no init function registered for controllers: " + missing);
  if (!unknownNames().empty()) {
    std::string names;
    for (const auto& n : unknownNames()) names += (names.empty() ? "" : ", ") + n;
    return Status(StatusCode::kInternal, "init functions registered for controllers not in the descriptor table: " + names);
  }
  return Status::Ok();
}

}  // namespace kcm::controllers
