#pragma once
// Leader migration (k8s.io/controller-manager/pkg/leadermigration): a LeaderMigrationConfiguration names the
// controllers that move between controller managers under a second lock, and which component may run each.
// With --leader-elect and --enable-leader-migration, the main lock runs the controllers the configuration does
// not list; once the serviceaccount-token controller has started, a second election on the lock `leaderName`
// runs the listed controllers whose component is this one or "*". Listed controllers of another component are
// left to it.
#include <string>
#include <vector>

#include "base/status.h"

namespace kcm::leaderelection {

inline constexpr const char* kResourceLockLeases = "leases";
inline constexpr const char* kResourceLockEndpoints = "endpoints";

struct ControllerLeaderConfiguration {
  std::string name;       // the controller, by its kube-controller-manager name
  std::string component;  // the component that runs it, or "*" for any that takes part in the migration
};

// The internal form of controllermanager.config.k8s.io LeaderMigrationConfiguration (v1alpha1, v1beta1, v1;
// v1 has no resourceLock and means "leases").
struct LeaderMigrationConfiguration {
  std::string leaderName;
  std::string resourceLock;
  std::vector<ControllerLeaderConfiguration> controllerLeaders;
};

// The configuration used when --leader-migration-config is empty: the cloud-provider extraction.
LeaderMigrationConfiguration DefaultLeaderMigrationConfiguration();

// Decodes a configuration document (YAML or JSON) strictly: apiVersion and kind are required, unknown fields are
// errors, with the texts upstream's decoder gives. The result may still be invalid.
Result<LeaderMigrationConfiguration> DecodeLeaderMigrationConfiguration(const std::string& data);

// Reads and decodes the file; a file that cannot be read is "unable to read leader migration configuration
// from \"<path>\": <reason>".
Result<LeaderMigrationConfiguration> ReadLeaderMigrationConfiguration(const std::string& path);

// The field errors upstream's ValidateLeaderMigrationConfiguration reports, as "<field>: <detail>" strings.
std::vector<std::string> ValidateLeaderMigrationConfiguration(const LeaderMigrationConfiguration& config);

// upstream's LeaderMigrationOptions.ApplyTo for an enabled migration: the default configuration for an empty
// path, else the file, which must decode and validate ("failed to parse leader migration configuration: [...]").
Result<LeaderMigrationConfiguration> LoadLeaderMigrationConfiguration(const std::string& path);

enum class FilterResult {
  kUnowned,      // another controller manager runs it: not started here
  kMigrated,     // started under the migration lock
  kNonMigrated,  // started under the main lock
};

class LeaderMigrator {
 public:
  LeaderMigrator(const LeaderMigrationConfiguration& config, const std::string& component);
  FilterResult FilterFunc(const std::string& controllerName) const;
  const LeaderMigrationConfiguration& config() const { return config_; }

 private:
  LeaderMigrationConfiguration config_;
  std::string component_;
};

}  // namespace kcm::leaderelection
