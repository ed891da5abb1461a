#pragma once
// The attach/detach controller's two worlds (upstream pkg/controller/volume/attachdetach/cache): what should be
// attached where (from scheduled pods on managed nodes) and what is (from the controller's own attaches, the
// nodes' status.volumesAttached and VolumeAttachments at start). Thread-safe; copies out, never references.
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"

namespace kcm::controllers::volume::attachdetach {

// A CSI volume as the controller attaches it: the PV (name, access modes) and its CSI source.
struct VolumeSpec {
  std::string pvName, driver, volumeHandle;
  std::vector<std::string> accessModes;
};
// "kubernetes.io/csi/<driver>^<volumeHandle>" (GetUniqueVolumeNameFromSpec of the CSI plugin).
std::string uniqueVolumeName(const std::string& driver, const std::string& volumeHandle);
// The driver and handle back from a unique name; false when it is not a CSI volume's.
bool splitUniqueVolumeName(const std::string& unique, std::string& driver, std::string& volumeHandle);

struct PodRef {
  std::string ns, name, uid;
};

struct VolumeToAttach {
  std::string volumeName, nodeName;
  VolumeSpec spec;
  std::vector<PodRef> scheduledPods;
  bool multiAttachErrorReported = false;
};

class DesiredStateOfWorld {
 public:
  void AddNode(const std::string& node);
  bool NodeExists(const std::string& node) const;
  // Refused while the node still has volumes to attach, as upstream.
  Status DeleteNode(const std::string& node);
  Status AddPod(const PodRef& pod, const VolumeSpec& spec, const std::string& node);
  void DeletePod(const std::string& podUID, const std::string& volumeName, const std::string& node);
  bool VolumeExists(const std::string& volumeName, const std::string& node) const;
  std::vector<VolumeToAttach> GetVolumesToAttach() const;
  void SetMultiAttachError(const std::string& volumeName, const std::string& node);
  // Pods of the volume scheduled to the given nodes.
  std::vector<PodRef> GetVolumePodsOnNodes(const std::vector<std::string>& nodes, const std::string& volumeName) const;
  struct PodToAdd {
    PodRef pod;
    std::string volumeName, nodeName;
  };
  std::vector<PodToAdd> GetPodToAdd() const;

 private:
  struct Volume {
    VolumeSpec spec;
    std::map<std::string, PodRef> pods;  // by UID
    bool multiAttachErrorReported = false;
  };
  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, Volume>> nodes_;  // node -> volume name -> volume
};

struct AttachedVolume {
  std::string volumeName, nodeName;
  VolumeSpec spec;
  bool attachedConfirmed = false;  // false: uncertain (an attach was started or failed)
  bool mountedByNode = true;       // assumed until the node's volumesInUse says otherwise
};

class ActualStateOfWorld {
 public:
  explicit ActualStateOfWorld(Clock& clock) : clock_(clock) {}
  void MarkVolumeAsAttached(const std::string& volumeName, const VolumeSpec& spec, const std::string& node);
  void MarkVolumeAsUncertain(const std::string& volumeName, const VolumeSpec& spec, const std::string& node);
  void MarkVolumeAsDetached(const std::string& volumeName, const std::string& node);
  bool IsVolumeAttachedToNode(const std::string& volumeName, const std::string& node) const;
  bool VolumeNodeExists(const std::string& volumeName, const std::string& node) const;
  std::vector<AttachedVolume> GetAttachedVolumes() const;
  std::vector<AttachedVolume> GetAttachedVolumesForNode(const std::string& node) const;
  std::vector<std::string> GetNodesForAttachedVolume(const std::string& volumeName) const;
  // Time since the first detach request (set now when there was none).
  Clock::Duration SetDetachRequestTime(const std::string& volumeName, const std::string& node);
  void ResetDetachRequestTime(const std::string& volumeName, const std::string& node);
  void SetVolumesMountedByNode(const std::string& node, const std::set<std::string>& inUse);
  void RemoveVolumeFromReportAsAttached(const std::string& volumeName, const std::string& node);
  void AddVolumeToReportAsAttached(const std::string& volumeName, const std::string& node);
  void SetNodeStatusUpdateNeeded(const std::string& node);
  // Nodes whose status needs writing, with the volumes to report (sorted); clears their flag.
  std::map<std::string, std::vector<std::string>> GetVolumesToReportAttached();
  std::optional<std::vector<std::string>> GetVolumesToReportAttachedForNode(const std::string& node);

 private:
  struct NodeAttach {
    bool attachedConfirmed = false;
    bool mountedByNode = true;
    std::optional<Clock::TimePoint> detachRequestedTime;
  };
  struct Volume {
    VolumeSpec spec;
    std::map<std::string, NodeAttach> nodes;
  };
  struct NodeReport {
    bool statusUpdateNeeded = false;
    std::set<std::string> volumes;
  };
  void addLocked(const std::string& volumeName, const VolumeSpec& spec, const std::string& node, bool confirmed);
  Clock& clock_;
  mutable std::mutex mu_;
  std::map<std::string, Volume> volumes_;
  std::map<std::string, NodeReport> nodesToUpdate_;
};

}  // namespace kcm::controllers::volume::attachdetach
