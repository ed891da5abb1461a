#pragma once
// Registers the storage controllers' init functions (upstream cmd/kube-controller-manager/app/core.go's
// newPersistentVolume*Controller descriptors and the other storage controllers).
#include <functional>
#include <string>

#include "controllers/registry.h"

namespace kcm::controllers {

void registerVolumeInitFuncs(const std::function<void(const std::string&, InitFunc)>& setInit);

}  // namespace kcm::controllers
