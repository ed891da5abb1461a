#include "controllers/registry.h"

#include <algorithm>
#include <string_view>

namespace kcm::controllers {
namespace {

std::vector<ControllerDescriptor> build() {
  // {canonical name, aliases, disabled by default, feature gate}. Names and aliases as upstream's
  // cmd/kube-controller-manager/names and controller descriptors at the pinned release.
  struct Row {
    const char* name;
    std::vector<std::string> aliases;
    bool disabledByDefault;
    const char* gate;
  };
  const Row rows[] = {
      {"bootstrap-signer-controller", {"bootstrapsigner"}, true, ""},
      {"certificatesigningrequest-approving-controller", {"csrapproving"}, false, ""},
      {"certificatesigningrequest-cleaner-controller", {"csrcleaner"}, false, ""},
      {"certificatesigningrequest-signing-controller", {"csrsigning"}, false, ""},
      {"clusterrole-aggregation-controller", {"clusterrole-aggregation"}, false, ""},
      {"cronjob-controller", {"cronjob"}, false, ""},
      {"daemonset-controller", {"daemonset"}, false, ""},
      {"deployment-controller", {"deployment"}, false, ""},
      {"device-taint-eviction-controller", {}, false, "DynamicResourceAllocation,DRADeviceTaints"},
      {"disruption-controller", {"disruption"}, false, ""},
      {"endpoints-controller", {"endpoint"}, false, ""},
      {"endpointslice-controller", {"endpointslice"}, false, ""},
      {"endpointslice-mirroring-controller", {"endpointslicemirroring"}, false, ""},
      {"ephemeral-volume-controller", {"ephemeral-volume"}, false, ""},
      {"garbage-collector-controller", {"garbagecollector"}, false, ""},
      {"horizontal-pod-autoscaler-controller", {"horizontalpodautoscaling"}, false, ""},
      {"job-controller", {"job"}, false, ""},
      {"kube-apiserver-serving-clustertrustbundle-publisher-controller", {}, false, "ClusterTrustBundle"},
      {"legacy-serviceaccount-token-cleaner-controller", {"legacy-service-account-token-cleaner"}, false, ""},
      {"namespace-controller", {"namespace"}, false, ""},
      {"node-ipam-controller", {"nodeipam"}, false, ""},
      {"node-lifecycle-controller", {"nodelifecycle"}, false, ""},
      {"persistentvolume-attach-detach-controller", {"attachdetach"}, false, ""},
      {"persistentvolume-binder-controller", {"persistentvolume-binder"}, false, ""},
      {"persistentvolume-expander-controller", {"persistentvolume-expander"}, false, ""},
      {"persistentvolume-protection-controller", {"pv-protection"}, false, ""},
      {"persistentvolumeclaim-protection-controller", {"pvc-protection"}, false, ""},
      {"pod-garbage-collector-controller", {"podgc"}, false, ""},
      {"podcertificaterequest-cleaner-controller", {}, false, "PodCertificateRequest"},
      {"podgroup-protection-controller", {}, false, "GenericWorkload"},
      {"replicaset-controller", {"replicaset"}, false, ""},
      {"replicationcontroller-controller", {"replicationcontroller"}, false, ""},
      {"resourceclaim-controller", {"resource-claim-controller"}, false, "DynamicResourceAllocation"},
      {"resourcepoolstatusrequest-controller", {}, false, "DRAResourcePoolStatus"},
      {"resourcequota-controller", {"resourcequota"}, false, ""},
      {"root-ca-certificate-publisher-controller", {"root-ca-cert-publisher"}, false, ""},
      {"selinux-warning-controller", {}, true, "SELinuxChangePolicy"},
      {"service-cidr-controller", {}, false, "MultiCIDRServiceAllocator"},
      {"serviceaccount-controller", {"serviceaccount"}, false, ""},
      {"serviceaccount-token-controller", {"serviceaccount-token"}, false, ""},
      {"statefulset-controller", {"statefulset"}, false, ""},
      {"storage-version-migrator-controller", {"svm"}, false, ""},  // its init checks the gates, as upstream
      {"storageversion-garbage-collector-controller", {"storage-version-gc"}, false, "APIServerIdentity,StorageVersionAPI"},
      {"taint-eviction-controller", {}, false, "SeparateTaintEvictionController"},
      {"token-cleaner-controller", {"tokencleaner"}, true, ""},
      {"ttl-after-finished-controller", {"ttl-after-finished"}, false, ""},
      {"ttl-controller", {"ttl"}, false, ""},
      {"validatingadmissionpolicy-status-controller", {}, false, ""},
      {"volumeattributesclass-protection-controller", {}, false, "VolumeAttributesClass"},
  };
  std::vector<ControllerDescriptor> out;
  for (const auto& r : rows) {
    ControllerDescriptor d;
    d.name = r.name;
    d.aliases = r.aliases;
    d.disabledByDefault = r.disabledByDefault;
    for (std::string_view g = r.gate; !g.empty();) {  // "A,B": upstream's requiredFeatureGates, in its order
      const auto comma = g.find(',');
      d.requiredFeatureGates.emplace_back(g.substr(0, comma));
      g = comma == std::string_view::npos ? std::string_view() : g.substr(comma + 1);
    }
    d.requiresSpecialHandling = d.name == "serviceaccount-token-controller";
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

std::vector<ControllerDescriptor>& mutableControllerDescriptors() {
  static std::vector<ControllerDescriptor> d = build();
  return d;
}

const std::vector<ControllerDescriptor>& controllerDescriptors() { return mutableControllerDescriptors(); }

std::optional<std::string> canonicalName(const std::string& n) {
  for (const auto& d : controllerDescriptors()) {
    if (d.name == n) return d.name;
    if (std::find(d.aliases.begin(), d.aliases.end(), n) != d.aliases.end()) return d.name;
  }
  return std::nullopt;
}

std::vector<std::string> validateControllers(const std::vector<std::string>& list) {
  std::vector<std::string> errs;
  for (const auto& c : list) {
    if (c == "*") continue;
    std::string n = !c.empty() && c[0] == '-' ? c.substr(1) : c;
    if (!canonicalName(n)) errs.push_back("\"" + n + "\" is not in the list of known controllers");
  }
  return errs;
}

std::vector<std::string> canonicalizeControllers(const std::vector<std::string>& list) {
  std::vector<std::string> out;
  for (const auto& c : list) {
    if (c == "*") {
      out.push_back(c);
      continue;
    }
    bool neg = !c.empty() && c[0] == '-';
    auto n = canonicalName(neg ? c.substr(1) : c);
    out.push_back((neg ? "-" : "") + (n ? *n : c));
  }
  return out;
}

bool isControllerEnabled(const std::string& name, const std::vector<std::string>& list) {
  bool star = false;
  for (const auto& c : list) {
    if (c == name) return true;
    if (c == "-" + name) return false;
    if (c == "*") star = true;
  }
  if (!star) return false;
  for (const auto& d : controllerDescriptors())
    if (d.name == name) return !d.disabledByDefault;
  return false;
}

}  // namespace kcm::controllers
