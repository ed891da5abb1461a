#pragma once
// The volume plugins kube-controller-manager gives the persistentvolume-binder-controller at the pin
// (cmd/kube-controller-manager/app/plugins.go, ProbeProvisionableRecyclableVolumePlugins): of hostpath, nfs, fc,
// iscsi and csi only the ones that provision, delete or recycle are kept, i.e. kubernetes.io/host-path
// (provision with --enable-hostpath-provisioner, delete under /tmp, recycle) and kubernetes.io/nfs (recycle).
// CSI volumes and every other provisioner name are external. Also the CSI migration table (csi-translation-lib):
// the in-tree provisioners whose volumes their CSI drivers now own.
#include <optional>
#include <string>

#include "api/gen/core_v1.h"
#include "api/gen/storage_v1.h"
#include "base/status.h"

namespace kcm::controllers::volume::persistentvolume {

inline constexpr const char* kHostPathPluginName = "kubernetes.io/host-path";
inline constexpr const char* kNFSPluginName = "kubernetes.io/nfs";

enum class Plugin { kHostPath, kNFS };
const char* pluginName(Plugin p);

// csimigration.PluginManager.IsMigrationEnabledForPlugin: always on at the pin for the seven migrated plugins.
bool IsMigrationEnabledForPlugin(const std::string& pluginName);
// GetCSINameFromInTreeName: the CSI driver that took over an in-tree plugin.
Result<std::string> GetCSINameFromInTreeName(const std::string& pluginName);

// VolumePluginMgr lookups over the binder's plugin list; errors as upstream's.
Result<Plugin> FindProvisionablePluginByName(const std::string& name);
Result<Plugin> FindDeletablePluginByName(const std::string& name);
Result<Plugin> FindDeletablePluginBySpec(const api::core::v1::PersistentVolume& pv);
Result<Plugin> FindRecyclablePluginBySpec(const api::core::v1::PersistentVolume& pv);

struct VolumeOptions {
  std::string reclaimPolicy, pvName;
  std::vector<std::string> mountOptions;
  const api::core::v1::PersistentVolumeClaim* pvc = nullptr;
};
// hostPathProvisioner: refused unless enabled; a /tmp/hostpath_pv/<uuid> directory and the PV describing it.
Result<api::core::v1::PersistentVolume> provisionHostPath(bool enabled, const VolumeOptions& options);
// hostPathDeleter: removes the PV's directory when it is under /tmp.
Status deleteHostPath(const api::core::v1::PersistentVolume& pv);

}  // namespace kcm::controllers::volume::persistentvolume
