#include "controllers/endpointslice/topology_cache.h"

#include <cmath>

#include "base/log.h"
#include "controllers/util/node_util.h"

namespace kcm::controllers::endpointslice {
using api::discovery::v1::Endpoint;
using api::discovery::v1::EndpointSlice;

namespace {

constexpr double kOverloadThreshold = 0.2;  // the most any endpoint should be overloaded
constexpr double kMinimumShare = 1 / (1 + kOverloadThreshold);

bool ready(const Endpoint& e) { return e.conditions.ready.value_or(false); }

int numReadyEndpoints(const std::vector<Endpoint>& endpoints) {
  int n = 0;
  for (const auto& e : endpoints) n += ready(e) ? 1 : 0;
  return n;
}

void setZoneHint(Endpoint& e, const std::string& zone) {
  api::discovery::v1::EndpointHints h;
  h.forZones.push_back({zone, {}});
  e.hints = h;
}

bool hasExcludedLabels(const api::StringMap<api::String>& labels) {
  return labels.find("node-role.kubernetes.io/control-plane") != labels.end() ||
         labels.find("node-role.kubernetes.io/master") != labels.end();
}

std::string logKey(const SliceInfo& si) {
  return " key=" + log::quote(si.serviceKey) + " addressType=" + log::quote(si.addressType);
}

HintEvent disabled(std::string message) {
  return {"Warning", "TopologyAwareHintsDisabled", std::move(message)};
}

// getHintsByZone: the hints per zone of an unchanged slice, or nullopt when the slice must be rewritten (a ready
// endpoint without hints, a hint for a zone with no allocation, or more hints than a zone's maximum).
std::optional<std::map<std::string, int>> getHintsByZone(const EndpointSlice& slice,
                                                          const TopologyCache::ZoneCounts& allocated,
                                                          const std::map<std::string, TopologyCache::Allocation>& allocations) {
  std::map<std::string, int> byZone;
  for (const auto& e : slice.endpoints) {
    if (!ready(e)) continue;
    if (!e.hints || e.hints->forZones.empty()) return std::nullopt;
    for (const auto& z : e.hints->forZones) {
      if (!allocations.count(z.name)) return std::nullopt;
      byZone[z.name]++;
    }
  }
  for (const auto& [zone, n] : byZone) {
    auto a = allocations.find(zone);
    auto already = allocated.find(zone);
    if (a == allocations.end() || n + (already == allocated.end() ? 0 : already->second) > a->second.maximum)
      return std::nullopt;
  }
  return byZone;
}

// SliceInfo.getAllocatedHintsByZone: the hints unchanged slices already give; slices whose hints no longer fit move
// to toUpdate.
TopologyCache::ZoneCounts getAllocatedHintsByZone(SliceInfo& si,
                                                  const std::map<std::string, TopologyCache::Allocation>& allocations) {
  TopologyCache::ZoneCounts allocated;
  std::vector<const EndpointSlice*> still;
  for (const auto* s : si.unchanged) {
    auto byZone = getHintsByZone(*s, allocated, allocations);
    if (!byZone) {
      si.toUpdate.push_back(*s);
      continue;
    }
    still.push_back(s);
    for (const auto& [zone, n] : *byZone) allocated[zone] += n;
  }
  si.unchanged = std::move(still);
  return allocated;
}

// redistributeHints: re-hints ready endpoints of giving zones for receiving zones; the change per zone.
std::map<std::string, int> redistributeHints(const std::vector<EndpointSlice*>& slices,
                                             std::map<std::string, int> giving, std::map<std::string, int> receiving) {
  std::map<std::string, int> changes;
  for (auto* slice : slices) {
    for (auto& e : slice->endpoints) {
      if (!ready(e)) continue;
      if (giving.empty() || receiving.empty()) return changes;
      if (!e.zone || e.zone->empty()) {
        KLOG_INFO("\"Endpoint found without zone specified\"");
        continue;
      }
      const std::string from = *e.zone;
      auto g = giving.find(from);
      if (g == giving.end() || g->second <= 0) continue;
      for (auto r = receiving.begin(); r != receiving.end(); ++r) {
        if (r->second <= 0) continue;
        const std::string to = r->first;
        setZoneHint(e, to);
        if (--g->second == 0) giving.erase(g);
        if (--r->second == 0) receiving.erase(r);
        changes[to]++;
        changes[from]--;
        break;
      }
    }
  }
  return changes;
}

// getMost: the zone with the largest value (the first in name order among equals), "" when none is positive.
std::pair<std::string, double> getMost(const std::map<std::string, double>& zones) {
  std::string zone;
  double most = 0;
  for (const auto& [z, n] : zones)
    if (n > most) {
      zone = z;
      most = n;
    }
  return {zone, most};
}

}  // namespace

bool isNodeReady(const api::core::v1::Node& n) {
  const auto* c = getNodeCondition(n.status, "Ready");
  return c && c->status == "True";
}

std::string formatWithAddressType(const std::string& s, const std::string& addressType) {
  return s + ", addressType: " + addressType;
}

void removeHintsFromSlices(SliceInfo& si) {
  for (auto* v : {&si.toCreate, &si.toUpdate})
    for (auto& s : *v)
      for (auto& e : s.endpoints) e.hints = api::Box<api::discovery::v1::EndpointHints>();
  std::vector<const EndpointSlice*> still;
  for (const auto* s : si.unchanged) {
    bool hinted = false;
    for (const auto& e : s->endpoints) hinted = hinted || e.hints;
    if (!hinted) {
      still.push_back(s);
      continue;
    }
    EndpointSlice copy = *s;
    for (auto& e : copy.endpoints) e.hints = api::Box<api::discovery::v1::EndpointHints>();
    si.toUpdate.push_back(std::move(copy));
  }
  si.unchanged = std::move(still);
}

std::pair<std::map<std::string, int>, std::map<std::string, int>> getGivingAndReceivingZones(
    const std::map<std::string, TopologyCache::Allocation>& allocations,
    const TopologyCache::ZoneCounts& allocatedHintsByZone) {
  std::map<std::string, double> givingDesired, receivingDesired;
  for (const auto& [zone, a] : allocations) {
    auto it = allocatedHintsByZone.find(zone);
    const double have = it == allocatedHintsByZone.end() ? 0 : it->second;
    if (have > a.desired) givingDesired[zone] = have - a.desired;
    else if (have < a.desired) receivingDesired[zone] = a.desired - have;
  }
  std::map<std::string, int> giving, receiving;
  for (;;) {
    auto [from, toGive] = getMost(givingDesired);
    auto [to, toReceive] = getMost(receivingDesired);
    if (from.empty() || to.empty() || (toGive < 1.0 && toReceive < 1.0) || toGive < 0.5 || toReceive < 0.5) break;
    giving[from]++;
    givingDesired[from]--;
    receiving[to]++;
    receivingDesired[to]--;
  }
  return {giving, receiving};
}

bool serviceOverloaded(const TopologyCache::ZoneCounts& ezi, const std::map<std::string, double>& zoneRatios) {
  if (ezi.empty()) return false;
  if (zoneRatios.empty()) return true;
  double total = 0;
  for (const auto& [zone, n] : ezi) total += n;
  for (const auto& [zone, ratio] : zoneRatios) {
    auto it = ezi.find(zone);
    if (it == ezi.end()) return true;
    if (it->second < static_cast<int>(std::ceil(total * ratio * kMinimumShare))) return true;
  }
  return false;
}

std::map<std::string, TopologyCache::Allocation> TopologyCache::getAllocations(int numEndpoints,
                                                                               std::optional<HintEvent>& why) const {
  std::lock_guard l(mu_);
  std::map<std::string, Allocation> out;
  if (!haveRatios_) {
    why = disabled(kInsufficientNodeInfo);
    return out;
  }
  const std::string counts =
      " (" + std::to_string(numEndpoints) + " endpoints, " + std::to_string(cpuRatiosByZone_.size()) + " zones)";
  if (cpuRatiosByZone_.size() < 2) {
    why = disabled(kNodesReadyInOneZoneOnly);
    return out;
  }
  if (static_cast<int>(cpuRatiosByZone_.size()) > numEndpoints) {
    why = disabled(kInsufficientNumberOfEndpoints + counts);
    return out;
  }
  int minTotal = 0;
  for (const auto& [zone, ratio] : cpuRatiosByZone_) {
    const double desired = ratio * static_cast<double>(numEndpoints);
    const int minimum = static_cast<int>(std::ceil(desired * kMinimumShare));
    out[zone] = {minimum, 0, std::max(desired, static_cast<double>(minimum))};
    minTotal += minimum;
    if (numEndpoints - minTotal < 0) {
      why = disabled(kMinAllocationExceedsOverloadThreshold + counts);
      return {};
    }
  }
  for (auto& [zone, a] : out) a.maximum = a.minimum + numEndpoints - minTotal;
  return out;
}

std::vector<HintEvent> TopologyCache::addHints(SliceInfo& si) {
  std::vector<HintEvent> events;
  int total = 0;
  for (const auto& s : si.toCreate) total += numReadyEndpoints(s.endpoints);
  for (const auto& s : si.toUpdate) total += numReadyEndpoints(s.endpoints);
  for (const auto* s : si.unchanged) total += numReadyEndpoints(s->endpoints);
  std::optional<HintEvent> why;
  auto allocations = getAllocations(total, why);
  auto removeAll = [&](HintEvent e) {
    events.push_back(std::move(e));
    removeHints(si.serviceKey, si.addressType);
    removeHintsFromSlices(si);
    return events;
  };
  if (why) {
    KLOG_INFO("\"" + why->message + ", removing hints\"" + logKey(si));
    why->message = formatWithAddressType(why->message, si.addressType);
    return removeAll(*why);
  }
  ZoneCounts allocated = getAllocatedHintsByZone(si, allocations);
  std::vector<EndpointSlice*> allocatable;
  for (auto& s : si.toCreate) allocatable.push_back(&s);
  for (auto& s : si.toUpdate) allocatable.push_back(&s);
  // Every ready endpoint starts hinted for its own zone.
  for (auto* s : allocatable)
    for (auto& e : s->endpoints) {
      if (!ready(e)) continue;
      if (!e.zone || e.zone->empty()) {
        KLOG_INFO("\"Endpoint found without zone specified, removing hints\"" + logKey(si));
        return removeAll(disabled(formatWithAddressType(kNoZoneSpecified, si.addressType)));
      }
      allocated[*e.zone]++;
      setZoneHint(e, *e.zone);
    }
  auto [giving, receiving] = getGivingAndReceivingZones(allocations, allocated);
  for (const auto& [zone, diff] : redistributeHints(allocatable, giving, receiving)) allocated[zone] += diff;
  if (allocated.empty()) {
    KLOG_V(2, "\"No hints allocated for zones, removing them\"" + logKey(si));
    return removeAll(disabled(formatWithAddressType(kNoAllocatedHintsForZones, si.addressType)));
  }
  std::lock_guard l(mu_);
  const bool wasEnabled = hintsPopulatedByService_.count(si.serviceKey) > 0;
  endpointsByService_[si.serviceKey][si.addressType] = allocated;
  hintsPopulatedByService_.insert(si.serviceKey);
  if (!wasEnabled) {
    KLOG_INFO("\"Topology Aware Hints has been enabled, adding hints.\"" + logKey(si));
    events.push_back({"Normal", "TopologyAwareHintsEnabled",
                      formatWithAddressType(kTopologyAwareHintsEnabled, si.addressType)});
  }
  return events;
}

void TopologyCache::setHints(const std::string& serviceKey, const std::string& addressType,
                             const ZoneCounts& allocatedHintsByZone) {
  std::lock_guard l(mu_);
  endpointsByService_[serviceKey][addressType] = allocatedHintsByZone;
  hintsPopulatedByService_.insert(serviceKey);
}

void TopologyCache::removeHints(const std::string& serviceKey, const std::string& addressType) {
  std::lock_guard l(mu_);
  if (auto it = endpointsByService_.find(serviceKey); it != endpointsByService_.end()) {
    it->second.erase(addressType);
    if (it->second.empty()) endpointsByService_.erase(it);
  }
  hintsPopulatedByService_.erase(serviceKey);
}

void TopologyCache::setNodes(const std::vector<std::shared_ptr<const api::core::v1::Node>>& nodes) {
  std::map<std::string, int64_t> cpuByZone;
  bool sufficient = true;
  int64_t total = 0;
  for (const auto& n : nodes) {
    if (hasExcludedLabels(n->metadata.labels)) {
      KLOG_V(6, "\"Ignoring node because it has an excluded label\" node=" + log::quote(n->metadata.name));
      continue;
    }
    if (!isNodeReady(*n)) {
      KLOG_V(6, "\"Ignoring node because it is not ready\" node=" + log::quote(n->metadata.name));
      continue;
    }
    auto cpu = n->status.allocatable.find("cpu");
    const int64_t milli = cpu == n->status.allocatable.end() ? 0 : cpu->second.milliValue();
    auto zone = n->metadata.labels.find("topology.kubernetes.io/zone");
    if (zone == n->metadata.labels.end() || zone->second.empty() || milli == 0) {
      cpuByZone.clear();
      sufficient = false;
      KLOG_INFO("\"Can't get CPU or zone information for node\" node=" + log::quote(n->metadata.name));
      break;
    }
    total += milli;
    cpuByZone[zone->second] += milli;
  }
  std::lock_guard l(mu_);
  if (total == 0 || !sufficient || cpuByZone.size() < 2) {
    KLOG_V(2, "\"Insufficient node info for topology hints\" totalZones=" + std::to_string(cpuByZone.size()) +
                  " totalCPU=" + log::quote(api::Quantity::fromMilli(total).str()) +
                  " sufficientNodeInfo=" + (sufficient ? "true" : "false"));
    sufficientNodeInfo_ = false;
    cpuByZone_.clear();
    cpuRatiosByZone_.clear();
    haveRatios_ = false;
    return;
  }
  sufficientNodeInfo_ = true;
  cpuByZone_ = cpuByZone;
  cpuRatiosByZone_.clear();
  for (const auto& [zone, milli] : cpuByZone)
    cpuRatiosByZone_[zone] = static_cast<double>(milli) / static_cast<double>(total);
  haveRatios_ = true;
}

bool TopologyCache::hasPopulatedHints(const std::string& serviceKey) const {
  std::lock_guard l(mu_);
  return hintsPopulatedByService_.count(serviceKey) > 0;
}

std::vector<std::string> TopologyCache::getOverloadedServices() const {
  std::lock_guard l(mu_);
  std::vector<std::string> keys;
  for (const auto& [key, byType] : endpointsByService_)
    for (const auto& [type, ezi] : byType)
      if (serviceOverloaded(ezi, cpuRatiosByZone_)) {
        keys.push_back(key);
        break;
      }
  return keys;
}

}  // namespace kcm::controllers::endpointslice
