#pragma once
// Shared by the storage version migrator's three loops (upstream pkg/controller/storageversionmigrator/util.go and
// the helpers they take from apimachinery): conditions as meta.SetStatusCondition sets them, the running message,
// resourceVersion comparison (util/resourceversion), and finding a group/resource's served version (the REST
// mapper's ResourcesFor).
#include <optional>
#include <string>
#include <vector>

#include "api/gen/meta_v1.h"
#include "api/gen/storagemigration_v1.h"
#include "base/status.h"
#include "client/discovery.h"

namespace kcm::controllers::storageversionmigrator {

using api::meta::v1::Condition;
using api::storagemigration::v1::StorageVersionMigration;

inline constexpr const char* kMigrationRunning = "Running";
inline constexpr const char* kMigrationSucceeded = "Succeeded";
inline constexpr const char* kMigrationFailed = "Failed";
inline constexpr const char* kMigrationSuccessStatusReason = "StorageVersionMigrationSucceeded";
inline constexpr const char* kMigrationFailedStatusReason = "StorageVersionMigrationFailed";
inline constexpr const char* kMigrationRunningReason = "MigrationRunning";

const Condition* FindStatusCondition(const std::vector<Condition>& conds, const std::string& type);
bool IsStatusConditionTrue(const std::vector<Condition>& conds, const std::string& type);
bool IsStatusConditionFalse(const std::vector<Condition>& conds, const std::string& type);
// meta.SetStatusCondition: adds or updates the condition of that type (the transition time moves only when the
// status changes; `now` when the condition carries none). True when anything changed.
bool SetStatusCondition(std::vector<Condition>& conds, Condition c, const api::Time& now);

// setStatusConditions: appends a True condition of that type unless one (True or False) is already there.
void setStatusConditions(StorageVersionMigration& svm, const std::string& type, const std::string& reason,
                         const std::string& message, const api::Time& now);
// "The migration is running[, N/M objects not yet migrated | , M objects verified migrated][; transient error: E]".
std::string migrationRunningMessage(const int* objectsToPatch, const int* totalObjects, const Status* transient);

bool isTerminal(const StorageVersionMigration& svm);
bool isRunning(const StorageVersionMigration& svm);

// resourceversion.CompareResourceVersion: -1, 0, 1; an error "resource version is not well formed: <rv>".
Result<int> CompareResourceVersion(const std::string& a, const std::string& b);

// resourceFor: the served group/version/resource for a group/resource (its preferred version); nullopt when the
// apiserver does not serve it.
Result<std::optional<client::APIResourceInfo>> resourceFor(client::DiscoveryClient& d, const std::string& group,
                                                           const std::string& resource);
// schema.GroupVersionResource.String(): "<group>/<version>, Resource=<resource>" ("/v1, ..." for the core group).
std::string gvrString(const client::APIResourceInfo& r);

}  // namespace kcm::controllers::storageversionmigrator
