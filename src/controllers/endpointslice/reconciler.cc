#include "controllers/endpointslice/reconciler.h"

#include <algorithm>
#include <map>
#include <set>

#include "api/gen/discovery_v1_json.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"
#include "controllers/util/controller_utils.h"
#include "controllers/util/endpointslice_util.h"
#include "controllers/util/pod_template_dump.h"

namespace kcm::controllers::endpointslice {
namespace esutil = endpointsliceutil;
using api::core::v1::Node;

namespace {

void countChange(const char* operation) {
  metrics::Registry::global()
      .counter("endpoint_slice_controller_changes", "Number of EndpointSlice changes", {{"operation", operation}})
      .inc();
}

unsigned __int128 portHash(const EndpointPort& p) {
  podtemplatehash::Dumper d(nullptr, podtemplatehash::Dumper::Hash::kFnv128a);
  podtemplatehash::dumpDiscoveryEndpointPort(d, p);
  return d.sum128();
}

std::string portText(const EndpointPort& p) {
  std::string t;
  podtemplatehash::Dumper d(&t, podtemplatehash::Dumper::Hash::kFnv128a);
  podtemplatehash::dumpDiscoveryEndpointPort(d, p);
  return t;
}

using EndpointSet = std::map<std::string, Endpoint>;
std::string endpointKey(const Endpoint& e) { return endpointSetKey(e); }

}  // namespace

std::string endpointSetKey(const Endpoint& e) {
  std::vector<std::string> addrs = api::toStdStrings(e.addresses);
  std::sort(addrs.begin(), addrs.end());
  std::string k;
  for (const auto& a : addrs) k += a + ",";
  k += "|" + e.hostname.value_or("") + "|";
  if (e.targetRef) k += e.targetRef->namespace_ + "|" + e.targetRef->name;
  return k;
}

namespace {

bool isServiceIPSet(const Service& s) { return s.spec.clusterIP != "None" && !s.spec.clusterIP.empty(); }

bool isReservedLabelKey(const std::string& k) {
  return k == kLabelServiceName || k == kLabelManagedBy || k == kIsHeadlessService;
}

bool hintsEnabled(const api::StringMap<api::String>& annotations) {
  auto it = annotations.find("service.kubernetes.io/topology-aware-hints");
  if (it == annotations.end()) it = annotations.find("service.kubernetes.io/topology-mode");
  if (it == annotations.end()) return false;
  return it->second == "Auto" || it->second == "auto";
}

// validTrafficDistribution: PreferClose, and PreferSameZone/PreferSameNode (PreferSameTrafficDistribution is GA
// and locked on at the pin).
bool validTrafficDistribution(const std::optional<std::string>& td) {
  return td && (*td == "PreferClose" || *td == "PreferSameZone" || *td == "PreferSameNode");
}

bool endpointReady(const Endpoint& e) { return e.conditions.ready.value_or(false); }

// trafficdist.ReconcileHints' heuristics.
struct PreferClose {
  bool nodeHints;
  bool needsUpdate(const EndpointSlice& s) const {
    for (const auto& e : s.endpoints) {
      if (!endpointReady(e)) continue;
      if (e.zone) {
        if (!e.hints || e.hints->forZones.size() != 1 || e.hints->forZones[0].name != *e.zone) return true;
      } else if (e.hints && !e.hints->forZones.empty()) {
        return true;
      }
      if (e.nodeName && nodeHints) {
        if (!e.hints || e.hints->forNodes.size() != 1 || e.hints->forNodes[0].name != *e.nodeName) return true;
      } else if (e.hints && !e.hints->forNodes.empty()) {
        return true;
      }
    }
    return false;
  }
  void update(EndpointSlice& s) const {
    for (auto& e : s.endpoints) {
      if (!endpointReady(e)) continue;
      api::discovery::v1::EndpointHints h;
      if (e.zone) h.forZones.push_back({*e.zone, {}});
      if (e.nodeName && nodeHints) h.forNodes.push_back({*e.nodeName, {}});
      if (!h.forZones.empty() || !h.forNodes.empty()) e.hints = h;
      else e.hints = api::Box<api::discovery::v1::EndpointHints>();
    }
  }
};

// getSliceToFill: the unchanged slice the remaining endpoints fit in most tightly, if any.
const EndpointSlice* getSliceToFill(const std::vector<const EndpointSlice*>& slices, size_t numEndpoints,
                                    size_t maxEndpoints) {
  long closestDiff = static_cast<long>(maxEndpoints);
  const EndpointSlice* closest = nullptr;
  for (const auto* s : slices) {
    long diff = static_cast<long>(maxEndpoints) - static_cast<long>(numEndpoints + s->endpoints.size());
    if (diff >= 0 && diff < closestDiff) {
      closestDiff = diff;
      closest = s;
      if (diff == 0) return closest;
    }
  }
  return closest;
}

bool sameOwnerRefs(const EndpointSlice& a, const EndpointSlice& b) {
  const auto& x = a.metadata.ownerReferences;
  const auto& y = b.metadata.ownerReferences;
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].apiVersion != y[i].apiVersion || x[i].kind != y[i].kind || x[i].name != y[i].name || x[i].uid != y[i].uid ||
        x[i].controller != y[i].controller || x[i].blockOwnerDeletion != y[i].blockOwnerDeletion)
      return false;
  return true;
}

