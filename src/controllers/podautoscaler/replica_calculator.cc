#include "controllers/podautoscaler/replica_calculator.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "controllers/util/controller_utils.h"

namespace kcm::controllers::podautoscaler {
namespace {

using api::core::v1::Pod;

Status noPods() { return Status(StatusCode::kNotFound, "no pods returned by selector while calculating replica count"); }
Status noMetrics() {
  return Status(StatusCode::kNotFound, "did not receive metrics for targeted pods (pods might be unready)");
}

// Go's int64(f) on amd64: NaN and values out of range give math.MinInt64 (a per-pod average over a status that
// has no replicas yet is +Inf or NaN there, and upstream writes that value into the HPA's status).
int64_t goInt64(double f) {
  if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0)) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(f);
}

WallTime wall(const api::Time& t) { return WallTime(std::chrono::seconds(t.unixSeconds)); }

const api::core::v1::PodCondition* readyCondition(const Pod& pod) {
  for (const auto& c : pod.status.conditions)
    if (c.type == "Ready") return &c;
  return nullptr;
}

bool supportedPodLevel(const std::string& name) {
  return name == "cpu" || name == "memory" || name.rfind("hugepages-", 0) == 0;
}

bool podLevelRequestsSet(const Pod& pod) {
  if (!pod.spec.resources) return false;
  for (const auto& [name, q] : pod.spec.resources->requests)
    if (supportedPodLevel(name)) return true;
  return false;
}

Status wrap(const std::string& prefix, const Status& s) { return Status(s.code(), prefix + s.message()); }

// The shared tail of GetResourceReplicas and calcPlainMetricReplicas: with unready/missing pods, assume the
// values that least move the decision and recompute; keep the current count when the assumption flips it.
int32_t rebalance(double usageRatio, double newUsageRatio, size_t metricCount, int32_t currentReplicas, Tolerances t) {
  if (t.isWithin(newUsageRatio) || (usageRatio < 1.0 && newUsageRatio > 1.0) ||
      (usageRatio > 1.0 && newUsageRatio < 1.0))
    return currentReplicas;
  const auto newReplicas = static_cast<int32_t>(std::ceil(newUsageRatio * static_cast<double>(metricCount)));
  if ((newUsageRatio < 1.0 && newReplicas > currentReplicas) || (newUsageRatio > 1.0 && newReplicas < currentReplicas))
    return currentReplicas;
  return newReplicas;
}

// The external values' total, held at the int64 maximum on overflow.
int64_t saturatingSum(const std::vector<int64_t>& values) {
  int64_t usage = 0;
  for (int64_t v : values) {
    if (v > 0 && usage > std::numeric_limits<int64_t>::max() - v) return std::numeric_limits<int64_t>::max();
    usage += v;
  }
  return usage;
}

}  // namespace

std::string Tolerances::str() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "[down:%.1f%%, up:%.1f%%]", scaleDown * 100., scaleUp * 100.);
  return buf;
}

ReplicaCalculator::PodGroups ReplicaCalculator::groupPods(const std::vector<PodPtr>& pods,
                                                          const PodMetricsInfo& metrics,
                                                          const std::string& resource) const {
  PodGroups g;
  const WallTime now = clock_.wallNow();
  for (const auto& pod : pods) {
    const std::string& name = pod->metadata.name;
    if (pod->metadata.deletionTimestamp || pod->status.phase == "Failed") {
      g.ignored.insert(name);
      continue;
    }
    if (pod->status.phase == "Pending") {
      g.unready.insert(name);
      continue;
    }
    auto m = metrics.find(name);
    if (m == metrics.end()) {
      g.missing.insert(name);
      continue;
    }
    if (resource == "cpu") {
      bool unready;
      const auto* cond = readyCondition(*pod);
      if (!cond || !pod->status.startTime || pod->status.startTime->isZero()) {
        unready = true;
      } else {
        const WallTime start = wall(*pod->status.startTime), transition = wall(cond->lastTransitionTime);
        if (start + std::chrono::duration_cast<WallTime::duration>(cpuInitializationPeriod_) > now) {
          // Still initialising: only a sample taken wholly after it became ready counts.
          unready = cond->status == "False" || m->second.timestamp < transition + m->second.window;
        } else {
          // Ready-state flips soon after start are taken as initialisation, later ones as real.
          unready = cond->status == "False" &&
                    start + std::chrono::duration_cast<WallTime::duration>(delayOfInitialReadinessStatus_) > transition;
        }
      }
      if (unready) {
        g.unready.insert(name);
        continue;
      }
    }
    ++g.readyPodCount;
  }
  return g;
}

