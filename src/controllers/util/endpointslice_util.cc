#include "controllers/util/endpointslice_util.h"

#include <arpa/inet.h>

#include <algorithm>

namespace kcm::controllers::endpointsliceutil {
namespace {

bool sameIPs(const Pod& a, const Pod& b) {
  const auto& x = a.status.podIPs;
  const auto& y = b.status.podIPs;
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].ip != y[i].ip) return false;
  return true;
}

// podEndpointsChanged: {podChanged, labelsChanged}. Upstream compares the deletionTimestamp pointers of two
// distinct objects, so a pod with one set on either side counts as changed.
std::pair<bool, bool> podEndpointsChanged(const Pod& oldPod, const Pod& newPod) {
  const bool labelsChanged = newPod.metadata.labels != oldPod.metadata.labels ||
                             newPod.spec.hostname != oldPod.spec.hostname ||
                             newPod.spec.subdomain != oldPod.spec.subdomain;
  const bool deleting = (newPod.metadata.deletionTimestamp && !newPod.metadata.deletionTimestamp->isZero()) ||
                        (oldPod.metadata.deletionTimestamp && !oldPod.metadata.deletionTimestamp->isZero());
  if (deleting) return {true, labelsChanged};
  if (isPodReady(oldPod) != isPodReady(newPod)) return {true, labelsChanged};
  if (!sameIPs(oldPod, newPod)) return {true, labelsChanged};
  return {false, labelsChanged};
}

std::set<std::string> servicesForPod(const informers::Store<Service>& services, const std::string& ns,
                                     const Labels& labels) {
  std::set<std::string> out;
  for (const auto& s : services.byIndex(informers::kNamespaceIndex, ns))
    if (!s->spec.selector.empty() && selectorMatches(s->spec.selector, labels))
      out.insert(s->metadata.namespace_ + "/" + s->metadata.name);
  return out;
}

const api::core::v1::PodCondition* readyCondition(const Pod& pod) {
  for (const auto& c : pod.status.conditions)
    if (c.type == "Ready") return &c;
  return nullptr;
}

}  // namespace

