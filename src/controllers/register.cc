// Init functions of the controllers implemented so far, attached to the descriptor table.
#include <fstream>
#include <sstream>

#include "api/gen/apps_v1_json.h"
#include "api/gen/coordination_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/gen/rbac_v1_json.h"
#include "controllers/clusterroleaggregation/clusterroleaggregation_controller.h"
#include "controllers/context.h"
#include "controllers/deployment/deployment_controller.h"
#include "controllers/garbagecollector/garbagecollector.h"
#include "controllers/namespace/namespace_controller.h"
#include "controllers/register.h"
#include "controllers/nodeipam/ipam_config.h"
#include "controllers/nodeipam/range_allocator.h"
#include "controllers/nodelifecycle/node_lifecycle_controller.h"
#include "controllers/podgc/gc_controller.h"
#include "controllers/registry.h"
#include "controllers/replicaset/replica_set.h"
#include "controllers/rootcacertpublisher/publisher.h"
#include "controllers/serviceaccount/serviceaccounts_controller.h"
#include "controllers/serviceaccounttoken/tokens_controller.h"
#include "controllers/tainteviction/taint_eviction.h"
#include "controllers/ttl/ttl_controller.h"

namespace kcm::controllers {
namespace {

void setInit(const std::string& name, InitFunc f) {
  for (auto& d : mutableControllerDescriptors())
    if (d.name == name) d.init = std::move(f);
}

Status startServiceAccountController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("service-account-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<ServiceAccountsController>(
      *c, ctx.informerFactory->forType<api::core::v1::ServiceAccount>(),
      ctx.informerFactory->forType<api::core::v1::Namespace>());
  auto workers = ctx.flags->getInt("concurrent-serviceaccount-syncs");
  ctrl->run(workers.ok() ? static_cast<int>(*workers) : 1, ctx.stop);
  ctx.running.push_back(ctrl);
  return Status::Ok();
}

// --root-ca-file's content, else the kubeconfig's CA (upstream's fallback for both controllers that publish it).
Result<std::string> rootCA(const ControllerContext& ctx) {
  std::string file = ctx.flags->get("root-ca-file");
  if (file.empty()) return ctx.rootClient->config().caData;
  std::ifstream f(file);
  if (!f) return Status(StatusCode::kInvalidArgument, "error reading root-ca-file at " + file);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Status startRootCACertPublisher(ControllerContext& ctx) {
  auto ca = rootCA(ctx);
  if (!ca.ok()) return ca.status();
  auto c = ctx.clientBuilder->client("root-ca-cert-publisher");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<RootCACertPublisher>(*c, *ca,
                                                    ctx.informerFactory->forType<api::core::v1::ConfigMap>(),
                                                    ctx.informerFactory->forType<api::core::v1::Namespace>());
  ctrl->run(1, ctx.stop);
  ctx.running.push_back(ctrl);
  return Status::Ok();
}

Status startTTLController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("ttl-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<TTLController>(*c, ctx.informerFactory->forType<api::core::v1::Node>());
  ctrl->run(5, ctx.stop);  // upstream runs 5 workers, no flag
  ctx.running.push_back(ctrl);
  return Status::Ok();
}

// startNodeIpamController: RangeAllocator only (built-in cloud allocators are gone upstream too); IPv4, IPv6 or
// dual-stack.
Status startNodeIpamController(ControllerContext& ctx) {
  const auto& f = *ctx.flags;
  if (!f.getBool("allocate-node-cidrs"))
    return Status(StatusCode::kCancelled, "node-ipam-controller needs --allocate-node-cidrs=true");
  const std::string clusterCIDR = f.get("cluster-cidr");
  if (clusterCIDR.empty())
    return Status(StatusCode::kInvalidArgument,
                  "kube-controller-manager --cluster-cidr flag must not be empty when --allocate-node-cidrs is set");
  auto intFlag = [&](const char* name) {
    auto v = f.getInt(name);
    return v.ok() ? static_cast<int>(*v) : 0;
  };
  auto cfg = nodeIpamConfig(clusterCIDR, intFlag("node-cidr-mask-size"), intFlag("node-cidr-mask-size-ipv4"),
                            intFlag("node-cidr-mask-size-ipv6"), f.get("service-cluster-ip-range"));
  if (!cfg.ok()) return cfg.status();
  auto c = ctx.clientBuilder->client("node-controller");
  if (!c.ok()) return c.status();
  auto alloc = RangeAllocator::create(*c, ctx.eventBroadcaster->newRecorder("cidrAllocator"),
                                      ctx.informerFactory->forType<api::core::v1::Node>(), cfg->clusterCIDRs,
                                      cfg->nodeMaskSizes, cfg->serviceCIDRs);
  if (!alloc.ok()) return alloc.status();
  std::shared_ptr<RangeAllocator> ctrl = std::move(alloc).value();
  ctrl->run(30, ctx.stop);  // upstream's cidrUpdateWorkers
  ctx.running.push_back(ctrl);
  return Status::Ok();
}

Status startPodGCController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("pod-garbage-collector");
  if (!c.ok()) return c.status();
  auto threshold = ctx.flags->getInt("terminated-pod-gc-threshold");
  if (!threshold.ok()) return threshold.status();
  auto ctrl = std::make_shared<PodGCController>(*c, ctx.informerFactory->forType<api::core::v1::Pod>(),
                                                ctx.informerFactory->forType<api::core::v1::Node>(),
                                                static_cast<int>(*threshold));
  ctrl->run(ctx.stop);
  ctx.running.push_back(ctrl);
  return Status::Ok();
}

Status startClusterRoleAggregationController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("clusterrole-aggregation-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<ClusterRoleAggregationController>(
      *c, ctx.informerFactory->forType<api::rbac::v1::ClusterRole>());
  ctrl->run(5, ctx.stop);  // upstream runs 5 workers, no flag
  ctx.running.push_back(ctrl);
  return Status::Ok();
}

