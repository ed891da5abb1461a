#pragma once
// The metrics component-base registers for every Kubernetes component: version_info, kubernetes_build_info,
// kubernetes_feature_enabled and the registry's own counters (registered/disabled/hidden metrics). Set once at
// start-up, after the feature gates are parsed.
#include "options/feature_gates.h"

namespace kcm::app {

void registerComponentMetrics(const options::FeatureGates& gates);

}  // namespace kcm::app