bool selectorMatches(const Labels& selector, const Labels& labels) {
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

std::optional<PodProjectionKey> getPodUpdateProjectionKey(const Pod* oldPod, const Pod* newPod) {
  if (!oldPod && !newPod) return std::nullopt;
  if (!oldPod) return PodProjectionKey{newPod->metadata.namespace_, newPod->metadata.labels, std::nullopt, false};
  if (!newPod) return PodProjectionKey{oldPod->metadata.namespace_, oldPod->metadata.labels, std::nullopt, false};
  if (newPod->metadata.resourceVersion == oldPod->metadata.resourceVersion) return std::nullopt;
  auto [podChanged, labelsChanged] = podEndpointsChanged(*oldPod, *newPod);
  if (!podChanged && !labelsChanged) return std::nullopt;
  if (!labelsChanged) return PodProjectionKey{newPod->metadata.namespace_, newPod->metadata.labels, std::nullopt, false};
  return PodProjectionKey{newPod->metadata.namespace_, newPod->metadata.labels, oldPod->metadata.labels, podChanged};
}

std::set<std::string> getServicesToUpdate(const informers::Store<Service>& services, const PodProjectionKey& key) {
  std::set<std::string> now = servicesForPod(services, key.ns, key.labels);
  if (!key.oldLabels) return now;
  std::set<std::string> before = servicesForPod(services, key.ns, *key.oldLabels);
  std::set<std::string> out;
  if (key.podChanged) {
    std::set_union(now.begin(), now.end(), before.begin(), before.end(), std::inserter(out, out.end()));
  } else {
    std::set_symmetric_difference(now.begin(), now.end(), before.begin(), before.end(),
                                  std::inserter(out, out.end()));
  }
  return out;
}

bool isPodReady(const Pod& pod) {
  const auto* c = readyCondition(pod);
  return c && c->status == "True";
}

bool shouldPodBeInEndpoints(const Pod& pod, bool includeTerminating) {
  if (pod.status.phase == "Failed" || pod.status.phase == "Succeeded") return false;
  if (pod.status.podIP.empty() && pod.status.podIPs.empty()) return false;
  if (!includeTerminating && pod.metadata.deletionTimestamp && !pod.metadata.deletionTimestamp->isZero()) return false;
  return true;
}

bool shouldSetHostname(const Pod& pod, const Service& svc) {
  return !pod.spec.hostname.empty() && pod.spec.subdomain == svc.metadata.name &&
         svc.metadata.namespace_ == pod.metadata.namespace_;
}

Result<int> findPort(const Pod& pod, const api::core::v1::ServicePort& svcPort) {
  const auto& target = svcPort.targetPort;
  if (!target.isString) return static_cast<int>(target.intVal);
  for (const auto& c : pod.spec.containers)
    for (const auto& p : c.ports)
      if (p.name == target.strVal && p.protocol == svcPort.protocol) return static_cast<int>(p.containerPort);
  for (const auto& c : pod.spec.initContainers) {
    if (!c.restartPolicy || *c.restartPolicy != "Always") continue;
    for (const auto& p : c.ports)
      if (p.name == target.strVal && p.protocol == svcPort.protocol) return static_cast<int>(p.containerPort);
  }
  return Status(StatusCode::kNotFound, "no suitable port for manifest: " + pod.metadata.uid);
}

std::optional<std::chrono::system_clock::time_point> TriggerTimeTracker::computeEndpointLastChangeTriggerTime(
    const std::string& ns, const Service& service, const std::vector<std::shared_ptr<const Pod>>& pods) {
  const std::string key = ns + "/" + service.metadata.name;
  std::lock_guard l(mu_);
  auto it = states_.find(key);
  const bool wasKnown = it != states_.end();
  State& state = states_[key];
  int64_t minChanged = api::Time::kZero;
  auto takeMin = [&](int64_t t) {
    if (minChanged == api::Time::kZero || t < minChanged) minChanged = t;
  };
  std::map<std::string, int64_t> podTimes;
  for (const auto& pod : pods) {
    const auto* c = readyCondition(*pod);
    if (!c || c->lastTransitionTime.isZero()) continue;
    const int64_t t = c->lastTransitionTime.unixSeconds;
    podTimes[pod->metadata.name] = t;
    auto last = state.lastPodTriggerTimes.find(pod->metadata.name);
    if (last == state.lastPodTriggerTimes.end() || t > last->second) takeMin(t);
  }
  const int64_t serviceTime = service.metadata.creationTimestamp.unixSeconds;
  if (!service.metadata.creationTimestamp.isZero() &&
      (state.lastServiceTriggerTime == api::Time::kZero || serviceTime > state.lastServiceTriggerTime))
    takeMin(serviceTime);
  state.lastPodTriggerTimes = std::move(podTimes);
  state.lastServiceTriggerTime = serviceTime;
  auto toTime = [](int64_t s) { return std::chrono::system_clock::from_time_t(static_cast<std::time_t>(s)); };
  if (!wasKnown) {
    if (service.metadata.creationTimestamp.isZero()) return std::nullopt;
    return toTime(serviceTime);
  }
  if (minChanged == api::Time::kZero) return std::nullopt;
  return toTime(minChanged);
}

void TriggerTimeTracker::deleteService(const std::string& ns, const std::string& name) {
  std::lock_guard l(mu_);
  states_.erase(ns + "/" + name);
}

void addServiceAndPodHandlers(informers::SharedInformer<Service>& services, informers::SharedInformer<Pod>& pods,
                              runtime::ControllerBase& base, Clock::Duration batchPeriod,
                              std::vector<informers::Registration>& registrations) {
  informers::EventHandler<Service> sh;
  sh.onAdd = [&base](const auto& s) { base.enqueueObject(*s); };
  sh.onUpdate = [&base](const auto&, const auto& s) { base.enqueueObject(*s); };
  sh.onDelete = [&base](const auto& s, bool) { base.enqueueObject(*s); };
  registrations.push_back(services.addEventHandler(sh));
  auto onPod = [&base, &services, batchPeriod](const Pod* oldPod, const Pod* newPod) {
    auto key = getPodUpdateProjectionKey(oldPod, newPod);
    if (!key) return;
    for (const auto& svc : getServicesToUpdate(services.store(), *key)) base.enqueueAfter(svc, batchPeriod);
  };
  informers::EventHandler<Pod> ph;
  ph.onAdd = [onPod](const auto& p) { onPod(nullptr, p.get()); };
  ph.onUpdate = [onPod](const auto& o, const auto& p) { onPod(o.get(), p.get()); };
  ph.onDelete = [onPod](const auto& p, bool) { onPod(p.get(), nullptr); };
  registrations.push_back(pods.addEventHandler(ph));
}

std::optional<std::string> canonicalIP(const std::string& ip) {
  unsigned char buf[16];
  char out[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET, ip.c_str(), buf) == 1) return std::string(inet_ntop(AF_INET, buf, out, sizeof out));
  if (inet_pton(AF_INET6, ip.c_str(), buf) == 1) {
    // An IPv4-mapped IPv6 address is IPv4 to Go's net.IP.String().
    static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::equal(kMapped, kMapped + 12, buf)) return std::string(inet_ntop(AF_INET, buf + 12, out, sizeof out));
    return std::string(inet_ntop(AF_INET6, buf, out, sizeof out));
  }
  return std::nullopt;
}

bool isIPv6String(const std::string& ip) {
  unsigned char buf[16];
  if (inet_pton(AF_INET6, ip.c_str(), buf) != 1) return false;
  static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return !std::equal(kMapped, kMapped + 12, buf);
}

}  // namespace kcm::controllers::endpointsliceutil
