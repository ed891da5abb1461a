#pragma once
// The CSI migration of in-tree volumes (csi-translation-lib at the pin, every plugin's migration complete): which
// CSI driver now owns a migrated in-tree volume and the volume handle the translation gives it. Only the driver and
// handle are translated (what names a volume: kubernetes.io/csi/<driver>^<handle>); attributes, secrets and
// topology are not.
#include <string>

#include "base/status.h"
#include "controllers/volume/common/volume_spec.h"

namespace kcm::controllers::volume::common {

// csimigration.TranslateInTreeSpecToCSI for a spec whose inTreeMigratablePluginName is not empty; podNamespace is
// the inline volume's pod's. Errors carry the translators' texts behind "failed to translate in-tree pv to CSI: ".
Result<MigratedCSIVolume> TranslateInTreeSpecToCSI(const VolumeSpec& spec, const std::string& podNamespace);

// KubernetesVolumeIDToEBSVolumeID: "aws://<zone>/vol-123" or "vol-123" to "vol-123".
Result<std::string> KubernetesVolumeIDToEBSVolumeID(const std::string& id);

}  // namespace kcm::controllers::volume::common