// placeholderSliceCompare: an existing empty slice that is the placeholder (namespace, labels, owner, no ports).
bool isSamePlaceholder(const EndpointSlice& existing, const EndpointSlice& placeholder) {
  return existing.addressType == placeholder.addressType && existing.endpoints.empty() && existing.ports.empty() &&
         existing.metadata.namespace_ == placeholder.metadata.namespace_ &&
         existing.metadata.labels == placeholder.metadata.labels && sameOwnerRefs(existing, placeholder);
}

void addTriggerTimeAnnotation(EndpointSlice& s, std::optional<std::chrono::system_clock::time_point> t) {
  if (t)
    s.metadata.annotations[kLastChangeTriggerTime] =
        api::Time::fromUnix(std::chrono::duration_cast<std::chrono::seconds>(t->time_since_epoch()).count()).rfc3339();
  else
    s.metadata.annotations.erase(kLastChangeTriggerTime);
}

std::string aggregate(const std::vector<std::string>& errs) {
  if (errs.size() == 1) return errs[0];
  std::string s = "[";
  for (size_t i = 0; i < errs.size(); ++i) s += (i ? ", " : "") + errs[i];
  return s + "]";
}

struct PortMapResult {
  std::vector<EndpointSlice> toCreate, toUpdate, toDelete;
  size_t added = 0, removed = 0;
};

