#pragma once
// What the endpoints and endpointslice controllers share (upstream k8s.io/endpointslice/util and utils.go at the
// pin): which pod events can change which Services' endpoints, whether a pod belongs in them, its hostname, the
// container port a Service port targets, and the last-change trigger time.
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "api/gen/core_v1.h"
#include "base/status.h"
#include "informers/shared_informer.h"
#include "informers/store.h"
#include "runtime/controller.h"

namespace kcm::controllers::endpointsliceutil {

using api::core::v1::Pod;
using api::core::v1::Service;
using Labels = api::StringMap<api::String>;

// PodProjectionKey: the part of a pod event that decides which Services to sync.
struct PodProjectionKey {
  std::string ns;
  Labels labels;
  std::optional<Labels> oldLabels;  // set when the labels (or hostname/subdomain) changed
  bool podChanged = false;          // membership-relevant fields changed too
};

// GetPodUpdateProjectionKey: nullopt when the event cannot change any endpoints (same resourceVersion, nothing
// relevant changed). Either side may be null (add / delete).
std::optional<PodProjectionKey> getPodUpdateProjectionKey(const Pod* oldPod, const Pod* newPod);
// GetServicesToUpdate: "ns/name" of the Services (with a selector) the key's pod matches now, and — when its
// labels changed — those it matched before (all of both if the pod changed, else only the difference).
std::set<std::string> getServicesToUpdate(const informers::Store<Service>& services, const PodProjectionKey& key);

// A service selector (a map) matches the labels: every pair present. Our maps cannot tell an empty selector from
// none; both select nothing here (upstream: an explicitly empty one would select every pod).
bool selectorMatches(const Labels& selector, const Labels& labels);

bool isPodReady(const Pod& pod);
// ShouldPodBeInEndpoints: not terminal, has an IP, and not terminating unless includeTerminating.
bool shouldPodBeInEndpoints(const Pod& pod, bool includeTerminating);
// ShouldSetHostname: the pod's hostname is published when its subdomain is the Service's name.
bool shouldSetHostname(const Pod& pod, const Service& svc);
// FindPort: a numeric targetPort as is; a named one looked up (same protocol) in the containers, then in the
// restartable init containers (sidecars).
Result<int> findPort(const Pod& pod, const api::core::v1::ServicePort& svcPort);

// TriggerTimeTracker: per Service, the pods' Ready transition times and the Service's creation seen last time;
// computeEndpointLastChangeTriggerTime gives the earliest change since then (the Service's creation the first time).
class TriggerTimeTracker {
 public:
  std::optional<std::chrono::system_clock::time_point> computeEndpointLastChangeTriggerTime(
      const std::string& ns, const Service& service, const std::vector<std::shared_ptr<const Pod>>& pods);
  void deleteService(const std::string& ns, const std::string& name);

 private:
  struct State {
    int64_t lastServiceTriggerTime = api::Time::kZero;
    std::map<std::string, int64_t> lastPodTriggerTimes;
  };
  std::mutex mu_;
  std::map<std::string, State> states_;
};

// The Service and pod handlers both controllers register (upstream onServiceUpdate/onServiceDelete, onPodUpdate and
// syncPod): a Service event queues it; a pod event queues, after batchPeriod, the Services it can affect.
void addServiceAndPodHandlers(informers::SharedInformer<Service>& services, informers::SharedInformer<Pod>& pods,
                              runtime::ControllerBase& base, Clock::Duration batchPeriod,
                              std::vector<informers::Registration>& registrations);

// Canonical text of an IP (inet_ntop), nullopt when it is not one.
std::optional<std::string> canonicalIP(const std::string& ip);
bool isIPv6String(const std::string& ip);

}  // namespace kcm::controllers::endpointsliceutil
