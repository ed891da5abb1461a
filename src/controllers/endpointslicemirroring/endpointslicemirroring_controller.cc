#include "controllers/endpointslicemirroring/endpointslicemirroring_controller.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "api/gen/core_v1_json.h"
#include "api/gen/discovery_v1_json.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"
#include "controllers/endpoint/endpoints_util.h"
#include "controllers/endpointslice/reconciler.h"
#include "controllers/util/controller_utils.h"
#include "controllers/util/endpointslice_util.h"

namespace kcm::controllers::endpointslicemirroring {

using api::discovery::v1::Endpoint;
using api::discovery::v1::EndpointPort;
namespace es = endpointslice;

namespace {

constexpr const char* kLastAppliedConfigAnnotation = "kubectl.kubernetes.io/last-applied-configuration";

bool managedByController(const EndpointSlice& s) {
  auto it = s.metadata.labels.find(es::kLabelManagedBy);
  return it != s.metadata.labels.end() && it->second == kControllerName;
}

api::StringMap<api::String> withoutKeys(const api::StringMap<api::String>& m, std::initializer_list<const char*> keys) {
  api::StringMap<api::String> out = m;
  for (const char* k : keys) out.erase(k);
  return out;
}

// addressToEndpoint: nullopt for an address that is not an IP.
std::optional<std::pair<Endpoint, std::string>> addressToEndpoint(const api::core::v1::EndpointAddress& a, bool ready) {
  auto ip = endpointsliceutil::canonicalIP(a.ip);
  if (!ip) return std::nullopt;
  Endpoint e;
  e.addresses = {*ip};
  e.conditions.ready = ready;
  e.targetRef = a.targetRef;
  if (a.nodeName) e.nodeName = a.nodeName;
  if (!a.hostname.empty()) e.hostname = a.hostname;
  return std::make_pair(std::move(e), std::string(endpointsliceutil::isIPv6String(*ip) ? "IPv6" : "IPv4"));
}

EndpointSlice newEndpointSlice(const Endpoints& endpoints, const std::vector<EndpointPort>& ports,
                               const std::string& addressType, const std::string& sliceName) {
  EndpointSlice s;
  s.apiVersion = "discovery.k8s.io/v1";
  s.kind = "EndpointSlice";
  s.metadata.namespace_ = endpoints.metadata.namespace_;
  s.metadata.ownerReferences.push_back(newControllerRef(endpoints.metadata, "v1", "Endpoints"));
  s.ports = ports;
  s.addressType = addressType;
  s.metadata.labels = endpoints.metadata.labels;
  s.metadata.labels[es::kLabelServiceName] = endpoints.metadata.name;
  s.metadata.labels[es::kLabelManagedBy] = kControllerName;
  s.metadata.annotations =
      withoutKeys(endpoints.metadata.annotations, {es::kLastChangeTriggerTime, kLastAppliedConfigAnnotation});
  if (sliceName.empty()) s.metadata.generateName = endpoints.metadata.name + "-";
  else s.metadata.name = sliceName;
  return s;
}

struct Desired {
  std::map<std::string, std::map<std::string, Endpoint>> endpointsByKey;  // addrType-portkey -> set
  std::map<std::string, std::vector<EndpointPort>> portsByKey;
  std::map<std::string, std::string> addressTypeByKey;
};

}  // namespace

bool shouldMirror(const Endpoints& e) {
  auto skip = e.metadata.labels.find(kLabelSkipMirror);
  if (skip != e.metadata.labels.end() && skip->second == "true") return false;
  return !e.metadata.annotations.count("control-plane.alpha.kubernetes.io/leader");
}

EndpointSliceMirroringController::EndpointSliceMirroringController(
    std::shared_ptr<client::RestClient> client, informers::SharedInformer<Endpoints>& endpoints,
    informers::SharedInformer<EndpointSlice>& slices, informers::SharedInformer<Service>& services,
    int32_t maxEndpointsPerSubset, std::shared_ptr<client::EventRecorder> recorder,
    Clock::Duration endpointUpdatesBatchPeriod, Clock& clock)
    : client_(std::move(client)), endpoints_(endpoints), slices_(slices), services_(services),
      maxEndpointsPerSubset_(maxEndpointsPerSubset), recorder_(std::move(recorder)),
      batchPeriod_(endpointUpdatesBatchPeriod),
      base_("endpoint_slice_mirroring", [this](const std::string& key) { return syncEndpoints(key); }, clock, 15) {
  informers::EventHandler<Endpoints> eh;
  eh.onAdd = [this](const auto& e) {
    if (shouldMirror(*e)) base_.enqueueObject(*e);
  };
  eh.onUpdate = [this](const auto& prev, const auto& e) {
    if (shouldMirror(*e) || shouldMirror(*prev)) base_.enqueueObject(*e);
  };
  eh.onDelete = [this](const auto& e, bool) {
    if (shouldMirror(*e)) base_.enqueueObject(*e);
  };
  registrations_.push_back(endpoints_.addEventHandler(eh));
  informers::EventHandler<EndpointSlice> sh;
  sh.onAdd = [this](const auto& s) {
    if (managedByController(*s) && tracker_.shouldSync(*s)) queueEndpointsForEndpointSlice(*s);
  };
  sh.onUpdate = [this](const auto& prev, const auto& s) {
    if (es::serviceName(*s) != es::serviceName(*prev)) {
      KLOG_INFO("\"LabelServiceName changed\" labelServiceName=" + log::quote(es::kLabelServiceName) + " oldName=" +
                log::quote(es::serviceName(*prev)) + " newName=" + log::quote(es::serviceName(*s)) +
                " endpointSlice=" + log::quote(s->metadata.namespace_ + "/" + s->metadata.name));
      queueEndpointsForEndpointSlice(*s);
      queueEndpointsForEndpointSlice(*prev);
      return;
    }
    if (managedByController(*prev) != managedByController(*s) || (managedByController(*s) && tracker_.shouldSync(*s)))
      queueEndpointsForEndpointSlice(*s);
  };
  sh.onDelete = [this](const auto& s, bool) {
    if (managedByController(*s) && tracker_.has(*s) && !tracker_.handleDeletion(*s)) queueEndpointsForEndpointSlice(*s);
  };
  registrations_.push_back(slices_.addEventHandler(sh));
  // Only a Service without selector matters: its appearance, its deletion, or its selector coming or going.
  informers::EventHandler<Service> svc;
  svc.onAdd = [this](const auto& s) {
    if (s->spec.selector.empty()) base_.enqueueObject(*s);
  };
  svc.onUpdate = [this](const auto& prev, const auto& s) {
    if (s->spec.selector.empty() != prev->spec.selector.empty()) base_.enqueueObject(*s);
  };
  svc.onDelete = [this](const auto& s, bool) {
    if (s->spec.selector.empty()) base_.enqueueObject(*s);
  };
  registrations_.push_back(services_.addEventHandler(svc));
}

void EndpointSliceMirroringController::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting EndpointSliceMirroring controller\"");
  base_.start(workers, stop, {[this] { return endpoints_.hasSynced() && slices_.hasSynced() && services_.hasSynced(); }});
}

