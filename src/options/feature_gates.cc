#include "options/feature_gates.h"

#include <algorithm>
#include <cctype>

namespace kcm::options {
namespace {

struct RemovedGate {
  const char* name;
  bool lockedValue;
  const char* removedIn;
};

// GA gates that later releases removed, which old manifests (the seed's kubeadm one) still pass.
const RemovedGate kRemovedGates[] = {
    {"TTLAfterFinished", true, "v1.25"},
    {"EphemeralContainers", true, "v1.27"},
    {"CSIMigration", true, "v1.27"},
    {"DaemonSetUpdateSurge", true, "v1.27"},
    {"IndexedJob", true, "v1.28"},
    {"PodDisruptionBudget", true, "v1.25"},
    {"CronJobControllerV2", true, "v1.23"},
    {"ServiceLBNodePortControl", true, "v1.26"},
    {"StatefulSetMinReadySeconds", true, "v1.27"},
    {"NetworkPolicyEndPort", true, "v1.27"},
    {"JobTrackingWithFinalizers", true, "v1.28"},
};

std::string trim(std::string s) {
  auto notSpace = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), notSpace));
  s.erase(std::find_if(s.rbegin(), s.rend(), notSpace).base(), s.end());
  return s;
}

}  // namespace

FeatureGates::FeatureGates() {
  for (const auto& s : knownFeatureGates()) {
    specs_[s.name] = s;
    values_[s.name] = s.defaultValue;
  }
}

Status FeatureGates::set(const std::string& value, std::vector<std::string>& warnings) {
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    std::string item = trim(value.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    start = comma == std::string::npos ? value.size() + 1 : comma + 1;
    if (item.empty()) continue;
    if (auto colon = item.find(':'); colon != std::string::npos && colon < item.find('=')) {
      std::string component = item.substr(0, colon);
      if (component != "kube")
        return Status(StatusCode::kInvalidArgument, "component not registered: " + component);
      item = item.substr(colon + 1);
    }
    auto eq = item.find('=');
    if (eq == std::string::npos)
      return Status(StatusCode::kInvalidArgument, "missing bool value for " + item);
    std::string name = trim(item.substr(0, eq)), v = trim(item.substr(eq + 1));
    bool b;
    if (v == "true" || v == "True" || v == "TRUE" || v == "1" || v == "t" || v == "T") b = true;
    else if (v == "false" || v == "False" || v == "FALSE" || v == "0" || v == "f" || v == "F") b = false;
    else return Status(StatusCode::kInvalidArgument, "invalid value of " + name + "=" + v + ", err: strconv.ParseBool: parsing \"" + v + "\": invalid syntax");
    auto it = specs_.find(name);
    if (it == specs_.end()) {
      const RemovedGate* removed = nullptr;
      for (const auto& r : kRemovedGates)
        if (name == r.name) removed = &r;
      if (!removed) return Status(StatusCode::kInvalidArgument, "unrecognized feature gate: " + name);
      if (b != removed->lockedValue)
        return Status(StatusCode::kInvalidArgument, "cannot set feature gate " + name + " to " + (b ? "true" : "false") +
                                                        ", feature is locked to " + (removed->lockedValue ? "true" : "false"));
      warnings.push_back("Feature gate " + name + " was GA and removed in " + removed->removedIn +
                         "; the setting " + name + "=" + v + " has no effect and is ignored. Remove it from the command line.");
      continue;
    }
    const FeatureSpec& s = it->second;
    if (s.lockToDefault && b != s.defaultValue)
      return Status(StatusCode::kInvalidArgument, "cannot set feature gate " + name + " to " + (b ? "true" : "false") +
                                                      ", feature is locked to " + (s.defaultValue ? "true" : "false"));
    if (std::string(s.stage) == "GA")
      warnings.push_back("Setting GA feature gate " + name + "=" + (b ? "true" : "false") +
                         ". It will be removed in a future release.");
    else if (std::string(s.stage) == "Deprecated")
      warnings.push_back("Setting deprecated feature gate " + name + "=" + (b ? "true" : "false") +
                         ". It will be removed in a future release.");
    values_[name] = b;
  }
  return Status::Ok();
}

bool FeatureGates::enabled(const std::string& name) const {
  auto it = values_.find(name);
  return it != values_.end() && it->second;
}

}  // namespace kcm::options
