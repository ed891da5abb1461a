#pragma once
// Registers resourcequota-controller's init function (upstream newResourceQuotaController in core.go).
#include <functional>
#include <string>

#include "controllers/registry.h"

namespace kcm::controllers {

void registerResourceQuotaInitFunc(const std::function<void(const std::string&, InitFunc)>& setInit);

}  // namespace kcm::controllers