Result<std::map<std::string, int64_t>> calculateRequests(const std::vector<PodPtr>& pods, const std::string& container,
                                                         const std::string& resource, bool podLevelResources) {
  std::map<std::string, int64_t> requests;
  for (const auto& pod : pods) {
    int64_t request = 0;
    if (podLevelResources && container.empty() && podLevelRequestsSet(*pod)) {
      auto it = pod->spec.resources->requests.find(resource);
      if (it == pod->spec.resources->requests.end())
        return Status(StatusCode::kInvalidArgument,
                      "missing pod-level request for " + resource + " in Pod " + pod->metadata.name);
      request = it->second.milliValue();
    } else {
      std::vector<const api::core::v1::Container*> containers;
      for (const auto& c : pod->spec.containers) containers.push_back(&c);
      for (const auto& c : pod->spec.initContainers)
        if (c.restartPolicy && *c.restartPolicy == "Always") containers.push_back(&c);
      bool found = false;
      for (const auto* c : containers) {
        if (container.empty() || container == c->name) {
          auto it = c->resources.requests.find(resource);
          if (it == c->resources.requests.end())
            return Status(StatusCode::kInvalidArgument, "missing request for " + resource + " in container " +
                                                            c->name + " of Pod " + pod->metadata.name);
          request += it->second.milliValue();
        }
        if (container == c->name) {
          found = true;
          break;
        }
      }
      if (!container.empty() && !found)
        return Status(StatusCode::kInvalidArgument, "container " + container + " not found in Pod " + pod->metadata.name);
    }
    requests[pod->metadata.name] = request;
  }
  return requests;
}

Result<ReplicaProposal> ReplicaCalculator::GetResourceReplicas(int32_t currentReplicas, int32_t targetUtilization,
                                                               const std::string& resource, Tolerances t,
                                                               const std::string& ns, const api::Selector& selector,
                                                               const std::string& container) {
  auto got = metrics_.getResourceMetric(resource, ns, selector, container);
  if (!got.ok()) return wrap("unable to get metrics for resource " + resource + ": ", got.status());
  auto& [metrics, timestamp] = *got;
  auto pods = pods_(ns, selector);
  if (pods.empty()) return noPods();
  auto groups = groupPods(pods, metrics, resource);
  for (const auto& p : groups.ignored) metrics.erase(p);
  for (const auto& p : groups.unready) metrics.erase(p);
  if (metrics.empty()) return noMetrics();
  auto requests = calculateRequests(pods, container, resource);
  if (!requests.ok()) return requests.status();
  auto first = getResourceUtilizationRatio(metrics, *requests, targetUtilization);
  if (!first.ok()) return first.status();
  ReplicaProposal p{currentReplicas, first->rawAverage, first->utilization, timestamp};
  const double usageRatio = first->ratio;
  const bool scaleUpWithUnready = !groups.unready.empty() && usageRatio > 1.0;
  if (!scaleUpWithUnready && groups.missing.empty()) {
    if (!t.isWithin(usageRatio))
      p.replicas = static_cast<int32_t>(std::ceil(usageRatio * static_cast<double>(groups.readyPodCount)));
    return p;
  }
  if (!groups.missing.empty()) {
    const int64_t fallback = std::max<int64_t>(100, targetUtilization);
    for (const auto& pod : groups.missing)
      metrics[pod] = PodMetric{{}, {}, usageRatio < 1.0 ? (*requests)[pod] * fallback / 100 : 0};
    if (usageRatio == 1.0)
      for (const auto& pod : groups.missing) metrics.erase(pod);  // upstream assumes nothing at exactly 1.0
  }
  if (scaleUpWithUnready)
    for (const auto& pod : groups.unready) metrics[pod] = PodMetric{};
  auto second = getResourceUtilizationRatio(metrics, *requests, targetUtilization);
  if (!second.ok()) return second.status();
  p.replicas = rebalance(usageRatio, second->ratio, metrics.size(), currentReplicas, t);
  return p;
}

