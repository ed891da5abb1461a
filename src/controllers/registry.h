#pragma once
// The controller descriptor table: every controller of upstream kube-controller-manager's registry at the pinned
// release, by canonical name, with its aliases (old names that must keep working, e.g. kubeadm's
// "bootstrapsigner,tokencleaner"), whether it is on by default, the feature gate it needs, and its init function
// (every entry has one: registering the init functions fails start-up otherwise).
// It drives --controllers validation, /healthz/<name>, the start order and --help's controller list.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace kcm::controllers {

struct ControllerContext;
class Controller;

// Builds the controller (upstream's constructor in its descriptor). An error stops the process, as upstream's
// BuildControllers; Status kCancelled means it chose not to run ("Warning: skipping controller", reason given).
using InitFunc = std::function<Result<std::unique_ptr<Controller>>(ControllerContext&)>;

struct ControllerDescriptor {
  std::string name;                 // canonical, "replicaset-controller"
  std::vector<std::string> aliases; // "replicaset"
  bool disabledByDefault = false;
  std::vector<std::string> requiredFeatureGates;  // all must be on; empty: always available
  bool isCloudProviderController = false;
  bool requiresSpecialHandling = false;  // serviceaccount-token: started first, with the root client
  InitFunc init;                    // set by registerControllerInitFuncs
};

// All descriptors, in upstream's --help order (sorted by canonical name).
const std::vector<ControllerDescriptor>& controllerDescriptors();
// Mutable access for registering init functions at start-up.
std::vector<ControllerDescriptor>& mutableControllerDescriptors();

// Canonical name for a canonical name or alias; nullopt when unknown.
std::optional<std::string> canonicalName(const std::string& nameOrAlias);

// --controllers validation (upstream's GenericControllerManagerConfigurationOptions.Validate): every entry other
// than "*" must name a known controller, with or without a leading "-". Returns one error per bad entry.
std::vector<std::string> validateControllers(const std::vector<std::string>& list);
// ApplyTo: aliases rewritten to canonical names, "-" kept.
std::vector<std::string> canonicalizeControllers(const std::vector<std::string>& list);
// IsControllerEnabled: the first exact "name"/"-name" wins; otherwise "*" enables what is on by default.
bool isControllerEnabled(const std::string& name, const std::vector<std::string>& canonicalList);

}  // namespace kcm::controllers