// reconcileByPortMapping
PortMapResult reconcileByPortMapping(const Service& service, const std::vector<const EndpointSlice*>& existingSlices,
                                     EndpointSet desired, const std::vector<EndpointPort>& ports,
                                     const std::string& addressType, size_t maxEndpoints) {
  PortMapResult out;
  std::map<std::string, EndpointSlice> byName;
  std::set<std::string> unchanged, toUpdate, toDelete;
  for (const auto* existing : existingSlices) {
    byName[existing->metadata.name] = *existing;
    std::vector<Endpoint> kept;
    bool endpointUpdated = false;
    for (const auto& e : existing->endpoints) {
      auto it = desired.find(endpointKey(e));
      if (it == desired.end()) continue;
      kept.push_back(it->second);
      if (!endpointsEqualBeyondHash(it->second, e)) endpointUpdated = true;
      desired.erase(it);
    }
    auto [labels, labelsChanged] = setEndpointSliceLabels(*existing, service);
    if (endpointUpdated || existing->endpoints.size() != kept.size()) {
      if (existing->endpoints.size() > kept.size()) out.removed += existing->endpoints.size() - kept.size();
      if (kept.empty()) {
        toDelete.insert(existing->metadata.name);
      } else {
        EndpointSlice s = *existing;
        s.endpoints = std::move(kept);
        s.metadata.labels = labels;
        byName[s.metadata.name] = std::move(s);
        toUpdate.insert(existing->metadata.name);
      }
    } else if (labelsChanged) {
      EndpointSlice s = *existing;
      s.metadata.labels = labels;
      byName[s.metadata.name] = std::move(s);
      toUpdate.insert(existing->metadata.name);
    } else {
      unchanged.insert(existing->metadata.name);
    }
  }
  out.added = desired.size();
  auto popAny = [&]() {
    Endpoint e = std::move(desired.begin()->second);
    desired.erase(desired.begin());
    return e;
  };
  // New endpoints go first into slices being updated anyway, fullest first.
  if (!desired.empty() && !toUpdate.empty()) {
    std::vector<EndpointSlice*> slices;
    for (const auto& n : toUpdate) slices.push_back(&byName[n]);
    std::stable_sort(slices.begin(), slices.end(),
                     [](const EndpointSlice* a, const EndpointSlice* b) { return a->endpoints.size() > b->endpoints.size(); });
    for (auto* s : slices)
      while (!desired.empty() && s->endpoints.size() < maxEndpoints) s->endpoints.push_back(popAny());
  }
  while (!desired.empty()) {
    EndpointSlice* fill = nullptr;
    EndpointSlice fresh;
    if (desired.size() < maxEndpoints && !unchanged.empty()) {
      std::vector<const EndpointSlice*> candidates;
      for (const auto& n : unchanged) candidates.push_back(&byName[n]);
      if (const auto* best = getSliceToFill(candidates, desired.size(), maxEndpoints))
        fill = &byName[best->metadata.name];
    }
    if (!fill) {
      fresh = newEndpointSlice(service, ports, addressType);
      fill = &fresh;
    }
    while (!desired.empty() && fill->endpoints.size() < maxEndpoints) fill->endpoints.push_back(popAny());
    if (!fill->metadata.name.empty()) {
      toUpdate.insert(fill->metadata.name);
      unchanged.erase(fill->metadata.name);
    } else {
      out.toCreate.push_back(std::move(fresh));
    }
  }
  for (const auto& n : toUpdate) out.toUpdate.push_back(byName[n]);
  for (const auto& n : toDelete) out.toDelete.push_back(byName[n]);
  return out;
}

}  // namespace

std::vector<std::string> getAddressTypesForService(const Service& service) {
  std::set<std::string> types;
  for (const auto& f : service.spec.ipFamilies) {
    if (f == "IPv4") types.insert("IPv4");
    if (f == "IPv6") types.insert("IPv6");
  }
  if (!types.empty()) return {types.begin(), types.end()};
  if (!service.spec.clusterIP.empty() && service.spec.clusterIP != "None")
    return {esutil::isIPv6String(service.spec.clusterIP) ? "IPv6" : "IPv4"};
  return {"IPv4", "IPv6"};
}

std::vector<EndpointPort> getEndpointPorts(const Service& service, const Pod& pod) {
  std::vector<EndpointPort> out;
  if (service.spec.ports.empty() && service.spec.clusterIP == "None") return out;
  for (const auto& sp : service.spec.ports) {
    auto port = esutil::findPort(pod, sp);
    if (!port.ok()) continue;
    EndpointPort p;
    p.name = sp.name;
    p.port = static_cast<int32_t>(*port);
    p.protocol = sp.protocol;
    p.appProtocol = sp.appProtocol;
    out.push_back(std::move(p));
  }
  return out;
}

std::string newPortMapKey(std::vector<EndpointPort>& ports) {
  std::stable_sort(ports.begin(), ports.end(),
                   [](const EndpointPort& a, const EndpointPort& b) { return portHash(a) < portHash(b); });
  std::string key;
  for (const auto& p : ports) key += portText(p) + "\n";
  return key;
}

Endpoint podToEndpoint(const Pod& pod, const Node* node, const Service& service, const std::string& addressType) {
  const bool serving = esutil::isPodReady(pod);
  const bool terminating = pod.metadata.deletionTimestamp && !pod.metadata.deletionTimestamp->isZero();
  const bool ready = service.spec.publishNotReadyAddresses || (serving && !terminating);
  Endpoint e;
  for (const auto& ip : pod.status.podIPs) {
    auto canonical = esutil::canonicalIP(ip.ip);
    if (!canonical) continue;
    if (esutil::isIPv6String(*canonical) == (addressType == "IPv6")) e.addresses.push_back(*canonical);
  }
  e.conditions.ready = ready;
  e.conditions.serving = serving;
  e.conditions.terminating = terminating;
  auto& ref = e.targetRef.emplace();
  ref.kind = "Pod";
  ref.namespace_ = pod.metadata.namespace_;
  ref.name = pod.metadata.name;
  ref.uid = pod.metadata.uid;
  if (!pod.spec.nodeName.empty()) e.nodeName = pod.spec.nodeName;
  if (node) {
    auto z = node->metadata.labels.find(kLabelTopologyZone);
    if (z != node->metadata.labels.end() && !z->second.empty()) e.zone = z->second;
  }
  if (esutil::shouldSetHostname(pod, service)) e.hostname = pod.spec.hostname;
  return e;
}