// The token controller always uses the root credentials (upstream's rootClientBuilder, "tokens-controller"):
// it must run before per-controller service-account credentials can work.
Status startServiceAccountTokenController(ControllerContext& ctx) {
  auto gen = LegacyTokenGenerator::fromPemFile(ctx.flags->get("service-account-private-key-file"));
  if (!gen.ok()) return gen.status();
  auto ca = rootCA(ctx);
  if (!ca.ok()) return ca.status();
  SimpleClientBuilder root(ctx.rootClient->config());
  auto c = root.client("tokens-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<TokensController>(*c, std::move(gen).value(), *ca,
                                                 ctx.informerFactory->forType<api::core::v1::ServiceAccount>(),
                                                 ctx.informerFactory->forType<api::core::v1::Secret>());
  auto workers = ctx.flags->getInt("concurrent-serviceaccount-token-syncs");
  ctrl->run(workers.ok() ? static_cast<int>(*workers) : 5, ctx.stop);
  ctx.running.push_back(ctrl);
  return Status::Ok();
}

Status startNodeLifecycleController(ControllerContext& ctx) {
  const auto& f = *ctx.flags;
  NodeLifecycleOptions o;
  auto duration = [&](const char* name, Clock::Duration& out) -> Status {
    auto d = f.getDuration(name);
    if (!d.ok()) return d.status();
    out = std::chrono::duration_cast<Clock::Duration>(*d);
    return Status::Ok();
  };
  auto number = [&](const char* name, double& out) -> Status {
    auto v = f.getFloat(name);
    if (!v.ok()) return v.status();
    out = *v;
    return Status::Ok();
  };
  for (Status s : {duration("node-monitor-period", o.nodeMonitorPeriod),
                   duration("node-startup-grace-period", o.nodeStartupGracePeriod),
                   duration("node-monitor-grace-period", o.nodeMonitorGracePeriod),
                   number("node-eviction-rate", o.evictionLimiterQPS),
                   number("secondary-node-eviction-rate", o.secondaryEvictionLimiterQPS),
                   number("unhealthy-zone-threshold", o.unhealthyZoneThreshold)})
    if (!s.ok()) return s;
  auto large = f.getInt("large-cluster-size-threshold");
  if (!large.ok()) return large.status();
  o.largeClusterThreshold = static_cast<int>(*large);
  o.leaseCircuitBreaker = ctx.featureGates->enabled("NodeControllerLeaseCircuitBreaker");
  auto c = ctx.clientBuilder->client("node-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<NodeLifecycleController>(
      *c, ctx.eventBroadcaster->newRecorder("node-controller"),
      ctx.informerFactory->forType<api::coordination::v1::Lease>(), ctx.informerFactory->forType<api::core::v1::Pod>(),
      ctx.informerFactory->forType<api::core::v1::Node>(), o);
  ctrl->run(ctx.stop);
  ctx.running.push_back(ctrl);
  return Status::Ok();
}

