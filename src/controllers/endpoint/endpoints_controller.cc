#include "controllers/endpoint/endpoints_controller.h"

#include <cmath>

#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/endpoint/endpoints_util.h"

namespace kcm::controllers::endpoint {

using api::core::v1::EndpointAddress;
using api::core::v1::EndpointPort;
using api::core::v1::EndpointSubset;
using api::core::v1::Endpoints;
using api::core::v1::Pod;
using api::core::v1::Service;
namespace esutil = endpointsliceutil;

namespace {

// podToEndpointAddressForService: the pod's IP of the Service's family (its first ipFamilies entry, else its
// cluster IP's, else the pod's primary IP's).
std::optional<EndpointAddress> podToEndpointAddressForService(const Service& svc, const Pod& pod) {
  bool wantIPv6 = false;
  if (!svc.spec.ipFamilies.empty()) wantIPv6 = svc.spec.ipFamilies[0] == "IPv6";
  else if (!svc.spec.clusterIP.empty() && svc.spec.clusterIP != "None") wantIPv6 = esutil::isIPv6String(svc.spec.clusterIP);
  else wantIPv6 = esutil::isIPv6String(pod.status.podIP);
  std::string ip;
  for (const auto& p : pod.status.podIPs) {
    auto canonical = esutil::canonicalIP(p.ip);
    if (canonical && esutil::isIPv6String(*canonical) == wantIPv6) {
      ip = *canonical;
      break;
    }
  }
  if (ip.empty()) return std::nullopt;
  EndpointAddress a;
  a.ip = ip;
  a.nodeName = pod.spec.nodeName;
  auto& ref = a.targetRef.emplace();
  ref.kind = "Pod";
  ref.namespace_ = pod.metadata.namespace_;
  ref.name = pod.metadata.name;
  ref.uid = pod.metadata.uid;
  return a;
}

void addEndpointSubset(std::vector<EndpointSubset>& subsets, const Pod& pod, const EndpointAddress& epa,
                       const std::optional<EndpointPort>& epp, bool tolerateUnreadyEndpoints) {
  EndpointSubset s;
  if (epp) s.ports.push_back(*epp);
  if (tolerateUnreadyEndpoints || esutil::isPodReady(pod)) s.addresses.push_back(epa);
  else s.notReadyAddresses.push_back(epa);
  subsets.push_back(std::move(s));
}

bool capacityAnnotationSetCorrectly(const api::StringMap<api::String>& annotations,
                                    const std::vector<EndpointSubset>& subsets) {
  size_t n = 0;
  for (const auto& s : subsets) n += s.addresses.size() + s.notReadyAddresses.size();
  if (n > kMaxCapacity) return false;
  return annotations.find(kEndpointsOverCapacity) == annotations.end();
}

bool labelsCorrectForEndpoints(const api::StringMap<api::String>& epLabels,
                               const api::StringMap<api::String>& svcLabels) {
  auto it = epLabels.find(kLabelManagedBy);
  if (it == epLabels.end() || it->second != kControllerName) return false;
  size_t skipped = 0;
  for (const auto& [k, v] : epLabels) {
    if (k == kIsHeadlessService || k == kLabelManagedBy) {
      ++skipped;
      continue;
    }
    auto sv = svcLabels.find(k);
    if (sv == svcLabels.end() || sv->second != v) return false;
  }
  return svcLabels.size() == epLabels.size() - skipped;
}

bool isServiceIPSet(const Service& s) { return s.spec.clusterIP != "None" && !s.spec.clusterIP.empty(); }

// time.RFC3339Nano of a whole-second time: no fraction.
std::string rfc3339(std::chrono::system_clock::time_point t) {
  return api::Time::fromUnix(std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count()).rfc3339();
}

}  // namespace

bool truncateEndpoints(Endpoints& endpoints) {
  int totalReady = 0, totalNotReady = 0;
  for (const auto& s : endpoints.subsets) {
    totalReady += static_cast<int>(s.addresses.size());
    totalNotReady += static_cast<int>(s.notReadyAddresses.size());
  }
  if (totalReady + totalNotReady <= kMaxCapacity) return false;
  bool truncateReady = false;
  int max = kMaxCapacity - totalReady;
  int numTotal = totalNotReady;
  if (totalReady > kMaxCapacity) {
    truncateReady = true;
    max = kMaxCapacity;
    numTotal = totalReady;
  }
  int canBeAdded = max;
  for (auto& s : endpoints.subsets) {
    const int inSubset = static_cast<int>(truncateReady ? s.addresses.size() : s.notReadyAddresses.size());
    int toBeAdded = static_cast<int>(std::ceil((static_cast<double>(inSubset) / numTotal) * max));
    toBeAdded = std::min(toBeAdded, canBeAdded);
    if (truncateReady) {
      if (static_cast<int>(s.addresses.size()) > toBeAdded) s.addresses.resize(toBeAdded);
      s.notReadyAddresses.clear();
      canBeAdded -= static_cast<int>(s.addresses.size());
    } else {
      if (static_cast<int>(s.notReadyAddresses.size()) > toBeAdded) s.notReadyAddresses.resize(toBeAdded);
      canBeAdded -= static_cast<int>(s.notReadyAddresses.size());
    }
  }
  return true;
}

EndpointsController::EndpointsController(std::shared_ptr<client::RestClient> client,
                                         informers::SharedInformer<Pod>& pods,
                                         informers::SharedInformer<Service>& services,
                                         informers::SharedInformer<Endpoints>& endpoints,
                                         std::shared_ptr<client::EventRecorder> recorder,
                                         Clock::Duration endpointUpdatesBatchPeriod, Clock& clock)
    : client_(std::move(client)), pods_(pods), services_(services), endpoints_(endpoints),
      recorder_(std::move(recorder)), batchPeriod_(endpointUpdatesBatchPeriod), clock_(clock),
      base_("endpoint", [this](const std::string& key) { return syncService(key); }, clock, 15) {
  esutil::addServiceAndPodHandlers(services_, pods_, base_, batchPeriod_, registrations_);
  informers::EventHandler<Endpoints> eh;
  eh.onDelete = [this](const auto& e, bool) { base_.enqueueObject(*e); };
  registrations_.push_back(endpoints_.addEventHandler(eh));
}

void EndpointsController::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting endpoint controller\"");
  auto synced = [this] { return pods_.hasSynced() && services_.hasSynced() && endpoints_.hasSynced(); };
  base_.start(workers, stop, {synced});
  // checkLeftoverEndpoints runs once the caches have synced (before, it would find an empty store) and outside the
  // base's sync poll, which holds the base's lock that queueing takes.
  leftover_.start(clock_, std::chrono::hours(24 * 365 * 100), stop, [this] { checkLeftoverEndpoints(); }, synced);
}