std::pair<api::StringMap<api::String>, bool> setEndpointSliceLabels(const EndpointSlice& slice, const Service& service) {
  api::StringMap<api::String> epLabels, svcLabels;
  for (const auto& [k, v] : slice.metadata.labels)
    if (!isReservedLabelKey(k)) epLabels[k] = v;
  for (const auto& [k, v] : service.metadata.labels) {
    if (isReservedLabelKey(k)) {
      KLOG_INFO("\"Service using reserved endpoint slices label\" service=" +
                log::quote(service.metadata.namespace_ + "/" + service.metadata.name) + " skipping=" + log::quote(k) +
                " label=" + log::quote(v));
      continue;
    }
    svcLabels[k] = v;
  }
  const bool updated = epLabels != svcLabels;
  if (!isServiceIPSet(service)) svcLabels[kIsHeadlessService] = "";
  else svcLabels.erase(kIsHeadlessService);
  svcLabels[kLabelServiceName] = service.metadata.name;
  svcLabels[kLabelManagedBy] = kControllerName;
  return {svcLabels, updated};
}

EndpointSlice newEndpointSlice(const Service& service, const std::vector<EndpointPort>& ports,
                               const std::string& addressType) {
  EndpointSlice s;
  s.apiVersion = "discovery.k8s.io/v1";
  s.kind = "EndpointSlice";
  s.metadata.generateName = service.metadata.name + "-";
  s.metadata.namespace_ = service.metadata.namespace_;
  s.metadata.ownerReferences.push_back(newControllerRef(service.metadata, "v1", "Service"));
  s.ports = ports;
  s.addressType = addressType;
  s.metadata.labels = setEndpointSliceLabels(s, service).first;
  return s;
}

std::string serviceName(const EndpointSlice& slice) {
  auto it = slice.metadata.labels.find(kLabelServiceName);
  return it == slice.metadata.labels.end() ? "" : it->second;
}

bool ownedBy(const EndpointSlice& slice, const Service& service) {
  for (const auto& o : slice.metadata.ownerReferences)
    if (o.uid == service.metadata.uid && o.kind == "Service" && o.apiVersion == "v1") return true;
  return false;
}

bool endpointsEqualBeyondHash(const Endpoint& a, const Endpoint& b) {
  if (a.nodeName != b.nodeName || a.zone != b.zone) return false;
  if (a.conditions.ready != b.conditions.ready || a.conditions.serving != b.conditions.serving ||
      a.conditions.terminating != b.conditions.terminating)
    return false;
  if (a.targetRef.has_value() != b.targetRef.has_value()) return false;
  if (a.targetRef) {
    const auto& x = *a.targetRef;
    const auto& y = *b.targetRef;
    if (x.kind != y.kind || x.namespace_ != y.namespace_ || x.name != y.name || x.uid != y.uid ||
        x.apiVersion != y.apiVersion || x.fieldPath != y.fieldPath)
      return false;
  }
  return true;
}

Reconciler::Reconciler(std::shared_ptr<client::RestClient> client, const informers::Store<Node>& nodes,
                       int32_t maxEndpointsPerSlice, EndpointSliceTracker& tracker,
                       std::shared_ptr<client::EventRecorder> recorder, TopologyCache* topologyCache)
    : client_(std::move(client)), nodes_(nodes), maxEndpointsPerSlice_(maxEndpointsPerSlice), tracker_(tracker),
      recorder_(std::move(recorder)), topologyCache_(topologyCache), metricsCache_(maxEndpointsPerSlice) {}