Status startTaintEvictionController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("node-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<TaintEvictionController>(
      *c, ctx.eventBroadcaster->newRecorder("taint-eviction-controller"),
      ctx.informerFactory->forType<api::core::v1::Pod>(), ctx.informerFactory->forType<api::core::v1::Node>(),
      "taint-eviction-controller", ctx.featureGates->enabled("TaintTolerationComparisonOperators"));
  ctrl->run(ctx.stop);
  ctx.running.push_back(ctrl);
  return Status::Ok();
}

template <class K>
Status startReplicaSetLike(ControllerContext& ctx, const char* clientName, const char* workersFlag) {
  auto c = ctx.clientBuilder->client(clientName);
  if (!c.ok()) return c.status();
  auto workers = ctx.flags->getInt(workersFlag);
  if (!workers.ok()) return workers.status();
  ReplicaSetControllerOptions o;
  o.staleConsistency = ctx.featureGates->enabled("StaleControllerConsistencyReplicaSet");
  o.terminatingReplicas = ctx.featureGates->enabled("DeploymentReplicaSetTerminatingReplicas");
  auto ctrl = std::make_shared<ReplicaSetControllerT<K>>(*c, ctx.eventBroadcaster->newRecorder(clientName),
                                                         ctx.informerFactory->forType<typename K::Object>(),
                                                         ctx.informerFactory->forType<api::core::v1::Pod>(), o);
  ctrl->run(static_cast<int>(*workers), ctx.stop);
  ctx.running.push_back(ctrl);
  return Status::Ok();
}

}  // namespace

namespace {
Status startDeploymentController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("deployment-controller");
  if (!c.ok()) return c.status();
  auto workers = ctx.flags->getInt("concurrent-deployment-syncs");
  if (!workers.ok()) return workers.status();
  auto ctrl = std::make_shared<DeploymentController>(
      *c, ctx.eventBroadcaster->newRecorder("deployment-controller"),
      ctx.informerFactory->forType<api::apps::v1::Deployment>(), ctx.informerFactory->forType<api::apps::v1::ReplicaSet>(),
      ctx.informerFactory->forType<api::core::v1::Pod>(), ctx.featureGates->enabled("DeploymentReplicaSetTerminatingReplicas"));
  ctrl->run(static_cast<int>(*workers), ctx.stop);
  ctx.running.push_back(ctrl);
  return Status::Ok();
}
// The namespace controller deletes a lot at once: its client gets QPS x20 and burst x100, as upstream.
Status startNamespaceController(ControllerContext& ctx) {
  auto cfg = ctx.clientBuilder->config("namespace-controller");
  if (!cfg.ok()) return cfg.status();
  cfg->qps *= 20;
  cfg->burst *= 100;
  auto c = client::RestClient::create(*cfg);
  if (!c.ok()) return c.status();
  auto workers = ctx.flags->getInt("concurrent-namespace-syncs");
  if (!workers.ok()) return workers.status();
  auto resync = ctx.flags->getDuration("namespace-sync-period");
  if (!resync.ok()) return resync.status();
  auto discovery = std::make_shared<client::DiscoveryClient>(*c);
  auto mu = std::make_shared<std::mutex>();
  // Fresh discovery on every call (a namespace may hold resources of a CRD created a moment ago).
  auto discover = [discovery, mu]() -> Result<std::vector<client::APIResourceInfo>> {
    std::lock_guard l(*mu);
    discovery->invalidate();
    auto all = discovery->serverPreferredResources();
    if (!all.ok()) return all.status();
    std::vector<client::APIResourceInfo> out;
    for (auto& r : *all)
      if (r.namespaced) out.push_back(std::move(r));
    return out;
  };
  auto deleter = std::make_unique<NamespacedResourcesDeleter>(*c, discover, "kubernetes");
  if (Status s = deleter->initOpCache(); !s.ok()) return s;
  auto ctrl = std::make_shared<NamespaceController>(std::move(deleter),
                                                    ctx.informerFactory->forType<api::core::v1::Namespace>(),
                                                    std::chrono::duration_cast<Clock::Duration>(*resync));
  ctrl->run(static_cast<int>(*workers), ctx.stop);
  ctx.running.push_back(ctrl);
  return Status::Ok();
}

