#pragma once
// Init functions of the scheduling controllers (upstream cmd/kube-controller-manager/app/scheduling.go).
#include <functional>
#include <string>

#include "controllers/registry.h"

namespace kcm::controllers {

void registerSchedulingInitFuncs(const std::function<void(const std::string&, InitFunc)>& setInit);

}  // namespace kcm::controllers
