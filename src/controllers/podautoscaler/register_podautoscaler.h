#pragma once
// Registers horizontal-pod-autoscaler-controller's init function (upstream newHorizontalPodAutoscalerController
// in cmd/kube-controller-manager/app/autoscaling.go); called from registerControllerInitFuncs in register.cc.
#include <functional>
#include <string>

#include "controllers/registry.h"

namespace kcm::controllers {

void registerPodAutoscalerInitFunc(const std::function<void(const std::string&, InitFunc)>& setInit);

}  // namespace kcm::controllers