void EndpointsController::checkLeftoverEndpoints() {
  for (const auto& ep : endpoints_.store().list()) {
    if (ep->metadata.annotations.count(kLeaderElectionRecordAnnotationKey)) continue;
    base_.enqueueObject(*ep);
  }
}

runtime::SyncResult EndpointsController::syncService(const std::string& key) {
  const auto slash = key.find('/');
  const std::string ns = slash == std::string::npos ? "" : key.substr(0, slash);
  const std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  auto service = services_.store().get(key);
  if (!service) {
    Status st = client::remove<Endpoints>(*client_, ns, name);
    if (!st.ok() && st.code() != StatusCode::kNotFound) return runtime::SyncResult::error(st);
    triggerTimeTracker_.deleteService(ns, name);
    std::lock_guard l(staleMu_);
    staleResourceVersion_.erase(key);
    return runtime::SyncResult::ok();
  }
  if (service->spec.type == "ExternalName") return runtime::SyncResult::ok();
  if (service->spec.selector.empty()) return runtime::SyncResult::ok();  // (see endpointslice_util.h)
  std::vector<std::shared_ptr<const Pod>> pods;
  for (const auto& p : pods_.store().byIndex(informers::kNamespaceIndex, ns))
    if (esutil::selectorMatches(service->spec.selector, p->metadata.labels)) pods.push_back(p);
  const auto triggerTime = triggerTimeTracker_.computeEndpointLastChangeTriggerTime(ns, *service, pods);

  std::vector<EndpointSubset> subsets;
  const bool publishNotReady = service->spec.publishNotReadyAddresses;
  for (const auto& pod : pods) {
    if (!esutil::shouldPodBeInEndpoints(*pod, publishNotReady)) continue;
    auto epa = podToEndpointAddressForService(*service, *pod);
    if (!epa) {
      KLOG_V(2, "\"Failed to find endpoint for service with ClusterIP on pod with error\" service=" + log::quote(key) +
                    " clusterIP=" + log::quote(service->spec.clusterIP) + " pod=" + log::quote(ns + "/" + pod->metadata.name) +
                    " error=" + log::quote("failed to find a matching endpoint for service " + name));
      continue;
    }
    if (esutil::shouldSetHostname(*pod, *service)) epa->hostname = pod->spec.hostname;
    if (service->spec.ports.empty()) {
      if (service->spec.clusterIP == "None") addEndpointSubset(subsets, *pod, *epa, std::nullopt, publishNotReady);
      continue;
    }
    for (const auto& sp : service->spec.ports) {
      auto portNum = esutil::findPort(*pod, sp);
      if (!portNum.ok()) continue;
      EndpointPort epp;
      epp.name = sp.name;
      epp.port = static_cast<int32_t>(*portNum);
      epp.protocol = sp.protocol;
      epp.appProtocol = sp.appProtocol;
      addEndpointSubset(subsets, *pod, *epa, epp, publishNotReady);
    }
  }
  subsets = repackSubsets(subsets);

  Endpoints current;
  auto cached = endpoints_.store().get(key);
  if (cached) {
    std::lock_guard l(staleMu_);
    auto stale = staleResourceVersion_.find(key);
    if (stale != staleResourceVersion_.end() && stale->second == cached->metadata.resourceVersion)
      return runtime::SyncResult::error(Status(
          StatusCode::kConflict, "endpoints informer cache is out of date, resource version " +
                                     cached->metadata.resourceVersion + " already processed for endpoints " + key));
    current = *cached;
  } else {
    current.metadata.name = name;
    current.metadata.labels = service->metadata.labels;
  }
  const bool create = current.metadata.resourceVersion.empty();
  if (!create &&
      (subsetsEqualIgnoreResourceVersion(current.subsets, subsets) ||
       subsetsEqualIgnoreResourceVersion(repackSubsets(current.subsets), subsets)) &&
      labelsCorrectForEndpoints(current.metadata.labels, service->metadata.labels) &&
      capacityAnnotationSetCorrectly(current.metadata.annotations, current.subsets)) {
    KLOG_V(5, "\"endpoints are equal, skipping update\" service=" + log::quote(key));
    return runtime::SyncResult::ok();
  }
  Endpoints desired = current;
  desired.apiVersion = "v1";
  desired.kind = "Endpoints";
  desired.subsets = std::move(subsets);
  desired.metadata.labels = service->metadata.labels;
  auto& annotations = desired.metadata.annotations;
  if (triggerTime) annotations[kEndpointsLastChangeTriggerTime] = rfc3339(*triggerTime);
  else annotations.erase(kEndpointsLastChangeTriggerTime);
  if (truncateEndpoints(desired)) annotations[kEndpointsOverCapacity] = "truncated";
  else annotations.erase(kEndpointsOverCapacity);
  if (!isServiceIPSet(*service)) desired.metadata.labels[kIsHeadlessService] = "";
  else desired.metadata.labels.erase(kIsHeadlessService);
  desired.metadata.labels[kLabelManagedBy] = kControllerName;

  Status st = Status::Ok();
  std::string newRV;
  if (create) {
    st = client::create(*client_, ns, desired).status();
  } else {
    auto r = client::update(*client_, desired);
    if (r.ok()) newRV = r->metadata.resourceVersion;
    st = r.status();
  }
  if (!st.ok()) {
    // Creating in a terminating namespace is refused: nothing to do there.
    if (create && st.code() == StatusCode::kForbidden &&
        st.message().find("because it is being terminated") != std::string::npos)
      return runtime::SyncResult::ok();
    client::ObjectReference ref{"Endpoints", "v1", ns, name, current.metadata.uid, current.metadata.resourceVersion, ""};
    if (create)
      recorder_->event(ref, client::kEventTypeWarning, "FailedToCreateEndpoint",
                       "Failed to create endpoint for service " + ns + "/" + name + ": " + st.message());
    else
      recorder_->event(ref, client::kEventTypeWarning, "FailedToUpdateEndpoint",
                       "Failed to update endpoint " + ns + "/" + name + ": " + st.message());
    return runtime::SyncResult::error(st);
  }
  if (!newRV.empty() && newRV != current.metadata.resourceVersion) {
    std::lock_guard l(staleMu_);
    staleResourceVersion_[key] = current.metadata.resourceVersion;
  }
  return runtime::SyncResult::ok();
}

}  // namespace kcm::controllers::endpoint