bool Reconciler::managedByController(const EndpointSlice& s) const {
  auto it = s.metadata.labels.find(kLabelManagedBy);
  return it != s.metadata.labels.end() && it->second == kControllerName;
}

Status Reconciler::reconcile(const Service& service, const std::vector<std::shared_ptr<const Pod>>& pods,
                             const std::vector<const EndpointSlice*>& existingSlices,
                             std::optional<std::chrono::system_clock::time_point> triggerTime) {
  std::vector<std::string> errs;
  const auto types = getAddressTypesForService(service);
  std::map<std::string, std::vector<const EndpointSlice*>> byType;
  std::vector<const EndpointSlice*> toDelete;
  for (const auto* s : existingSlices) {
    if (std::find(types.begin(), types.end(), s->addressType) != types.end()) {
      byType[s->addressType].push_back(s);
      continue;
    }
    if (topologyCache_) {
      if (const std::string name = serviceName(*s); name.empty())
        KLOG_INFO("\"Couldn't get key to remove EndpointSlice from topology cache\" existingSlice=" +
                  log::quote(s->metadata.name) + " err=" + log::quote("EndpointSlice missing " +
                  std::string(kLabelServiceName) + " label"));
      else
        topologyCache_->removeHints(s->metadata.namespace_ + "/" + name, s->addressType);
    }
    toDelete.push_back(s);
  }
  for (const auto& t : types)
    if (Status st = reconcileByAddressType(service, pods, byType[t], triggerTime, t); !st.ok()) errs.push_back(st.message());
  const std::string& ns = service.metadata.namespace_;
  for (const auto* s : toDelete) {
    Status st = client::remove<EndpointSlice>(*client_, ns, s->metadata.name);
    if (!st.ok()) {
      errs.push_back("error deleting " + s->metadata.name + " EndpointSlice for Service " + ns + "/" +
                     service.metadata.name + ": " + st.message());
    } else {
      tracker_.expectDeletion(*s);
      countChange("delete");
    }
  }
  if (errs.empty()) return Status::Ok();
  return Status(StatusCode::kInternal, aggregate(errs));
}

