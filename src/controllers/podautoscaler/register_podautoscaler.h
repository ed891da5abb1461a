#pragma once
// Registers horizontal-pod-autoscaler-controller's init function (upstream newHorizontalPodAutoscalerController
// in cmd/kube-controller-manager/app/autoscaling.go). Not yet called from register.cc: until unit and e2e tests
// show the controller on the real apiserver it stays logged `skipping controller (not implemented)`.
#include <functional>
#include <string>

#include "controllers/registry.h"

namespace kcm::controllers {

void registerPodAutoscalerInitFunc(const std::function<void(const std::string&, InitFunc)>& setInit);

}  // namespace kcm::controllers