Result<ReplicaProposal> ReplicaCalculator::GetRawResourceReplicas(int32_t currentReplicas, int64_t targetUsage,
                                                                  const std::string& resource, Tolerances t,
                                                                  const std::string& ns, const api::Selector& selector,
                                                                  const std::string& container) {
  auto got = metrics_.getResourceMetric(resource, ns, selector, container);
  if (!got.ok()) return wrap("unable to get metrics for resource " + resource + ": ", got.status());
  auto r = calcPlainMetricReplicas(std::move(got->first), currentReplicas, targetUsage, t, ns, selector, resource);
  if (!r.ok()) return r.status();
  return ReplicaProposal{r->first, r->second, 0, got->second};
}

Result<ReplicaProposal> ReplicaCalculator::GetMetricReplicas(int32_t currentReplicas, int64_t targetUsage,
                                                             const std::string& metricName, Tolerances t,
                                                             const std::string& ns, const api::Selector& selector,
                                                             const api::Selector& metricSelector) {
  auto got = metrics_.getRawMetric(metricName, ns, selector, metricSelector);
  if (!got.ok()) return wrap("unable to get metric " + metricName + ": ", got.status());
  auto r = calcPlainMetricReplicas(std::move(got->first), currentReplicas, targetUsage, t, ns, selector, "");
  if (!r.ok()) return r.status();
  return ReplicaProposal{r->first, r->second, 0, got->second};
}

Result<std::pair<int32_t, int64_t>> ReplicaCalculator::calcPlainMetricReplicas(PodMetricsInfo metrics,
                                                                               int32_t currentReplicas,
                                                                               int64_t targetUsage, Tolerances t,
                                                                               const std::string& ns,
                                                                               const api::Selector& selector,
                                                                               const std::string& resource) {
  auto pods = pods_(ns, selector);
  if (pods.empty()) return noPods();
  auto groups = groupPods(pods, metrics, resource);
  for (const auto& p : groups.ignored) metrics.erase(p);
  for (const auto& p : groups.unready) metrics.erase(p);
  if (metrics.empty()) return noMetrics();
  auto [usageRatio, usage] = getMetricUsageRatio(metrics, targetUsage);
  const bool scaleUpWithUnready = !groups.unready.empty() && usageRatio > 1.0;
  if (!scaleUpWithUnready && groups.missing.empty()) {
    if (t.isWithin(usageRatio)) return std::make_pair(currentReplicas, usage);
    return std::make_pair(static_cast<int32_t>(std::ceil(usageRatio * static_cast<double>(groups.readyPodCount))), usage);
  }
  if (!groups.missing.empty() && usageRatio != 1.0)
    for (const auto& pod : groups.missing) metrics[pod] = PodMetric{{}, {}, usageRatio < 1.0 ? targetUsage : 0};
  if (scaleUpWithUnready)
    for (const auto& pod : groups.unready) metrics[pod] = PodMetric{};
  const double newUsageRatio = getMetricUsageRatio(metrics, targetUsage).first;
  return std::make_pair(rebalance(usageRatio, newUsageRatio, metrics.size(), currentReplicas, t), usage);
}

Result<int64_t> ReplicaCalculator::getReadyPodsCount(const std::string& ns, const api::Selector& selector) {
  auto pods = pods_(ns, selector);
  if (pods.empty()) return noPods();
  int64_t ready = 0;
  for (const auto& p : pods)
    if (p->status.phase == "Running" && isPodReady(*p)) ++ready;
  return ready;
}

Result<int32_t> ReplicaCalculator::getUsageRatioReplicaCount(int32_t currentReplicas, double usageRatio, Tolerances t,
                                                             const std::string& ns, const api::Selector& selector) {
  if (currentReplicas == 0) return static_cast<int32_t>(std::ceil(usageRatio));
  if (t.isWithin(usageRatio)) return currentReplicas;
  auto ready = getReadyPodsCount(ns, selector);
  if (!ready.ok()) return Status(ready.status().code(), "unable to calculate ready pods: " + ready.status().message());
  const double f = usageRatio * static_cast<double>(*ready);
  if (f > std::numeric_limits<int32_t>::max()) return std::numeric_limits<int32_t>::max();
  return static_cast<int32_t>(std::ceil(f));
}

