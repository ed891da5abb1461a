#pragma once
// The job_controller_* metrics (upstream pkg/controller/job/metrics), on the process registry. Series appear when
// first touched, as a Prometheus vector's children do.
#include <string>

#include "base/metrics.h"

namespace kcm::controllers::job::metrics {

inline constexpr const char* kActionReconciling = "reconciling";
inline constexpr const char* kActionTracking = "tracking";
inline constexpr const char* kActionPodsCreated = "pods_created";
inline constexpr const char* kActionPodsDeleted = "pods_deleted";

void observeSync(const std::string& completionMode, const std::string& result, const std::string& action,
                 double seconds);
void jobFinished(const std::string& completionMode, const std::string& result, const std::string& reason);
void jobByExternalController(const std::string& controllerName);
void podsFinished(const std::string& completionMode, const std::string& result, double n);
void podFailureHandledByPolicy(const std::string& action, double n);
void terminatedPodsTrackingFinalizer(const std::string& event);  // "add" / "delete"
void finishedIndexes(const std::string& status, const std::string& backoffLimit, double n);
void podsCreation(const std::string& reason, const std::string& status, double n);
void staleSyncSkip(const std::string& group, const std::string& resource);

}  // namespace kcm::controllers::job::metrics
