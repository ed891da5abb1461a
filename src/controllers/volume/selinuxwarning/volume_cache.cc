#include "controllers/volume/selinuxwarning/volume_cache.h"

namespace kcm::controllers::volume::selinuxwarning {

std::string SELinuxOptionsToFileLabel(const api::core::v1::SELinuxOptions* opts) {
  if (!opts) return "";
  std::string label = opts->user + ":" + opts->role + ":" + opts->type + ":" + opts->level;
  return label == ":::" ? "" : label;
}

std::array<std::string, 4> ParseSELinuxLabel(const std::string& label) {
  std::array<std::string, 4> parts;
  if (label.empty()) return parts;
  size_t start = 0;
  for (size_t i = 0; i < 4; ++i) {
    size_t colon = i == 3 ? std::string::npos : label.find(':', start);  // the level keeps its own colons
    parts[i] = label.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return parts;
}

bool ConflictsParsed(const std::array<std::string, 4>& a, const std::array<std::string, 4>& b) {
  for (size_t i = 0; i < 4; ++i) {
    if (a[i] == b[i]) continue;
    if (i == 3) return true;  // levels must match exactly
    if (a[i].empty() || b[i].empty()) continue;
    return true;
  }
  return false;
}

bool Conflicts(const std::string& labelA, const std::string& labelB) {
  return ConflictsParsed(ParseSELinuxLabel(labelA), ParseSELinuxLabel(labelB));
}

std::string Conflict::EventMessage() const {
  const std::string value = "\"" + PropertyValue + "\"", other = "\"" + OtherPropertyValue + "\"";
  if (Pod.ns == OtherPod.ns)
    return PropertyName + " " + value + " conflicts with pod " + OtherPod.name +
           " that uses the same volume as this pod with " + PropertyName + " " + other +
           ". If both pods land on the same node, only one of them may access the volume.";
  // upstream prints no space between the property and its value here
  return PropertyName + value + " conflicts with another pod that uses the same volume as this pod with a different " +
         PropertyName + ". If both pods land on the same node, only one of them may access the volume.";
}

std::vector<Conflict> VolumeCache::withoutPod(const std::vector<Conflict>& conflicts, const ObjectName& pod) {
  std::vector<Conflict> kept;
  for (const auto& c : conflicts)
    if (c.Pod != pod && c.OtherPod != pod) kept.push_back(c);
  return kept;
}

std::vector<Conflict> VolumeCache::AddVolume(const std::string& volumeName, const ObjectName& pod,
                                             const std::string& label, const std::string& changePolicy,
                                             const std::string& csiDriver) {
  std::lock_guard l(mu_);
  std::vector<Conflict> conflicts;
  const PodInfo info{label, ParseSELinuxLabel(label), changePolicy};
  auto [it, created] = volumes_.try_emplace(volumeName);
  UsedVolume& volume = it->second;
  if (created) {
    volume.csiDriver = csiDriver;
    volume.pods.emplace(pod, info);
    podToVolumes_[pod].insert(volumeName);
    return conflicts;
  }
  if (auto old = volume.pods.find(pod); old != volume.pods.end() && old->second == info) return conflicts;
  volume.pods[pod] = info;
  podToVolumes_[pod].insert(volumeName);

  for (const auto& [other, otherInfo] : volume.pods) {
    if (otherInfo.changePolicy != changePolicy) {
      conflicts.push_back({"SELinuxChangePolicy", "SELinuxChangePolicyConflict", pod, changePolicy, other,
                           otherInfo.changePolicy});
      conflicts.push_back({"SELinuxChangePolicy", "SELinuxChangePolicyConflict", other, otherInfo.changePolicy, pod,
                           changePolicy});
    }
    if (ConflictsParsed(otherInfo.parts, info.parts)) {
      conflicts.push_back({"SELinuxLabel", "SELinuxLabelConflict", pod, label, other, otherInfo.label});
      conflicts.push_back({"SELinuxLabel", "SELinuxLabelConflict", other, otherInfo.label, pod, label});
    }
  }
  // The pod's earlier conflicts on this volume are replaced by the ones found now.
  auto updated = withoutPod(conflicts_[volumeName], pod);
  updated.insert(updated.end(), conflicts.begin(), conflicts.end());
  if (updated.empty()) conflicts_.erase(volumeName);
  else conflicts_[volumeName] = std::move(updated);
  return conflicts;
}

void VolumeCache::DeletePod(const ObjectName& pod) {
  std::lock_guard l(mu_);
  auto vols = podToVolumes_.find(pod);
  if (vols == podToVolumes_.end()) return;
  for (const auto& volumeName : vols->second) {
    if (auto c = conflicts_.find(volumeName); c != conflicts_.end()) {
      auto updated = withoutPod(c->second, pod);
      if (updated.empty()) conflicts_.erase(c);
      else c->second = std::move(updated);
    }
    if (auto v = volumes_.find(volumeName); v != volumes_.end()) {
      v->second.pods.erase(pod);
      if (v->second.pods.empty()) volumes_.erase(v);
    }
  }
  podToVolumes_.erase(vols);
}

std::vector<ObjectName> VolumeCache::GetPodsForCSIDriver(const std::string& driver) const {
  std::lock_guard l(mu_);
  std::vector<ObjectName> pods;
  for (const auto& [name, volume] : volumes_) {
    if (volume.csiDriver != driver) continue;
    for (const auto& [pod, info] : volume.pods) pods.push_back(pod);
  }
  return pods;
}

std::vector<Conflict> VolumeCache::GetConflicts() const {
  std::lock_guard l(mu_);
  std::set<Conflict> all;
  for (const auto& [name, list] : conflicts_) all.insert(list.begin(), list.end());
  return {all.begin(), all.end()};
}

std::vector<VolumeCache::Entry> VolumeCache::entries() const {
  std::lock_guard l(mu_);
  std::vector<Entry> out;
  for (const auto& [name, volume] : volumes_)
    for (const auto& [pod, info] : volume.pods) out.push_back({name, pod, info.label, info.changePolicy, volume.csiDriver});
  return out;
}

}  // namespace kcm::controllers::volume::selinuxwarning
