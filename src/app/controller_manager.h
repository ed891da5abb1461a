#pragma once
// kube-controller-manager's start-up path (upstream cmd/kube-controller-manager/app): parse and validate the
// command line into a Config, serve /healthz and /metrics, wait for the apiserver, run leader election, and on
// leading build the ControllerContext and start every enabled controller from the registry.
#include <string>
#include <vector>

namespace kcm::app {

// Runs the command; returns the process exit code.
int run(const std::vector<std::string>& args);

}  // namespace kcm::app
