#include "controllers/volume/attachdetach/cache.h"

#include <algorithm>

namespace kcm::controllers::volume::attachdetach {
namespace {
constexpr const char* kCSIPrefix = "kubernetes.io/csi/";
}

std::string uniqueVolumeName(const std::string& driver, const std::string& volumeHandle) {
  return std::string(kCSIPrefix) + driver + "^" + volumeHandle;
}

bool splitUniqueVolumeName(const std::string& unique, std::string& driver, std::string& volumeHandle) {
  const std::string prefix = kCSIPrefix;
  if (unique.rfind(prefix, 0) != 0) return false;
  const std::string rest = unique.substr(prefix.size());
  const size_t sep = rest.find('^');
  if (sep == std::string::npos) return false;
  driver = rest.substr(0, sep);
  volumeHandle = rest.substr(sep + 1);
  return true;
}

void DesiredStateOfWorld::AddNode(const std::string& node) {
  std::lock_guard l(mu_);
  nodes_.try_emplace(node);
}

bool DesiredStateOfWorld::NodeExists(const std::string& node) const {
  std::lock_guard l(mu_);
  return nodes_.count(node) != 0;
}

Status DesiredStateOfWorld::DeleteNode(const std::string& node) {
  std::lock_guard l(mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return Status::Ok();
  if (!it->second.empty())
    return Status(StatusCode::kInvalid, "failed to delete node \"" + node +
                                            "\" from list of nodes managed by attach/detach controller--the node "
                                            "still contains " + std::to_string(it->second.size()) +
                                            " volumes in its list of volumes to attach");
  nodes_.erase(it);
  return Status::Ok();
}

Status DesiredStateOfWorld::AddPod(const PodRef& pod, const VolumeSpec& spec, const std::string& node) {
  std::lock_guard l(mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end())
    return Status(StatusCode::kNotFound, "no node with the name \"" + node + "\" exists in the list of managed nodes");
  auto& v = it->second[uniqueVolumeName(spec.driver, spec.volumeHandle)];
  v.spec = spec;
  v.pods[pod.uid] = pod;
  return Status::Ok();
}

void DesiredStateOfWorld::DeletePod(const std::string& podUID, const std::string& volumeName, const std::string& node) {
  std::lock_guard l(mu_);
  auto n = nodes_.find(node);
  if (n == nodes_.end()) return;
  auto v = n->second.find(volumeName);
  if (v == n->second.end()) return;
  v->second.pods.erase(podUID);
  if (v->second.pods.empty()) n->second.erase(v);
}

bool DesiredStateOfWorld::VolumeExists(const std::string& volumeName, const std::string& node) const {
  std::lock_guard l(mu_);
  auto n = nodes_.find(node);
  return n != nodes_.end() && n->second.count(volumeName) != 0;
}

std::vector<VolumeToAttach> DesiredStateOfWorld::GetVolumesToAttach() const {
  std::lock_guard l(mu_);
  std::vector<VolumeToAttach> out;
  for (const auto& [node, vols] : nodes_)
    for (const auto& [name, v] : vols) {
      VolumeToAttach t{name, node, v.spec, {}, v.multiAttachErrorReported};
      for (const auto& [uid, p] : v.pods) t.scheduledPods.push_back(p);
      out.push_back(std::move(t));
    }
  return out;
}

void DesiredStateOfWorld::SetMultiAttachError(const std::string& volumeName, const std::string& node) {
  std::lock_guard l(mu_);
  auto n = nodes_.find(node);
  if (n == nodes_.end()) return;
  if (auto v = n->second.find(volumeName); v != n->second.end()) v->second.multiAttachErrorReported = true;
}

std::vector<PodRef> DesiredStateOfWorld::GetVolumePodsOnNodes(const std::vector<std::string>& nodes,
                                                             const std::string& volumeName) const {
  std::lock_guard l(mu_);
  std::vector<PodRef> out;
  for (const auto& node : nodes) {
    auto n = nodes_.find(node);
    if (n == nodes_.end()) continue;
    if (auto v = n->second.find(volumeName); v != n->second.end())
      for (const auto& [uid, p] : v->second.pods) out.push_back(p);
  }
  return out;
}

std::vector<DesiredStateOfWorld::PodToAdd> DesiredStateOfWorld::GetPodToAdd() const {
  std::lock_guard l(mu_);
  std::vector<PodToAdd> out;
  for (const auto& [node, vols] : nodes_)
    for (const auto& [name, v] : vols)
      for (const auto& [uid, p] : v.pods) out.push_back({p, name, node});
  return out;
}

void ActualStateOfWorld::addLocked(const std::string& volumeName, const VolumeSpec& spec, const std::string& node,
                                   bool confirmed) {
  auto& v = volumes_[volumeName];
  if (!spec.driver.empty()) v.spec = spec;
  auto [it, added] = v.nodes.try_emplace(node);
  if (confirmed) it->second.attachedConfirmed = true;
  if (confirmed) {
    auto& r = nodesToUpdate_[node];
    r.volumes.insert(volumeName);
    r.statusUpdateNeeded = true;
  }
}

void ActualStateOfWorld::MarkVolumeAsAttached(const std::string& volumeName, const VolumeSpec& spec,
                                              const std::string& node) {
  std::lock_guard l(mu_);
  addLocked(volumeName, spec, node, true);
}

void ActualStateOfWorld::MarkVolumeAsUncertain(const std::string& volumeName, const VolumeSpec& spec,
                                               const std::string& node) {
  std::lock_guard l(mu_);
  addLocked(volumeName, spec, node, false);
}

void ActualStateOfWorld::MarkVolumeAsDetached(const std::string& volumeName, const std::string& node) {
  std::lock_guard l(mu_);
  if (auto v = volumes_.find(volumeName); v != volumes_.end()) {
    v->second.nodes.erase(node);
    if (v->second.nodes.empty()) volumes_.erase(v);
  }
  if (auto r = nodesToUpdate_.find(node); r != nodesToUpdate_.end() && r->second.volumes.erase(volumeName))
    r->second.statusUpdateNeeded = true;
}

bool ActualStateOfWorld::IsVolumeAttachedToNode(const std::string& volumeName, const std::string& node) const {
  std::lock_guard l(mu_);
  auto v = volumes_.find(volumeName);
  if (v == volumes_.end()) return false;
  auto n = v->second.nodes.find(node);
  return n != v->second.nodes.end() && n->second.attachedConfirmed;
}

bool ActualStateOfWorld::VolumeNodeExists(const std::string& volumeName, const std::string& node) const {
  std::lock_guard l(mu_);
  auto v = volumes_.find(volumeName);
  return v != volumes_.end() && v->second.nodes.count(node) != 0;
}

std::vector<AttachedVolume> ActualStateOfWorld::GetAttachedVolumes() const {
  std::lock_guard l(mu_);
  std::vector<AttachedVolume> out;
  for (const auto& [name, v] : volumes_)
    for (const auto& [node, a] : v.nodes) out.push_back({name, node, v.spec, a.attachedConfirmed, a.mountedByNode});
  return out;
}

std::vector<AttachedVolume> ActualStateOfWorld::GetAttachedVolumesForNode(const std::string& node) const {
  std::vector<AttachedVolume> out;
  for (auto& a : GetAttachedVolumes())
    if (a.nodeName == node) out.push_back(std::move(a));
  return out;
}

std::vector<std::string> ActualStateOfWorld::GetNodesForAttachedVolume(const std::string& volumeName) const {
  std::lock_guard l(mu_);
  std::vector<std::string> out;
  if (auto v = volumes_.find(volumeName); v != volumes_.end())
    for (const auto& [node, a] : v->second.nodes)
      if (a.attachedConfirmed) out.push_back(node);
  return out;
}

Clock::Duration ActualStateOfWorld::SetDetachRequestTime(const std::string& volumeName, const std::string& node) {
  std::lock_guard l(mu_);
  auto v = volumes_.find(volumeName);
  if (v == volumes_.end()) return {};
  auto n = v->second.nodes.find(node);
  if (n == v->second.nodes.end()) return {};
  if (!n->second.detachRequestedTime) n->second.detachRequestedTime = clock_.now();
  return clock_.now() - *n->second.detachRequestedTime;
}

void ActualStateOfWorld::ResetDetachRequestTime(const std::string& volumeName, const std::string& node) {
  std::lock_guard l(mu_);
  if (auto v = volumes_.find(volumeName); v != volumes_.end())
    if (auto n = v->second.nodes.find(node); n != v->second.nodes.end()) n->second.detachRequestedTime.reset();
}

void ActualStateOfWorld::SetVolumesMountedByNode(const std::string& node, const std::set<std::string>& inUse) {
  std::lock_guard l(mu_);
  for (auto& [name, v] : volumes_)
    if (auto n = v.nodes.find(node); n != v.nodes.end()) n->second.mountedByNode = inUse.count(name) != 0;
}

void ActualStateOfWorld::RemoveVolumeFromReportAsAttached(const std::string& volumeName, const std::string& node) {
  std::lock_guard l(mu_);
  auto& r = nodesToUpdate_[node];
  if (r.volumes.erase(volumeName)) r.statusUpdateNeeded = true;
}

void ActualStateOfWorld::AddVolumeToReportAsAttached(const std::string& volumeName, const std::string& node) {
  std::lock_guard l(mu_);
  auto& r = nodesToUpdate_[node];
  if (r.volumes.insert(volumeName).second) r.statusUpdateNeeded = true;
}

void ActualStateOfWorld::SetNodeStatusUpdateNeeded(const std::string& node) {
  std::lock_guard l(mu_);
  nodesToUpdate_[node].statusUpdateNeeded = true;
}

std::map<std::string, std::vector<std::string>> ActualStateOfWorld::GetVolumesToReportAttached() {
  std::lock_guard l(mu_);
  std::map<std::string, std::vector<std::string>> out;
  for (auto& [node, r] : nodesToUpdate_) {
    if (!r.statusUpdateNeeded) continue;
    out[node] = {r.volumes.begin(), r.volumes.end()};
    r.statusUpdateNeeded = false;
  }
  return out;
}

std::optional<std::vector<std::string>> ActualStateOfWorld::GetVolumesToReportAttachedForNode(const std::string& node) {
  std::lock_guard l(mu_);
  auto r = nodesToUpdate_.find(node);
  if (r == nodesToUpdate_.end() || !r->second.statusUpdateNeeded) return std::nullopt;
  r->second.statusUpdateNeeded = false;
  return std::vector<std::string>(r->second.volumes.begin(), r->second.volumes.end());
}

}  // namespace kcm::controllers::volume::attachdetach
