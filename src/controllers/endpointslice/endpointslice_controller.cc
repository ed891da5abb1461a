#include "controllers/endpointslice/endpointslice_controller.h"

#include "api/gen/core_v1_json.h"
#include "api/gen/discovery_v1_json.h"
#include "base/log.h"
#include "base/metrics.h"

namespace kcm::controllers::endpointslice {
namespace esutil = endpointsliceutil;

namespace {

constexpr const char* kTopologyQueueItemKey = "topologyQueueItemKey";

std::string zoneOf(const api::core::v1::Node& n) {
  auto it = n.metadata.labels.find(kLabelTopologyZone);
  return it == n.metadata.labels.end() ? "" : it->second;
}

void trackSync(const char* result) {
  metrics::Registry::global()
      .counter("endpoint_slice_controller_syncs", "Number of EndpointSlice syncs", {{"result", result}})
      .inc();
}

}  // namespace

EndpointSliceController::EndpointSliceController(std::shared_ptr<client::RestClient> client,
                                                 informers::SharedInformer<Pod>& pods,
                                                 informers::SharedInformer<Service>& services,
                                                 informers::SharedInformer<api::core::v1::Node>& nodes,
                                                 informers::SharedInformer<EndpointSlice>& slices,
                                                 int32_t maxEndpointsPerSlice,
                                                 std::shared_ptr<client::EventRecorder> recorder,
                                                 Clock::Duration endpointUpdatesBatchPeriod, Clock& clock)
    : client_(std::move(client)), pods_(pods), services_(services), nodes_(nodes), slices_(slices),
      recorder_(std::move(recorder)), batchPeriod_(endpointUpdatesBatchPeriod),
      reconciler_(client_, nodes_.store(), maxEndpointsPerSlice, tracker_, recorder_, &topologyCache_),
      base_("endpoint_slice", [this](const std::string& key) { return syncService(key); }, clock, 15),
      topologyBase_("", [this](const std::string&) {
        checkNodeTopologyDistribution();
        return runtime::SyncResult::ok();
      }, clock) {
  esutil::addServiceAndPodHandlers(services_, pods_, base_, batchPeriod_, registrations_);
  informers::EventHandler<EndpointSlice> eh;
  eh.onAdd = [this](const auto& s) {
    if (reconciler_.managedByController(*s) && tracker_.shouldSync(*s)) queueServiceForEndpointSlice(*s);
  };
  eh.onUpdate = [this](const auto& prev, const auto& s) {
    if (serviceName(*s) != serviceName(*prev)) {
      KLOG_INFO("\"label changed\" label=" + log::quote(kLabelServiceName) + " oldService=" +
                log::quote(serviceName(*prev)) + " newService=" + log::quote(serviceName(*s)) +
                " endpointslice=" + log::quote(s->metadata.namespace_ + "/" + s->metadata.name));
      queueServiceForEndpointSlice(*s);
      queueServiceForEndpointSlice(*prev);
      return;
    }
    const bool managedByChanged = reconciler_.managedByController(*prev) != reconciler_.managedByController(*s);
    if (managedByChanged || (reconciler_.managedByController(*s) && tracker_.shouldSync(*s)))
      queueServiceForEndpointSlice(*s);
  };
  eh.onDelete = [this](const auto& s, bool) {
    if (reconciler_.managedByController(*s) && tracker_.has(*s) && !tracker_.handleDeletion(*s))
      queueServiceForEndpointSlice(*s);
  };
  registrations_.push_back(slices_.addEventHandler(eh));
  informers::EventHandler<api::core::v1::Node> nh;
  nh.onAdd = [this](const auto&) { topologyBase_.enqueue(kTopologyQueueItemKey); };
  nh.onUpdate = [this](const auto& prev, const auto& cur) {
    // The zone label may come after the Node (a cloud provider sets it).
    if (isNodeReady(*prev) != isNodeReady(*cur) || zoneOf(*prev) != zoneOf(*cur))
      topologyBase_.enqueue(kTopologyQueueItemKey);
  };
  nh.onDelete = [this](const auto&, bool) { topologyBase_.enqueue(kTopologyQueueItemKey); };
  registrations_.push_back(nodes_.addEventHandler(nh));
}

void EndpointSliceController::checkNodeTopologyDistribution() {
  topologyCache_.setNodes(nodes_.store().list());
  for (const auto& key : topologyCache_.getOverloadedServices()) {
    KLOG_V(2, "\"Queuing Service after Node change due to overloading\" key=" + log::quote(key));
    base_.enqueue(key);
  }
}

void EndpointSliceController::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting endpoint slice controller\"");
  auto synced = [this] {
    return pods_.hasSynced() && services_.hasSynced() && slices_.hasSynced() && nodes_.hasSynced();
  };
  base_.start(workers, stop, {synced});
  topologyBase_.start(1, stop, {synced});
}

