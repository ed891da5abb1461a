#pragma once
// The selinux-warning-controller's cache (upstream pkg/controller/volume/selinuxwarning/cache and translator):
// which pods use each volume with which SELinux label and SELinuxChangePolicy, and the conflicts between them.
// Thread-safe: the worker adds and deletes, /metrics reads the conflicts.
#include <array>
#include <compare>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"

namespace kcm::controllers::volume::selinuxwarning {

// cache.ObjectName: a pod's namespace and name.
struct ObjectName {
  std::string ns, name;
  auto operator<=>(const ObjectName&) const = default;
  std::string String() const { return ns.empty() ? name : ns + "/" + name; }
};

// ControllerSELinuxTranslator: SELinux is assumed on; a label is "user:role:type:level".
std::string SELinuxOptionsToFileLabel(const api::core::v1::SELinuxOptions* opts);
std::array<std::string, 4> ParseSELinuxLabel(const std::string& label);
// Two labels conflict when a component differs and is set on both, or when the level differs at all (an empty
// user, role or type is the container runtime's default and matches anything).
bool ConflictsParsed(const std::array<std::string, 4>& a, const std::array<std::string, 4>& b);
bool Conflicts(const std::string& labelA, const std::string& labelB);

struct Conflict {
  std::string PropertyName;  // "SELinuxLabel" or "SELinuxChangePolicy"
  std::string EventReason;   // "SELinuxLabelConflict" or "SELinuxChangePolicyConflict"
  ObjectName Pod;            // the pod the event is about, and its value
  std::string PropertyValue;
  ObjectName OtherPod;
  std::string OtherPropertyValue;
  auto operator<=>(const Conflict&) const = default;
  // The event's message: names the other pod when it is in the same namespace.
  std::string EventMessage() const;
};

class VolumeCache {
 public:
  // Records that a pod uses a volume with a label and change policy; returns the new conflicts (two per pair,
  // one for each pod), none when the pod was already recorded so.
  std::vector<Conflict> AddVolume(const std::string& volumeName, const ObjectName& pod, const std::string& label,
                                  const std::string& changePolicy, const std::string& csiDriver);
  void DeletePod(const ObjectName& pod);
  std::vector<ObjectName> GetPodsForCSIDriver(const std::string& driver) const;
  // Every current conflict once.
  std::vector<Conflict> GetConflicts() const;
  // What is cached, by volume then pod (upstream dumps it at -v=10; tests read it).
  struct Entry {
    std::string volumeName;
    ObjectName pod;
    std::string label, changePolicy, csiDriver;
    bool operator==(const Entry&) const = default;
  };
  std::vector<Entry> entries() const;

 private:
  struct PodInfo {
    std::string label;
    std::array<std::string, 4> parts;
    std::string changePolicy;
    bool operator==(const PodInfo&) const = default;
  };
  struct UsedVolume {
    std::string csiDriver;
    std::map<ObjectName, PodInfo> pods;
  };
  static std::vector<Conflict> withoutPod(const std::vector<Conflict>& conflicts, const ObjectName& pod);

  mutable std::mutex mu_;
  std::map<std::string, UsedVolume> volumes_;
  std::map<ObjectName, std::set<std::string>> podToVolumes_;
  std::map<std::string, std::vector<Conflict>> conflicts_;
};

}  // namespace kcm::controllers::volume::selinuxwarning
