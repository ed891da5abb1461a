#include "controllers/devicetainteviction/eviction_state.h"

#include <algorithm>
#include <limits>
#include <set>

#include "controllers/resourceclaim/resourceclaim_util.h"

namespace kcm::controllers::devicetainteviction {

DeviceTaint TrackedTaint::deviceTaint() const {
  if (rule) return rule->spec.taint;
  if (slice)
    for (const auto& d : slice->spec.devices)
      if (d.name == deviceName && taintIndex < static_cast<int>(d.taints.size())) return d.taints[taintIndex];
  return {};
}

int TrackedTaint::compare(const TrackedTaint& b) const {
  if (rule && !b.rule) return -1;
  if (!rule && b.rule) return 1;
  if (rule) return rule->metadata.name.compare(b.rule->metadata.name);
  if (slice && b.slice) {
    if (int c = slice->spec.driver.compare(b.slice->spec.driver)) return c;
    if (int c = slice->spec.pool.name.compare(b.slice->spec.pool.name)) return c;
    if (int c = deviceName.compare(b.deviceName)) return c;
    return taintIndex - b.taintIndex;
  }
  return 0;
}

std::string TrackedTaint::toString() const {
  if (rule) return "DeviceTaintRule " + rule->metadata.name;
  if (!slice) return "";
  return "ResourceSlice " + slice->metadata.name + " " + slice->spec.driver + "/" + slice->spec.pool.name + "/" +
         deviceName + " taint #" + std::to_string(taintIndex);
}

std::string Eviction::toString() const {
  std::string parts;
  for (const auto& r : reason) parts += (parts.empty() ? "" : ", ") + r.toString();
  return (when ? api::Time::fromUnix(*when).rfc3339() : std::string("<nil>")) + " (" + parts + ")";
}

void Pool::addSlice(const SlicePtr& s) {
  if (!s) return;
  slices[s->metadata.name] = s;
  maxGeneration = std::max(maxGeneration, s->spec.pool.generation);
}

void Pool::removeSlice(const SlicePtr& s) {
  if (!s) return;
  slices.erase(s->metadata.name);
  if (s->spec.pool.generation == maxGeneration) {
    maxGeneration = INT64_MIN;
    for (const auto& [n, sl] : slices) maxGeneration = std::max(maxGeneration, sl->spec.pool.generation);
  }
}

std::vector<std::pair<std::string, DeviceTaint>> Pool::taintedDevices() const {
  std::vector<std::pair<std::string, DeviceTaint>> out;
  for (const auto& [n, s] : slices) {
    if (s->spec.pool.generation != maxGeneration) continue;
    for (const auto& d : s->spec.devices)
      for (const auto& t : d.taints)
        if (t.effect == kEffectNoExecute) out.emplace_back(d.name, t);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

std::pair<SlicePtr, const api::resource::v1::Device*> Pool::device(const std::string& name) const {
  for (const auto& [n, s] : slices) {
    if (s->spec.pool.generation != maxGeneration) continue;
    for (const auto& d : s->spec.devices)
      if (d.name == name) return {s, &d};
  }
  return {nullptr, nullptr};
}

bool ruleMatchesDevice(const DeviceTaintRule& rule, const std::string& driver, const std::string& pool,
                       const std::string& device) {
  const auto& sel = rule.spec.deviceSelector;
  if (!sel) return false;
  return !(sel->driver && *sel->driver != driver) && !(sel->pool && *sel->pool != pool) &&
         !(sel->device && *sel->device != device);
}

bool toleratesTaint(const api::resource::v1::DeviceToleration& t, const DeviceTaint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (!t.key.empty() && t.key != taint.key) return false;
  if (t.operator_.empty() || t.operator_ == "Equal") return t.value == taint.value;
  return t.operator_ == "Exists";
}

std::optional<Eviction> EvictionState::claimEvictionTime(const ResourceClaim& claim) const {
  if (!claim.status.allocation) return std::nullopt;
  bool haveWhen = false;
  std::optional<int64_t> when;
  std::vector<TrackedTaint> taints;
  auto insert = [&](const TrackedTaint& t) {
    if (std::find(taints.begin(), taints.end(), t) == taints.end()) taints.push_back(t);
  };
  for (const auto& allocated : claim.status.allocation->devices.results) {
    std::vector<TrackedTaint> candidates;
    auto pool = pools.find({allocated.driver, allocated.pool});
    if (pool != pools.end()) {
      auto [slice, device] = pool->second.device(allocated.device);
      if (device)
        for (size_t i = 0; i < device->taints.size(); ++i)
          if (device->taints[i].effect == kEffectNoExecute)
            candidates.push_back({nullptr, slice, device->name, static_cast<int>(i)});
    }
    for (const auto& [name, rule] : evictingRules)
      if (ruleMatchesDevice(*rule, allocated.driver, allocated.pool, allocated.device))
        candidates.push_back({rule, nullptr, "", 0});
    for (const auto& taint : candidates) {
      const DeviceTaint dt = taint.deviceTaint();
      std::optional<int64_t> evictAt;
      if (dt.timeAdded && !dt.timeAdded->isZero()) evictAt = dt.timeAdded->unixSeconds;
      bool tolerated = false, haveToleration = false;
      int64_t seconds = std::numeric_limits<int64_t>::max();
      for (const auto& t : allocated.tolerations) {
        if (t.effect != kEffectNoExecute || !toleratesTaint(t, dt)) continue;
        if (!t.tolerationSeconds) {
          tolerated = true;
          break;
        }
        seconds = std::min(seconds, std::max<int64_t>(*t.tolerationSeconds, 0));
        haveToleration = true;
      }
      if (tolerated) continue;
      if (haveToleration && evictAt) evictAt = *evictAt + seconds;
      insert(taint);
      if (!haveWhen) {
        haveWhen = true;
        when = evictAt;
        continue;
      }
      if (evictAt && when && *evictAt < *when) when = evictAt;
    }
  }
  if (!haveWhen || !when) return std::nullopt;
  Eviction e{when, std::move(taints)};
  std::sort(e.reason.begin(), e.reason.end(), [](const auto& a, const auto& b) { return a.compare(b) < 0; });
  return e;
}

std::optional<Eviction> EvictionState::podEvictionTime(const Pod& pod) const {
  if (pod.spec.nodeName.empty()) return std::nullopt;
  std::optional<Eviction> eviction;
  for (const auto& [claimName, mustCheckOwner] : resourceclaim::PodClaimsWithOwnerCheck(pod)) {
    auto it = allocatedClaims.find(pod.metadata.namespace_ + "/" + claimName);
    if (it == allocatedClaims.end()) continue;
    const ResourceClaim& claim = *it->second.claim;
    if (mustCheckOwner && !resourceclaim::IsForPod(pod, claim).ok()) continue;
    if (!resourceclaim::IsReservedForPod(pod, claim)) continue;
    if (!it->second.eviction) continue;
    if (!eviction) {
      eviction = it->second.eviction;
      continue;
    }
    Eviction merged = *it->second.eviction;
    for (const auto& r : eviction->reason) {
      auto pos = std::lower_bound(merged.reason.begin(), merged.reason.end(), r,
                                  [](const auto& a, const auto& b) { return a.compare(b) < 0; });
      if (pos == merged.reason.end() || pos->compare(r) != 0) merged.reason.insert(pos, r);
    }
    if (eviction->when && merged.when && *eviction->when < *merged.when) merged.when = eviction->when;
    if (!(*eviction == merged)) eviction = std::move(merged);
  }
  return eviction;
}

std::pair<int64_t, int64_t> EvictionState::countPendingPods(const DeviceTaintRule& rule,
                                                            const std::vector<std::shared_ptr<const Pod>>& pods) const {
  int64_t n = 0;
  std::set<std::string> namespaces;
  for (const auto& pod : pods) {
    if (pod->metadata.deletionTimestamp) continue;
    auto e = podEvictionTime(*pod);
    if (!e) continue;
    for (const auto& r : e->reason)
      if (r.rule && r.rule->metadata.uid == rule.metadata.uid) {
        ++n;
        namespaces.insert(pod->metadata.namespace_);
      }
  }
  return {n, static_cast<int64_t>(namespaces.size())};
}

std::pair<int64_t, int64_t> EvictionState::countTaintedDevices(const DeviceTaintRule& rule) const {
  int64_t published = 0, allocatedDevices = 0;
  for (const auto& [id, pool] : pools)
    for (const auto& [n, s] : pool.slices) {
      if (s->spec.pool.generation != pool.maxGeneration) continue;
      for (const auto& d : s->spec.devices)
        if (ruleMatchesDevice(rule, id.first, id.second, d.name)) ++published;
    }
  for (const auto& [key, c] : allocatedClaims)
    for (const auto& r : c.claim->status.allocation->devices.results)
      if (ruleMatchesDevice(rule, r.driver, r.pool, r.device)) ++allocatedDevices;
  return {published, allocatedDevices};
}

}  // namespace kcm::controllers::devicetainteviction
