#include "controllers/volume/persistentvolume/volume_plugins.h"

#include <array>
#include <filesystem>
#include <regex>
#include <utility>

#include "base/uuid.h"

namespace kcm::controllers::volume::persistentvolume {
namespace {

constexpr std::array<std::pair<const char*, const char*>, 7> kMigrated = {{
    {"kubernetes.io/aws-ebs", "ebs.csi.aws.com"},
    {"kubernetes.io/gce-pd", "pd.csi.storage.gke.io"},
    {"kubernetes.io/azure-file", "file.csi.azure.com"},
    {"kubernetes.io/azure-disk", "disk.csi.azure.com"},
    {"kubernetes.io/cinder", "cinder.csi.openstack.org"},
    {"kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com"},
    {"kubernetes.io/portworx-volume", "pxd.portworx.com"},
}};

Status err(const std::string& m) { return Status(StatusCode::kNotFound, m); }

Result<Plugin> findPluginByName(const std::string& name) {
  if (name == kHostPathPluginName) return Plugin::kHostPath;
  if (name == kNFSPluginName) return Plugin::kNFS;
  return err("no volume plugin matched name: " + name);
}

Result<Plugin> findPluginBySpec(const api::core::v1::PersistentVolume& pv) {
  if (pv.spec.hostPath) return Plugin::kHostPath;
  if (pv.spec.nfs) return Plugin::kNFS;
  return err("no volume plugin matched");
}

}  // namespace

const char* pluginName(Plugin p) { return p == Plugin::kHostPath ? kHostPathPluginName : kNFSPluginName; }

bool IsMigrationEnabledForPlugin(const std::string& pluginName) {
  for (const auto& [inTree, driver] : kMigrated)
    if (pluginName == inTree) return true;
  return false;
}

Result<std::string> GetCSINameFromInTreeName(const std::string& pluginName) {
  for (const auto& [inTree, driver] : kMigrated)
    if (pluginName == inTree) return std::string(driver);
  return err("could not find CSI Driver name for plugin " + pluginName);
}

Result<Plugin> FindProvisionablePluginByName(const std::string& name) {
  auto p = findPluginByName(name);
  if (!p.ok()) return p;
  if (*p != Plugin::kHostPath) return err("no provisionable volume plugin matched");
  return p;
}

Result<Plugin> FindDeletablePluginByName(const std::string& name) {
  auto p = findPluginByName(name);
  if (!p.ok()) return p;
  if (*p != Plugin::kHostPath) return err("no deletable volume plugin matched");
  return p;
}

Result<Plugin> FindDeletablePluginBySpec(const api::core::v1::PersistentVolume& pv) {
  auto p = findPluginBySpec(pv);
  if (!p.ok()) return p;
  if (*p != Plugin::kHostPath) return err("no deletable volume plugin matched");
  return p;
}

Result<Plugin> FindRecyclablePluginBySpec(const api::core::v1::PersistentVolume& pv) { return findPluginBySpec(pv); }

Result<api::core::v1::PersistentVolume> provisionHostPath(bool enabled, const VolumeOptions& options) {
  if (!enabled)
    return Status(StatusCode::kInvalid,
                  std::string("provisioning in volume plugin \"") + kHostPathPluginName + "\" is disabled");
  const auto& pvc = *options.pvc;
  if (pvc.spec.volumeMode.value_or("") == "Block")
    return Status(StatusCode::kInvalid, std::string(kHostPathPluginName) + " does not support block volume provisioning");
  api::core::v1::PersistentVolume pv;
  pv.metadata.name = options.pvName;
  pv.metadata.annotations["kubernetes.io/createdby"] = "hostpath-dynamic-provisioner";
  pv.spec.persistentVolumeReclaimPolicy = options.reclaimPolicy;
  pv.spec.accessModes = pvc.spec.accessModes.empty() ? std::vector<api::String>{"ReadWriteOnce"} : pvc.spec.accessModes;
  if (auto it = pvc.spec.resources.requests.find("storage"); it != pvc.spec.resources.requests.end())
    pv.spec.capacity["storage"] = it->second;
  pv.spec.hostPath.emplace();
  pv.spec.hostPath->path = "/tmp/hostpath_pv/" + newUUID();
  std::error_code ec;
  std::filesystem::create_directories(pv.spec.hostPath->path.str(), ec);
  if (ec) return Status(StatusCode::kInternal, "mkdir " + pv.spec.hostPath->path + ": " + ec.message());
  std::filesystem::permissions(pv.spec.hostPath->path.str(), std::filesystem::perms(0750), ec);
  return pv;
}

Status deleteHostPath(const api::core::v1::PersistentVolume& pv) {
  if (!pv.spec.hostPath) return Status(StatusCode::kInvalid, "spec.PersistentVolumeSource.HostPath is nil");
  const std::string& path = pv.spec.hostPath->path;
  static const std::regex kTmp("/tmp/.+");
  if (!std::regex_search(path, kTmp))
    return Status(StatusCode::kInvalid, "host_path deleter only supports /tmp/.+ but received provided " + path);
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return Status(StatusCode::kInternal, "unlinkat " + path + ": " + ec.message());
  return Status::Ok();
}

}  // namespace kcm::controllers::volume::persistentvolume
