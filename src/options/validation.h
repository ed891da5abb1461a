#pragma once
// KubeControllerManagerOptions.Validate: every error of every flag set, aggregated (not only the first), with
// upstream's texts. Controller-name checks live with the controller registry (controllers/registry.h).
#include <string>
#include <vector>

#include "options/typed_options.h"

namespace kcm::options {

// controllerErrors: the --controllers checks (controllers::validateControllers), placed where upstream's
// Generic.Validate reports them.
std::vector<std::string> validate(const KubeControllerManagerOptions& o, std::vector<std::string> controllerErrors = {});

}  // namespace kcm::options