void EndpointSliceMirroringController::queueEndpointsForEndpointSlice(const EndpointSlice& s) {
  const std::string name = es::serviceName(s);
  if (name.empty()) return;
  base_.enqueueAfter(s.metadata.namespace_ + "/" + name, batchPeriod_);
}

std::vector<std::shared_ptr<const EndpointSlice>> EndpointSliceMirroringController::mirroredSlices(
    const std::string& ns, const std::string& name) {
  std::vector<std::shared_ptr<const EndpointSlice>> out;
  for (const auto& s : slices_.store().byIndex(informers::kNamespaceIndex, ns))
    if (es::serviceName(*s) == name && managedByController(*s)) out.push_back(s);
  return out;
}

Status EndpointSliceMirroringController::deleteMirroredSlices(const std::string& ns, const std::string& name) {
  auto slices = mirroredSlices(ns, name);
  tracker_.deleteService(ns, name);
  std::vector<std::string> errs;
  for (const auto& s : slices) {
    Status st = client::remove<EndpointSlice>(*client_, ns, s->metadata.name);
    if (!st.ok()) errs.push_back(st.message());
  }
  if (errs.empty()) return Status::Ok();
  return Status(StatusCode::kInternal, "error(s) deleting " + std::to_string(errs.size()) + "/" +
                                           std::to_string(slices.size()) + " EndpointSlices for " + ns + "/" + name +
                                           " Endpoints, including: " + errs[0]);
}

