#pragma once
// Registers resourceclaim-controller's init function (upstream cmd/kube-controller-manager/app/resource.go's
// newResourceClaimController: client "resource-claim-controller", --concurrent-resourceclaim-syncs workers).
#include <functional>
#include <string>

#include "controllers/registry.h"

namespace kcm::controllers {

void registerResourceClaimInitFunc(const std::function<void(const std::string&, InitFunc)>& setInit);

}  // namespace kcm::controllers
