#include "controllers/volume/common/csi_translation.h"

#include <strings.h>

#include <optional>
#include <regex>
#include <set>

namespace kcm::controllers::volume::common {
namespace {

using api::core::v1::PersistentVolume;
using api::core::v1::Volume;

Status bad(const std::string& m) { return Status(StatusCode::kInvalidArgument, m); }

std::vector<std::string> split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t p; (p = s.find(sep, start)) != std::string::npos; start = p + sep.size()) out.push_back(s.substr(start, p - start));
  out.push_back(s.substr(start));
  return out;
}

// gceGetRegionFromZones: "{locale}-{region}-{zone}" zones of one region.
Result<std::string> gceGetRegionFromZones(const std::vector<std::string>& zones) {
  std::set<std::string> regions;
  for (const auto& z : zones) {
    auto parts = split(z, "-");
    if (parts.size() != 3) return bad("zone in unexpected format, expected: {locale}-{region}-{zone}, got: " + z);
    regions.insert(parts[0] + "-" + parts[1]);
  }
  if (regions.size() != 1) {
    std::string list;
    for (const auto& r : regions) list += (list.empty() ? "" : " ") + r;
    return bad("multiple or no regions gotten from zones, got: map[" + list + "]");  // approximates Go's %v of a set
  }
  return *regions.begin();
}

// getStorageAccountName, falling back to the secret name as the translator does.
std::string azureStorageAccount(const std::string& secretName) {
  static const std::regex re("azure-storage-account-(.+)-secret");
  std::smatch m;
  return std::regex_search(secretName, m, re) ? m[1].str() : secretName;
}

// The plugins whose PV and inline translations name the volume alike: the EBS volume ID, the Azure disk URI (of a
// managed disk), the Cinder volume ID, the vSphere path, the Portworx volume ID.
template <class Source>
std::optional<Result<MigratedCSIVolume>> translateAlike(const Source& s) {
  if (s.awsElasticBlockStore) {
    auto id = KubernetesVolumeIDToEBSVolumeID(s.awsElasticBlockStore->volumeID);
    if (!id.ok()) return bad("failed to translate Kubernetes ID to EBS Volume ID " + id.status().message());
    return MigratedCSIVolume{"ebs.csi.aws.com", *id};
  }
  if (s.azureDisk) {
    const auto& kind = s.azureDisk->kind;
    if (kind && strcasecmp(kind->c_str(), "Managed") != 0)
      return bad("kind(" + *kind + ") is not supported in csi migration");
    return MigratedCSIVolume{"disk.csi.azure.com", s.azureDisk->diskURI};
  }
  if (s.cinder) return MigratedCSIVolume{"cinder.csi.openstack.org", s.cinder->volumeID};
  if (s.vsphereVolume) return MigratedCSIVolume{"csi.vsphere.vmware.com", s.vsphereVolume->volumePath};
  if (s.portworxVolume) return MigratedCSIVolume{"pxd.portworx.com", s.portworxVolume->volumeID};
  return std::nullopt;
}

Result<MigratedCSIVolume> translatePV(const PersistentVolume& pv) {
  const auto& s = pv.spec;
  if (auto alike = translateAlike(s)) return *alike;
  if (s.gcePersistentDisk) {
    auto label = [&](const char* k) {
      auto it = pv.metadata.labels.find(k);
      return it == pv.metadata.labels.end() ? std::string() : it->second.str();
    };
    std::string zonesLabel = label("failure-domain.beta.kubernetes.io/zone");
    if (zonesLabel.empty()) zonesLabel = label("topology.kubernetes.io/zone");
    auto zones = split(zonesLabel, "__");
    const std::string& pd = s.gcePersistentDisk->pdName;
    if (zones.size() == 1 && !zones[0].empty())
      return MigratedCSIVolume{"pd.csi.storage.gke.io", "projects/UNSPECIFIED/zones/" + zones[0] + "/disks/" + pd};
    if (zones.size() > 1) {
      auto region = gceGetRegionFromZones(zones);
      if (!region.ok()) return bad("failed to get region from zones: " + region.status().message());
      return MigratedCSIVolume{"pd.csi.storage.gke.io", "projects/UNSPECIFIED/regions/" + *region + "/disks/" + pd};
    }
    return MigratedCSIVolume{"pd.csi.storage.gke.io", "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/" + pd};
  }
  if (s.azureFile) {
    std::string rg;
    if (auto it = pv.metadata.annotations.find("kubernetes.io/azure-file-resource-group"); it != pv.metadata.annotations.end())
      rg = it->second;
    std::string ns;
    if (s.azureFile->secretNamespace) ns = *s.azureFile->secretNamespace;
    else if (s.claimRef) ns = s.claimRef->namespace_;
    if (ns.empty()) return bad("could not find a secret namespace in PersistentVolumeSource or ClaimRef");
    return MigratedCSIVolume{"file.csi.azure.com", rg + "#" + azureStorageAccount(s.azureFile->secretName) + "#" +
                                                       s.azureFile->shareName + "#" + pv.metadata.name + "#" + ns};
  }
  return bad("could not find in-tree plugin translation logic for \"" + pv.metadata.name + "\"");
}

Result<MigratedCSIVolume> translateInline(const Volume& v, const std::string& podNamespace) {
  if (auto alike = translateAlike(v)) return *alike;
  if (v.gcePersistentDisk)
    return MigratedCSIVolume{"pd.csi.storage.gke.io",
                             "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/" + v.gcePersistentDisk->pdName};
  if (v.azureFile)
    return MigratedCSIVolume{"file.csi.azure.com", "#" + azureStorageAccount(v.azureFile->secretName) + "#" +
                                                       v.azureFile->shareName + "#" + v.name + "#" +
                                                       (podNamespace.empty() ? "default" : podNamespace)};
  return bad("could not find in-tree plugin translation logic for \"" + v.name + "\"");
}

}  // namespace

Result<std::string> KubernetesVolumeIDToEBSVolumeID(const std::string& id) {
  if (id.rfind("aws://", 0) != 0) return id;  // a bare volume ID
  // url.Parse: the path after the host, trimmed of slashes
  std::string rest = id.substr(6);
  auto slash = rest.find('/');
  std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  auto first = path.find_first_not_of('/');
  auto last = path.find_last_not_of('/');
  std::string awsID = first == std::string::npos ? "" : path.substr(first, last - first + 1);
  static const std::regex valid("^vol-[^/]*$");
  if (!std::regex_match(awsID, valid)) return bad("Invalid format for AWS volume (" + id + ")");
  return awsID;
}

Result<MigratedCSIVolume> TranslateInTreeSpecToCSI(const VolumeSpec& spec, const std::string& podNamespace) {
  auto r = spec.pv ? translatePV(*spec.pv) : translateInline(*spec.volume, podNamespace);
  if (!r.ok()) return bad("failed to translate in-tree pv to CSI: " + r.status().message());
  return r;
}

}  // namespace kcm::controllers::volume::common