Result<ReplicaProposal> ReplicaCalculator::GetObjectMetricReplicas(
    int32_t currentReplicas, int64_t targetUsage, const std::string& metricName, Tolerances t, const std::string& ns,
    const api::autoscaling::v2::CrossVersionObjectReference& ref, const api::Selector& selector,
    const api::Selector& metricSelector) {
  auto got = metrics_.getObjectMetric(metricName, ns, ref, metricSelector);
  if (!got.ok())
    return wrap("unable to get metric " + metricName + " on " + ref.kind + " " + ns + "/" + ref.name + ": ", got.status());
  const int64_t usage = got->first;
  auto n = getUsageRatioReplicaCount(currentReplicas, static_cast<double>(usage) / static_cast<double>(targetUsage), t,
                                     ns, selector);
  if (!n.ok()) return n.status();
  return ReplicaProposal{*n, usage, 0, {}};  // upstream reports no timestamp here
}

Result<ReplicaProposal> ReplicaCalculator::GetObjectPerPodMetricReplicas(
    int32_t statusReplicas, int64_t targetAverageUsage, const std::string& metricName, Tolerances t,
    const std::string& ns, const api::autoscaling::v2::CrossVersionObjectReference& ref,
    const api::Selector& metricSelector) {
  auto got = metrics_.getObjectMetric(metricName, ns, ref, metricSelector);
  if (!got.ok())
    return wrap("unable to get metric " + metricName + " on " + ref.kind + " " + ns + "/" + ref.name + ": ", got.status());
  const int64_t usage = got->first;
  int32_t replicas = statusReplicas;
  const double ratio = static_cast<double>(usage) / (static_cast<double>(targetAverageUsage) * replicas);
  if (!t.isWithin(ratio))
    replicas = static_cast<int32_t>(std::ceil(static_cast<double>(usage) / static_cast<double>(targetAverageUsage)));
  return ReplicaProposal{replicas, goInt64(std::ceil(static_cast<double>(usage) / statusReplicas)), 0, got->second};
}

Result<ReplicaProposal> ReplicaCalculator::GetExternalMetricReplicas(
    int32_t currentReplicas, int64_t targetUsage, const std::string& metricName, Tolerances t, const std::string& ns,
    const api::meta::v1::LabelSelector* metricSelector, const api::Selector& podSelector) {
  auto sel = api::selectorFromLabelSelector(metricSelector);
  if (!sel.ok()) return sel.status();
  auto got = metrics_.getExternalMetric(metricName, ns, *sel);
  if (!got.ok())
    return wrap("unable to get external metric " + ns + "/" + metricName + "/" + sel->str() + ": ", got.status());
  const int64_t usage = saturatingSum(got->first);
  auto n = getUsageRatioReplicaCount(currentReplicas, static_cast<double>(usage) / static_cast<double>(targetUsage), t,
                                     ns, podSelector);
  if (!n.ok()) return n.status();
  return ReplicaProposal{*n, usage, 0, {}};
}

Result<ReplicaProposal> ReplicaCalculator::GetExternalPerPodMetricReplicas(
    int32_t statusReplicas, int64_t targetUsagePerPod, const std::string& metricName, Tolerances t,
    const std::string& ns, const api::meta::v1::LabelSelector* metricSelector) {
  auto sel = api::selectorFromLabelSelector(metricSelector);
  if (!sel.ok()) return sel.status();
  auto got = metrics_.getExternalMetric(metricName, ns, *sel);
  if (!got.ok())
    return wrap("unable to get external metric " + ns + "/" + metricName + "/" + sel->str() + ": ", got.status());
  const int64_t usage = saturatingSum(got->first);
  int32_t replicas = statusReplicas;
  const double ratio = static_cast<double>(usage) / (static_cast<double>(targetUsagePerPod) * replicas);
  if (!t.isWithin(ratio)) {
    const double r = std::ceil(static_cast<double>(usage) / static_cast<double>(targetUsagePerPod));
    replicas = r > std::numeric_limits<int32_t>::max() ? std::numeric_limits<int32_t>::max() : static_cast<int32_t>(r);
  }
  const int64_t avg = usage == std::numeric_limits<int64_t>::max()
                          ? usage
                          : goInt64(std::ceil(static_cast<double>(usage) / statusReplicas));
  return ReplicaProposal{replicas, avg, 0, got->second};
}

}  // namespace kcm::controllers::podautoscaler
