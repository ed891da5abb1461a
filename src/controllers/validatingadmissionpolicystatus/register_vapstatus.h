#pragma once
// Registers validatingadmissionpolicy-status-controller's init function (upstream cmd/kube-controller-manager/app/
// validatingadmissionpolicystatus.go's newValidatingAdmissionPolicyStatusController).
#include <functional>
#include <string>

#include "controllers/registry.h"

namespace kcm::controllers {

void registerValidatingAdmissionPolicyStatusInitFunc(const std::function<void(const std::string&, InitFunc)>& setInit);

}  // namespace kcm::controllers
