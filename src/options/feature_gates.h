#pragma once
// Feature gates as component-base's featuregate: the known gates of the pinned release (generated table),
// --feature-gates parsing ("A=true,kube:B=false"), and upstream's errors and warnings:
//   unknown gate               -> error "unrecognized feature gate: X"
//   locked gate set otherwise  -> error "cannot set feature gate X to v, feature is locked to d"
//   GA / deprecated gate set   -> warning
// Beyond upstream, gates that were GA and then removed (the seed's TTLAfterFinished, EphemeralContainers) are
// accepted at their locked value with a deprecation warning, so old kubeadm manifests keep working.
#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace kcm::options {

struct FeatureSpec {
  const char* name;
  bool defaultValue;
  const char* stage;  // "Alpha", "Beta", "GA", "Deprecated"
  bool lockToDefault;
};

const std::vector<FeatureSpec>& knownFeatureGates();

class FeatureGates {
 public:
  FeatureGates();
  // Applies one --feature-gates value; warnings are appended.
  Status set(const std::string& value, std::vector<std::string>& warnings);
  bool enabled(const std::string& name) const;
  bool known(const std::string& name) const { return specs_.count(name) != 0; }

 private:
  std::map<std::string, FeatureSpec> specs_;
  std::map<std::string, bool> values_;
};

}  // namespace kcm::options
