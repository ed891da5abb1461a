#pragma once
// Registers storage-version-migrator-controller's init function (upstream cmd/kube-controller-manager/app/
// storageversionmigrator.go's newSVMController).
#include <functional>
#include <string>

#include "controllers/registry.h"

namespace kcm::controllers {

void registerStorageVersionMigratorInitFunc(const std::function<void(const std::string&, InitFunc)>& setInit);

}  // namespace kcm::controllers
