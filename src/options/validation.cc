#include "options/validation.h"

#include <algorithm>

namespace kcm::options {
namespace {

void positive(std::vector<std::string>& errs, const char* flag, int32_t v, const char* word = "greater than 0, but got") {
  if (v <= 0) errs.push_back(std::string(flag) + " must be " + word + " " + std::to_string(v));
}

void within(std::vector<std::string>& errs, const char* flag, int32_t v, int32_t lo, int32_t hi) {
  if (v < lo)
    errs.push_back(std::string(flag) + " must not be less than " + std::to_string(lo) + ", but got " + std::to_string(v));
  else if (v > hi)
    errs.push_back(std::string(flag) + " must not be more than " + std::to_string(hi) + ", but got " + std::to_string(v));
}

}  // namespace

// In upstream's order (KubeControllerManagerOptions.Validate); each flag set's checks as its Validate().
std::vector<std::string> validate(const KubeControllerManagerOptions& o, std::vector<std::string> controllerErrors) {
  std::vector<std::string> errs;
  const auto& g = o.generic;
  if (g.leaderElect && g.leaderElectResourceLock != "leases") errs.push_back("resourceLock value must be \"leases\"");
  for (auto& e : controllerErrors) errs.push_back(std::move(e));
  if (o.persistentvolumeAttachDetachController.attachDetachReconcileSyncPeriod < std::chrono::seconds(1))
    errs.push_back("duration time must be greater than one second as set via command line option "
                   "reconcile-sync-loop-period");
  // CSRSigningControllerOptions.Validate
  const auto& csr = o.certificatesigningrequestSigningController;
  auto pair = [&](const char* name, const std::string& cert, const std::string& key) {
    if (cert.empty() && !key.empty()) errs.push_back(std::string("\"") + name + "\": cannot specify key without cert");
    if (!cert.empty() && key.empty()) errs.push_back(std::string("\"") + name + "\": cannot specify cert without key");
  };
  pair("cluster-signing-kubelet-serving", csr.clusterSigningKubeletServingCertFile, csr.clusterSigningKubeletServingKeyFile);
  pair("cluster-signing-kube-apiserver-client", csr.clusterSigningKubeletClientCertFile,
       csr.clusterSigningKubeletClientKeyFile);
  pair("cluster-signing-kube-apiserver", csr.clusterSigningKubeApiserverClientCertFile,
       csr.clusterSigningKubeApiserverClientKeyFile);
  pair("cluster-signing-legacy-unknown", csr.clusterSigningLegacyUnknownCertFile, csr.clusterSigningLegacyUnknownKeyFile);
  const bool singleSigningFile = !csr.clusterSigningCertFile.empty() || !csr.clusterSigningKeyFile.empty();
  const bool anySpecificFilesSet =
      !csr.clusterSigningKubeletServingCertFile.empty() || !csr.clusterSigningKubeletServingKeyFile.empty() ||
      !csr.clusterSigningKubeletClientCertFile.empty() || !csr.clusterSigningKubeletClientKeyFile.empty() ||
      !csr.clusterSigningKubeApiserverClientCertFile.empty() || !csr.clusterSigningKubeApiserverClientKeyFile.empty() ||
      !csr.clusterSigningLegacyUnknownCertFile.empty() || !csr.clusterSigningLegacyUnknownKeyFile.empty();
  if (singleSigningFile && anySpecificFilesSet)
    errs.push_back("cannot specify --cluster-signing-{cert,key}-file and other --cluster-signing-*-file flags at the "
                   "same time");
  positive(errs, "concurrent-daemonset-syncs", o.daemonsetController.concurrentDaemonsetSyncs);
  positive(errs, "concurrent-device-taint-eviction-syncs",
           o.deviceTaintEvictionController.concurrentDeviceTaintEvictionSyncs, "greater than zero, got");
  positive(errs, "concurrent-resourceclaim-syncs", o.resourceclaimController.concurrentResourceclaimSyncs,
           "larger than 0, got");
  positive(errs, "concurrent-statefulset-syncs", o.statefulsetController.concurrentStatefulsetSyncs);
  within(errs, "concurrent-service-endpoint-syncs", o.endpointsliceController.concurrentServiceEndpointSyncs, 1, 50);
  within(errs, "max-endpoints-per-slice", o.endpointsliceController.maxEndpointsPerSlice, 1, 1000);
  within(errs, "mirroring-concurrent-service-endpoint-syncs",
         o.endpointsliceMirroringController.mirroringConcurrentServiceEndpointSyncs, 1, 50);
  within(errs, "mirroring-max-endpoints-per-subset",
         o.endpointsliceMirroringController.mirroringMaxEndpointsPerSubset, 1, 1000);
  positive(errs, "concurrent-ephemeralvolume-syncs", o.ephemeralVolumeController.concurrentEphemeralvolumeSyncs);
  positive(errs, "concurrent-horizontal-pod-autoscaler-syncs",
           o.horizontalPodAutoscalerController.concurrentHorizontalPodAutoscalerSyncs);
  positive(errs, "concurrent-job-syncs", o.jobController.concurrentJobSyncs);
  positive(errs, "concurrent-cron-job-syncs", o.cronjobController.concurrentCronJobSyncs);
  if (std::count(o.nodeIpamController.serviceClusterIpRange.begin(), o.nodeIpamController.serviceClusterIpRange.end(),
                 ',') > 1)
    errs.push_back("--service-cluster-ip-range can not contain more than two entries");
  if (o.validatingadmissionpolicyStatusController.concurrentValidatingAdmissionPolicyStatusSyncs <= 0)
    errs.push_back("must be positive, got " +
                   std::to_string(o.validatingadmissionpolicyStatusController.concurrentValidatingAdmissionPolicyStatusSyncs));
  // SecureServingOptions.Validate (Required is false here): `Required && port < 1 || port > 65535` binds as
  // `(Required && port < 1) || port > 65535`, so a port above 65535 gets the "cannot be turned off" text.
  const int32_t port = o.secureServing.securePort;
  if (port > 65535)
    errs.push_back("--secure-port " + std::to_string(port) +
                   " must be between 1 and 65535, inclusive. It cannot be turned off with 0");
  else if (port < 0)
    errs.push_back("--secure-port " + std::to_string(port) +
                   " must be between 0 and 65535, inclusive. 0 for turning off secure port");
  // In-tree cloud providers are disabled (KEP-2395), and with them every IPAM type but RangeAllocator.
  if (!g.cloudProvider.empty() && g.cloudProvider != "external")
    errs.push_back("cloud provider \"" + g.cloudProvider + "\" was specified, but built-in cloud providers are "
                   "disabled. Please set --cloud-provider=external and migrate to an external cloud provider");
  if (!g.cidrAllocatorType.empty() && g.cidrAllocatorType != "RangeAllocator")
    errs.push_back("built-in cloud providers are disabled. The ipam " + g.cidrAllocatorType + " is not available");
  return errs;
}

}  // namespace kcm::options
