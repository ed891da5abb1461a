#pragma once
// Registers device-taint-eviction-controller's init function (upstream cmd/kube-controller-manager/app/resource.go's
// newDeviceTaintEvictionController).
#include <functional>
#include <string>

#include "controllers/registry.h"

namespace kcm::controllers {

void registerDeviceTaintEvictionInitFunc(const std::function<void(const std::string&, InitFunc)>& setInit);

}  // namespace kcm::controllers