Status Reconciler::reconcileByAddressType(const Service& service, const std::vector<std::shared_ptr<const Pod>>& pods,
                                          const std::vector<const EndpointSlice*>& existingSlices,
                                          std::optional<std::chrono::system_clock::time_point> triggerTime,
                                          const std::string& addressType) {
  std::vector<std::string> errs;
  std::vector<EndpointSlice> toCreate, toUpdate, toDelete;
  std::map<std::string, std::vector<const EndpointSlice*>> existingByPortMap;
  for (const auto* s : existingSlices) {
    if (ownedBy(*s, service)) {
      std::vector<EndpointPort> ports = s->ports;
      existingByPortMap[newPortMapKey(ports)].push_back(s);
    } else {
      toDelete.push_back(*s);
    }
  }
  std::map<std::string, EndpointSet> desiredByPortMap;
  std::map<std::string, std::vector<EndpointPort>> desiredPorts;
  const std::string svcKey = service.metadata.namespace_ + "/" + service.metadata.name;
  for (const auto& pod : pods) {
    if (!esutil::shouldPodBeInEndpoints(*pod, true)) continue;
    std::vector<EndpointPort> ports = getEndpointPorts(service, *pod);
    const std::string key = newPortMapKey(ports);
    desiredByPortMap[key];
    desiredPorts.emplace(key, ports);
    auto node = nodes_.get(pod->spec.nodeName);
    if (!node && !service.spec.publishNotReadyAddresses) {
      KLOG_INFO("\"skipping Pod for Service, Node not found\" pod=" + log::quote(pod->metadata.namespace_ + "/" +
                pod->metadata.name) + " service=" + log::quote(svcKey) + " node=" + log::quote(pod->spec.nodeName));
      errs.push_back("skipping Pod " + pod->metadata.name + " for Service " + svcKey + ": Node " + pod->spec.nodeName +
                     " Not Found");
      continue;
    }
    Endpoint e = podToEndpoint(*pod, node.get(), service, addressType);
    if (!e.addresses.empty()) desiredByPortMap[key][endpointKey(e)] = std::move(e);
  }
  const size_t maxEndpoints = static_cast<size_t>(std::max<int32_t>(1, maxEndpointsPerSlice_));
  MetricsCache::ServicePortCache spMetrics;
  size_t totalAdded = 0, totalRemoved = 0;
  for (auto& [key, desired] : desiredByPortMap) {
    const int numEndpoints = static_cast<int>(desired.size());
    auto r = reconcileByPortMapping(service, existingByPortMap[key], std::move(desired), desiredPorts[key], addressType,
                                    maxEndpoints);
    totalAdded += r.added;
    totalRemoved += r.removed;
    spMetrics[key] = {numEndpoints, static_cast<int>(existingByPortMap[key].size() + r.toCreate.size()) -
                                        static_cast<int>(r.toDelete.size())};
    for (auto& s : r.toCreate) toCreate.push_back(std::move(s));
    for (auto& s : r.toUpdate) toUpdate.push_back(std::move(s));
    for (auto& s : r.toDelete) toDelete.push_back(std::move(s));
  }
  for (const auto& [key, slices] : existingByPortMap)
    if (!desiredByPortMap.count(key))
      for (const auto* s : slices) toDelete.push_back(*s);
  // A Service with no endpoints keeps exactly one empty placeholder slice.
  if (existingSlices.size() == toDelete.size() && toCreate.empty()) {
    EndpointSlice placeholder = newEndpointSlice(service, {}, addressType);
    if (toDelete.size() == 1 && isSamePlaceholder(toDelete[0], placeholder)) toDelete.clear();
    else toCreate.push_back(std::move(placeholder));
    std::vector<EndpointPort> none;
    spMetrics[newPortMapKey(none)] = {0, 1};
  }
  observeEndpointsAddedRemoved(static_cast<int>(totalAdded), static_cast<int>(totalRemoved));
  metricsCache_.updateServicePortCache(svcKey, std::move(spMetrics));
  // Hints, per address type.
  auto unchangedSlices = [&] {
    std::set<std::string> changed;
    for (const auto& s : toUpdate) changed.insert(s.metadata.name);
    for (const auto& s : toDelete) changed.insert(s.metadata.name);
    std::vector<const EndpointSlice*> out;
    for (const auto* s : existingSlices)
      if (!changed.count(s->metadata.name)) out.push_back(s);
    return out;
  };
  const bool topologyAuto = hintsEnabled(service.metadata.annotations);
  const bool canUseTrafficDistribution = validTrafficDistribution(service.spec.trafficDistribution) && !topologyAuto;
  std::vector<HintEvent> events;
  auto unchanged = unchangedSlices();
  SliceInfo si{svcKey, addressType, std::move(toCreate), std::move(toUpdate), std::move(unchanged)};
  if (topologyCache_ && topologyAuto) {
    events = topologyCache_->addHints(si);
  } else {
    if (topologyCache_) {
      if (topologyCache_->hasPopulatedHints(svcKey)) {
        KLOG_INFO("\"TopologyAwareHints annotation has changed, removing hints\" serviceKey=" + log::quote(svcKey) +
                  " addressType=" + log::quote(addressType));
        events.push_back({client::kEventTypeWarning, "TopologyAwareHintsDisabled",
                          formatWithAddressType(kTopologyAwareHintsDisabled, addressType)});
      }
      topologyCache_->removeHints(svcKey, addressType);
    }
    if (!canUseTrafficDistribution) removeHintsFromSlices(si);
  }
  toCreate = std::move(si.toCreate);
  toUpdate = std::move(si.toUpdate);
  if (canUseTrafficDistribution) {
    metricsCache_.updateTrafficDistributionForService(svcKey, service.spec.trafficDistribution);
    PreferClose h{*service.spec.trafficDistribution == "PreferSameNode"};
    for (const auto* s : unchangedSlices())
      if (h.needsUpdate(*s)) toUpdate.push_back(*s);
    for (auto& s : toCreate) h.update(s);
    for (auto& s : toUpdate) h.update(s);
  } else {
    metricsCache_.updateTrafficDistributionForService(svcKey, std::nullopt);
  }
  if (Status st = finalize(service, std::move(toCreate), std::move(toUpdate), std::move(toDelete), triggerTime); !st.ok())
    errs.push_back(st.message());
  for (const auto& e : events)
    recorder_->event({"Service", "v1", service.metadata.namespace_, service.metadata.name, service.metadata.uid,
                      service.metadata.resourceVersion, ""},
                     e.type, e.reason, e.message);
  if (errs.empty()) return Status::Ok();
  return Status(StatusCode::kInternal, aggregate(errs));
}