namespace {
// pkg/controller/endpointslicemirroring/metrics: label-less vectors, so each shows once first used.
constexpr const char* kSubsystem = "endpoint_slice_mirroring_controller_";
metrics::Histogram& perSync(const std::string& name, const std::string& help) {
  return metrics::Registry::global().histogram(kSubsystem + name, help, metrics::exponentialBuckets(2, 2, 15));
}
}  // namespace

void EndpointSliceMirroringController::updateMetricsCache(const std::string& key,
                                                          std::optional<EndpointsCounts> counts) {
  EndpointsCounts total;
  {
    std::lock_guard l(metricsMu_);
    // As upstream's cache, the gauges are set when an Endpoints was reconciled or a tracked one went away.
    if (counts) metricsCache_[key] = *counts;
    else if (metricsCache_.erase(key) == 0) return;
    for (const auto& [k, c] : metricsCache_) {
      total.endpoints += c.endpoints;
      total.desiredSlices += c.desiredSlices;
      total.actualSlices += c.actualSlices;
    }
  }
  auto& reg = metrics::Registry::global();
  reg.gauge(std::string(kSubsystem) + "endpoints_desired", "Number of endpoints desired").set(total.endpoints);
  reg.gauge(std::string(kSubsystem) + "num_endpoint_slices", "Number of EndpointSlices").set(total.actualSlices);
  reg.gauge(std::string(kSubsystem) + "desired_endpoint_slices",
            "Number of EndpointSlices that would exist with perfect endpoint allocation")
      .set(total.desiredSlices);
}

runtime::SyncResult EndpointSliceMirroringController::syncEndpoints(const std::string& key) {
  // upstream observes the duration of every sync, whatever its outcome, at millisecond granularity.
  const auto start = std::chrono::steady_clock::now();
  struct ObserveDuration {
    std::chrono::steady_clock::time_point start;
    ~ObserveDuration() {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
      metrics::Registry::global()
          .histogram(std::string(kSubsystem) + "endpoints_sync_duration", "Duration of syncEndpoints() in seconds",
                     metrics::exponentialBuckets(0.001, 2, 15))
          .observe(static_cast<double>(ms.count()) / 1000);
    }
  } observe{start};
  const auto slash = key.find('/');
  const std::string ns = slash == std::string::npos ? "" : key.substr(0, slash);
  const std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  auto cleanUp = [&]() {
    tracker_.deleteService(ns, name);
    updateMetricsCache(key, std::nullopt);
    Status st = deleteMirroredSlices(ns, name);
    return st.ok() ? runtime::SyncResult::ok() : runtime::SyncResult::error(st);
  };
  auto endpoints = endpoints_.store().get(key);
  if (!endpoints || !shouldMirror(*endpoints)) return cleanUp();
  auto svc = services_.store().get(key);
  if (!svc || !svc->spec.selector.empty()) return cleanUp();
  auto slices = mirroredSlices(ns, name);
  std::vector<const EndpointSlice*> existing;
  for (const auto& s : slices) existing.push_back(s.get());
  if (tracker_.staleSlices(ns, name, existing))
    return runtime::SyncResult::error(Status(StatusCode::kConflict, "EndpointSlice informer cache is out of date"));
  Status st = reconcile(*endpoints, existing);
  if (!st.ok()) return runtime::SyncResult::error(st);
  return runtime::SyncResult::ok();
}