// The collector's metadata client gets twice the QPS, as upstream.
Status startGarbageCollectorController(ControllerContext& ctx) {
  if (!ctx.flags->getBool("enable-garbage-collector"))
    return Status(StatusCode::kCancelled, "garbage collector disabled by --enable-garbage-collector=false");
  auto cfg = ctx.clientBuilder->config("generic-garbage-collector");
  if (!cfg.ok()) return cfg.status();
  cfg->qps *= 2;
  auto c = client::RestClient::create(*cfg);
  if (!c.ok()) return c.status();
  auto workers = ctx.flags->getInt("concurrent-gc-syncs");
  if (!workers.ok()) return workers.status();
  auto ctrl = std::make_shared<gc::GarbageCollector>(*c, std::make_shared<client::DiscoveryClient>(*c),
                                                     *ctx.informerFactory,
                                                     ctx.eventBroadcaster->newRecorder("garbage-collector-controller"));
  if (Status s = ctrl->resyncMonitors(); !s.ok()) return s.withContext("failed to discover resources");
  ctrl->run(static_cast<int>(*workers), ctx.stop);
  ctx.addDebugHandler("/debug/controllers/garbagecollector/graph",
                      [weak = std::weak_ptr<gc::GarbageCollector>(ctrl)]() -> std::string {
                        auto gc = weak.lock();
                        return gc ? gc->graphDOT() : "";
                      });
  ctx.running.push_back(ctrl);
  return Status::Ok();
}

}  // namespace

void registerControllerInitFuncs() {
  setInit("garbage-collector-controller", startGarbageCollectorController);
  setInit("namespace-controller", startNamespaceController);
  setInit("deployment-controller", startDeploymentController);
  setInit("replicaset-controller", [](ControllerContext& ctx) {
    return startReplicaSetLike<ReplicaSetKind>(ctx, "replicaset-controller", "concurrent-replicaset-syncs");
  });
  setInit("replicationcontroller-controller", [](ControllerContext& ctx) {
    return startReplicaSetLike<ReplicationControllerKind>(ctx, "replication-controller", "concurrent-rc-syncs");
  });
  setInit("node-lifecycle-controller", startNodeLifecycleController);
  setInit("taint-eviction-controller", startTaintEvictionController);
  setInit("serviceaccount-token-controller", startServiceAccountTokenController);
  setInit("clusterrole-aggregation-controller", startClusterRoleAggregationController);
  setInit("pod-garbage-collector-controller", startPodGCController);
  setInit("node-ipam-controller", startNodeIpamController);
  setInit("ttl-controller", startTTLController);
  setInit("serviceaccount-controller", startServiceAccountController);
  setInit("root-ca-certificate-publisher-controller", startRootCACertPublisher);
}

}  // namespace kcm::controllers