Status Reconciler::finalize(const Service& service, std::vector<EndpointSlice> toCreate,
                            std::vector<EndpointSlice> toUpdate, std::vector<EndpointSlice> toDelete,
                            std::optional<std::chrono::system_clock::time_point> triggerTime) {
  // A slice about to be deleted is reused for one about to be created.
  for (size_t i = 0; i < toDelete.size();) {
    if (toCreate.empty()) break;
    EndpointSlice& slice = toCreate.back();
    if (toDelete[i].addressType == slice.addressType && ownedBy(toDelete[i], service)) {
      slice.metadata.name = toDelete[i].metadata.name;
      toUpdate.push_back(std::move(slice));
      toCreate.pop_back();
      toDelete.erase(toDelete.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
  const bool deleting = service.metadata.deletionTimestamp && !service.metadata.deletionTimestamp->isZero();
  for (auto& s : toCreate) addTriggerTimeAnnotation(s, triggerTime);
  for (auto& s : toUpdate) addTriggerTimeAnnotation(s, triggerTime);
  Status st = writeSlices(*client_, tracker_, service.metadata.namespace_,
                          "Service " + service.metadata.namespace_ + "/" + service.metadata.name, toCreate, toUpdate,
                          toDelete, /*skipCreates=*/deleting, "endpoint_slice_controller_changes");
  if (!st.ok()) return st;
  const bool topologyAuto = topologyCache_ && hintsEnabled(service.metadata.annotations);
  const bool td = validTrafficDistribution(service.spec.trafficDistribution) && !hintsEnabled(service.metadata.annotations);
  observeSlicesChangedPerSync(topologyAuto, td ? *service.spec.trafficDistribution : "",
                              static_cast<int>(toCreate.size() + toUpdate.size() + toDelete.size()));
  return st;
}

Status writeSlices(client::RestClient& client, EndpointSliceTracker& tracker, const std::string& ns,
                   const std::string& owner, std::vector<EndpointSlice>& toCreate, std::vector<EndpointSlice>& toUpdate,
                   const std::vector<EndpointSlice>& toDelete, bool skipCreates, const char* changesMetric) {
  auto count = [changesMetric](const char* operation) {
    metrics::Registry::global().counter(changesMetric, "Number of EndpointSlice changes", {{"operation", operation}}).inc();
  };
  if (!skipCreates) {
    for (auto& s : toCreate) {
      s.apiVersion = "discovery.k8s.io/v1";
      s.kind = "EndpointSlice";
      auto r = client::create(client, ns, s);
      if (!r.ok()) {
        if (r.status().code() == StatusCode::kForbidden &&
            r.status().message().find("because it is being terminated") != std::string::npos)
          return Status::Ok();  // the namespace is going away
        return Status(r.status().code(), "failed to create EndpointSlice for " + owner + ": " + r.status().message());
      }
      tracker.update(*r);
      count("create");
    }
  }
  for (auto& s : toUpdate) {
    s.apiVersion = "discovery.k8s.io/v1";
    s.kind = "EndpointSlice";
    auto r = client::update(client, s);
    if (!r.ok())
      return Status(r.status().code(),
                    "failed to update " + s.metadata.name + " EndpointSlice for " + owner + ": " + r.status().message());
    tracker.update(*r);
    count("update");
  }
  for (const auto& s : toDelete) {
    Status st = client::remove<EndpointSlice>(client, ns, s.metadata.name);
    if (!st.ok())
      return Status(st.code(), "failed to delete " + s.metadata.name + " EndpointSlice for " + owner + ": " + st.message());
    tracker.expectDeletion(s);
    count("delete");
  }
  return Status::Ok();
}

}  // namespace kcm::controllers::endpointslice