Status EndpointSliceMirroringController::reconcile(const Endpoints& endpoints,
                                                   const std::vector<const EndpointSlice*>& existingSlices) {
  Desired d;
  int numInvalidAddresses = 0, addressesSkipped = 0;
  const std::string ref = endpoints.metadata.namespace_ + "/" + endpoints.metadata.name;
  for (const auto& subset : endpoint::repackSubsets(endpoints.subsets)) {
    // initPorts: the subset's ports, keyed per address type.
    std::vector<EndpointPort> ports;
    for (const auto& p : subset.ports) {
      EndpointPort ep;
      ep.name = p.name;
      ep.port = p.port;
      ep.protocol = p.protocol;
      ep.appProtocol = p.appProtocol;
      ports.push_back(std::move(ep));
    }
    const std::string portKey = es::newPortMapKey(ports);
    std::map<std::string, std::string> keyByType;
    for (const char* t : {"IPv4", "IPv6"}) {
      const std::string k = std::string(t) + "-" + portKey;
      keyByType[t] = k;
      d.endpointsByKey[k];
      d.portsByKey[k] = ports;
      d.addressTypeByKey[k] = t;
    }
    const int total = static_cast<int>(subset.addresses.size() + subset.notReadyAddresses.size());
    int added = 0;
    auto add = [&](const api::core::v1::EndpointAddress& a, bool ready) {
      if (added >= maxEndpointsPerSubset_) return false;
      auto e = addressToEndpoint(a, ready);
      if (!e) {
        ++numInvalidAddresses;
        KLOG_INFO("\"Address in Endpoints is not a valid IP, it will not be mirrored to an EndpointSlice\" endpoints=" +
                  log::quote(ref) + " IP=" + log::quote(a.ip));
        return true;
      }
      d.endpointsByKey[keyByType[e->second]][es::endpointSetKey(e->first)] = std::move(e->first);
      ++added;
      return true;
    };
    for (const auto& a : subset.addresses)
      if (!add(a, true)) break;
    for (const auto& a : subset.notReadyAddresses)
      if (!add(a, false)) break;
    addressesSkipped += total - added;
  }
  client::ObjectReference evRef{"Endpoints", "v1", endpoints.metadata.namespace_, endpoints.metadata.name,
                                endpoints.metadata.uid, endpoints.metadata.resourceVersion, ""};
  if (numInvalidAddresses > 0)
    recorder_->event(evRef, client::kEventTypeWarning, "InvalidIPAddress",
                     "Skipped " + std::to_string(numInvalidAddresses) +
                         " invalid IP addresses when mirroring to EndpointSlices");
  if (addressesSkipped > numInvalidAddresses) {
    KLOG_INFO("\"Addresses in Endpoints were skipped due to exceeding MaxEndpointsPerSubset\" skippedAddresses=" +
              std::to_string(addressesSkipped) + " endpoints=" + log::quote(ref));
    recorder_->event(evRef, client::kEventTypeWarning, "TooManyAddressesToMirror",
                     "A max of " + std::to_string(maxEndpointsPerSubset_) +
                         " addresses can be mirrored to EndpointSlices per Endpoints subset. " +
                         std::to_string(addressesSkipped) + " addresses were skipped");
  }
  std::map<std::string, std::vector<const EndpointSlice*>> existingByKey;
  for (const auto* s : existingSlices) {
    std::vector<EndpointPort> ports = s->ports;
    existingByKey[s->addressType + "-" + es::newPortMapKey(ports)].push_back(s);
  }
  std::vector<EndpointSlice> toCreate, toUpdate, toDelete;
  size_t totalAdded = 0, totalUpdated = 0, totalRemoved = 0;
  EndpointsCounts counts;
  const auto compareAnnotations =
      withoutKeys(endpoints.metadata.annotations, {es::kLastChangeTriggerTime, kLastAppliedConfigAnnotation});
  for (auto& [key, desired] : d.endpointsByKey) {
    const auto& existing = existingByKey[key];
    if (desired.empty()) {
      for (const auto* s : existing) {
        toDelete.push_back(*s);
        totalRemoved += s->endpoints.size();
      }
      continue;
    }
    counts.endpoints += static_cast<int>(desired.size());
    const int perSlice = std::max(1, maxEndpointsPerSubset_);
    counts.desiredSlices += static_cast<int>((desired.size() + perSlice - 1) / perSlice);
    counts.actualSlices += 1;
    if (existing.empty()) totalAdded += desired.size();
    if (!existing.empty()) {
      for (size_t i = 1; i < existing.size(); ++i) toDelete.push_back(*existing[i]);
      const EndpointSlice& first = *existing[0];
      // totalChanges
      size_t matches = 0, updated = 0, removed = 0;
      for (const auto& e : first.endpoints) {
        auto it = desired.find(es::endpointSetKey(e));
        if (it == desired.end()) {
          ++removed;
        } else {
          ++matches;
          if (!es::endpointsEqualBeyondHash(it->second, e)) ++updated;
        }
      }
      const size_t newOnes = desired.size() - matches;
      totalAdded += newOnes;
      totalUpdated += updated;
      totalRemoved += removed;
      bool needRebuild = false;
      for (const auto& o : first.metadata.ownerReferences)
        if (o.kind == "Endpoints" && o.name == endpoints.metadata.name && o.uid != endpoints.metadata.uid)
          needRebuild = true;
      if (newOnes == 0 && updated == 0 && removed == 0 &&
          endpoints.metadata.labels == withoutKeys(first.metadata.labels, {es::kLabelManagedBy, es::kLabelServiceName}) &&
          compareAnnotations == first.metadata.annotations && !needRebuild) {
        if (!tracker_.has(first)) tracker_.update(first);
        continue;
      }
    }
    EndpointSlice slice = newEndpointSlice(endpoints, d.portsByKey[key], d.addressTypeByKey[key],
                                           existing.empty() ? "" : existing[0]->metadata.name);
    while (!desired.empty() && slice.endpoints.size() < static_cast<size_t>(maxEndpointsPerSubset_)) {
      slice.endpoints.push_back(std::move(desired.begin()->second));
      desired.erase(desired.begin());
    }
    if (!slice.metadata.name.empty()) toUpdate.push_back(std::move(slice));
    else toCreate.push_back(std::move(slice));
  }
  for (const auto& [key, slices] : existingByKey)
    if (!d.endpointsByKey.count(key))
      for (const auto* s : slices) toDelete.push_back(*s);
  // recycleSlices: per address type, a slice to create takes the name of one to delete.
  for (const char* t : {"IPv4", "IPv6"}) {
    for (;;) {
      auto c = std::find_if(toCreate.begin(), toCreate.end(), [&](const EndpointSlice& s) { return s.addressType == t; });
      auto x = std::find_if(toDelete.begin(), toDelete.end(), [&](const EndpointSlice& s) { return s.addressType == t; });
      if (c == toCreate.end() || x == toDelete.end()) break;
      c->metadata.name = x->metadata.name;
      toUpdate.push_back(std::move(*c));
      toCreate.erase(c);
      toDelete.erase(x);
    }
  }
  perSync("addresses_skipped_per_sync",
          "Number of addresses skipped on each Endpoints sync due to being invalid or exceeding MaxEndpointsPerSubset")
      .observe(addressesSkipped);
  perSync("endpoints_added_per_sync", "Number of endpoints added on each Endpoints sync").observe(totalAdded);
  perSync("endpoints_updated_per_sync", "Number of endpoints updated on each Endpoints sync").observe(totalUpdated);
  perSync("endpoints_removed_per_sync", "Number of endpoints removed on each Endpoints sync").observe(totalRemoved);
  updateMetricsCache(endpoints.metadata.namespace_ + "/" + endpoints.metadata.name, counts);
  const bool deleting = endpoints.metadata.deletionTimestamp && !endpoints.metadata.deletionTimestamp->isZero();
  return es::writeSlices(*client_, tracker_, endpoints.metadata.namespace_, "Endpoints " + ref, toCreate, toUpdate,
                         toDelete, deleting, "endpoint_slice_mirroring_controller_changes");
}

}  // namespace kcm::controllers::endpointslicemirroring
