#pragma once
// Registers storageversion-garbage-collector-controller's init function (upstream cmd/kube-controller-manager/app/
// core.go's newStorageVersionGarbageCollectorController).
#include <functional>
#include <string>

#include "controllers/registry.h"

namespace kcm::controllers {

void registerStorageVersionGCInitFunc(const std::function<void(const std::string&, InitFunc)>& setInit);

}  // namespace kcm::controllers
