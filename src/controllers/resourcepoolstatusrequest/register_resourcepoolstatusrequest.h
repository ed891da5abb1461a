#pragma once
// Registers resourcepoolstatusrequest-controller's init function (upstream cmd/kube-controller-manager/app/
// resource.go's newResourcePoolStatusRequestController; the registry entry carries its gate, DRAResourcePoolStatus).
#include <functional>
#include <string>

#include "controllers/registry.h"

namespace kcm::controllers {

void registerResourcePoolStatusRequestInitFunc(const std::function<void(const std::string&, InitFunc)>& setInit);

}  // namespace kcm::controllers