void EndpointSliceController::queueServiceForEndpointSlice(const EndpointSlice& s) {
  const std::string name = serviceName(s);
  if (name.empty()) {
    KLOG_ERROR("\"Couldn't get key for EndpointSlice\" err=" +
               log::quote("EndpointSlice missing " + std::string(kLabelServiceName) + " label"));
    return;
  }
  Clock::Duration delay = std::chrono::seconds(1);  // endpointSliceChangeMinSyncDelay
  if (batchPeriod_ > delay) delay = batchPeriod_;
  base_.enqueueAfter(s.metadata.namespace_ + "/" + name, delay);
}

runtime::SyncResult EndpointSliceController::syncService(const std::string& key) {
  const auto slash = key.find('/');
  const std::string ns = slash == std::string::npos ? "" : key.substr(0, slash);
  const std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  auto service = services_.store().get(key);
  if (!service) {
    triggerTimeTracker_.deleteService(ns, name);
    reconciler_.deleteService(ns, name);
    tracker_.deleteService(ns, name);
    trackSync("success");
    return runtime::SyncResult::ok();
  }
  if (service->spec.type == "ExternalName" || service->spec.selector.empty()) {
    trackSync("success");
    return runtime::SyncResult::ok();
  }
  std::vector<std::shared_ptr<const Pod>> pods;
  for (const auto& p : pods_.store().byIndex(informers::kNamespaceIndex, ns))
    if (esutil::selectorMatches(service->spec.selector, p->metadata.labels)) pods.push_back(p);
  std::vector<std::shared_ptr<const EndpointSlice>> owned;  // keeps the cache objects alive for the pointers
  std::vector<const EndpointSlice*> slices;
  for (const auto& s : slices_.store().byIndex(informers::kNamespaceIndex, ns)) {
    auto svc = s->metadata.labels.find(kLabelServiceName);
    auto mb = s->metadata.labels.find(kLabelManagedBy);
    if (svc == s->metadata.labels.end() || svc->second != name || mb == s->metadata.labels.end() ||
        mb->second != kControllerName)
      continue;
    if (s->metadata.deletionTimestamp && !s->metadata.deletionTimestamp->isZero()) continue;  // pending deletion
    owned.push_back(s);
    slices.push_back(s.get());
  }
  if (tracker_.staleSlices(ns, name, slices)) {
    trackSync("stale");
    return runtime::SyncResult::error(Status(StatusCode::kConflict, "EndpointSlice informer cache is out of date"));
  }
  const auto triggerTime = triggerTimeTracker_.computeEndpointLastChangeTriggerTime(ns, *service, pods);
  Status st = reconciler_.reconcile(*service, pods, slices, triggerTime);
  if (!st.ok()) {
    recorder_->event({"Service", "v1", ns, name, service->metadata.uid, service->metadata.resourceVersion, ""},
                     client::kEventTypeWarning, "FailedToUpdateEndpointSlices",
                     "Error updating Endpoint Slices for Service " + key + ": " + st.message());
    KLOG_INFO("\"Error syncing endpoint slices for service, retrying\" key=" + log::quote(key) +
              " err=" + log::quote(st.message()));
    trackSync("error");
    return runtime::SyncResult::error(st);
  }
  trackSync("success");
  return runtime::SyncResult::ok();
}

}  // namespace kcm::controllers::endpointslice
