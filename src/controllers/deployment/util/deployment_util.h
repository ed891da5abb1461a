#pragma once
// Deployment arithmetic and bookkeeping (upstream pkg/controller/deployment/util/deployment_util.go): revisions and
// the annotations carried between Deployments and their ReplicaSets, rolling-update fenceposts (maxSurge /
// maxUnavailable), proportional scaling, conditions and progress checks, template identity ignoring the
// pod-template-hash label, and the hash that names new ReplicaSets.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/gen/apps_v1.h"
#include "api/gen/core_v1.h"
#include "base/clock.h"

namespace kcm::controllers::deploymentutil {

using api::apps::v1::Deployment;
using api::apps::v1::DeploymentCondition;
using api::apps::v1::DeploymentStatus;
using api::apps::v1::ReplicaSet;
using RSPtr = std::shared_ptr<const ReplicaSet>;

inline constexpr const char* kRevisionAnnotation = "deployment.kubernetes.io/revision";
inline constexpr const char* kRevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history";
inline constexpr const char* kDesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas";
inline constexpr const char* kMaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas";
inline constexpr const char* kDeprecatedRollbackTo = "deprecated.deployment.rollback.to";
inline constexpr const char* kDefaultDeploymentUniqueLabelKey = "pod-template-hash";

inline constexpr const char* kRollbackRevisionNotFound = "DeploymentRollbackRevisionNotFound";
inline constexpr const char* kRollbackTemplateUnchanged = "DeploymentRollbackTemplateUnchanged";
inline constexpr const char* kRollbackDone = "DeploymentRollback";
inline constexpr const char* kReplicaSetUpdatedReason = "ReplicaSetUpdated";
inline constexpr const char* kFailedRSCreateReason = "ReplicaSetCreateError";
inline constexpr const char* kNewReplicaSetReason = "NewReplicaSetCreated";
inline constexpr const char* kFoundNewRSReason = "FoundNewReplicaSet";
inline constexpr const char* kNewRSAvailableReason = "NewReplicaSetAvailable";
inline constexpr const char* kTimedOutReason = "ProgressDeadlineExceeded";
inline constexpr const char* kPausedDeployReason = "DeploymentPaused";
inline constexpr const char* kResumedDeployReason = "DeploymentResumed";
inline constexpr const char* kMinimumReplicasAvailable = "MinimumReplicasAvailable";
inline constexpr const char* kMinimumReplicasUnavailable = "MinimumReplicasUnavailable";

int32_t replicas(const Deployment& d);  // spec.replicas (defaulted to 1)
int32_t replicas(const ReplicaSet& rs);

// --- conditions ---
// Stamps lastUpdateTime and lastTransitionTime with the clock's wall time.
DeploymentCondition newDeploymentCondition(const Clock& clock, const std::string& type, const std::string& status,
                                           const std::string& reason, const std::string& message);
const DeploymentCondition* getDeploymentCondition(const DeploymentStatus& s, const std::string& type);
void setDeploymentCondition(DeploymentStatus& s, DeploymentCondition c);
void removeDeploymentCondition(DeploymentStatus& s, const std::string& type);
DeploymentCondition replicaSetToDeploymentCondition(const api::apps::v1::ReplicaSetCondition& c);
bool sameStatus(const DeploymentStatus& a, const DeploymentStatus& b);

// --- revisions and annotations ---
int64_t revision(const api::meta::v1::ObjectMeta& m);  // 0 when absent or malformed
int64_t maxRevision(const std::vector<RSPtr>& rss);
int64_t lastRevision(const std::vector<RSPtr>& rss);  // the second highest
bool setDeploymentRevision(Deployment& d, const std::string& revision);
bool setNewReplicaSetAnnotations(const Deployment& d, ReplicaSet& rs, const std::string& newRevision, bool exists,
                                 size_t revHistoryLimitInChars);
bool setReplicasAnnotations(ReplicaSet& rs, int32_t desired, int32_t max);
bool replicasAnnotationsNeedUpdate(const ReplicaSet& rs, int32_t desired, int32_t max);
std::optional<int32_t> getDesiredReplicasAnnotation(const ReplicaSet& rs);
void setDeploymentAnnotationsTo(Deployment& d, const ReplicaSet& rollbackTo);
void setFromReplicaSetTemplate(Deployment& d, const api::core::v1::PodTemplateSpec& t);
// The revision of the deprecated rollback annotation, when set and numeric.
std::optional<int64_t> getRollbackTo(const Deployment& d);

// --- rolling update arithmetic ---
bool isRollingUpdate(const Deployment& d);
// (surge, unavailable); nullopt when either value is malformed (upstream's error; both then count as 0).
std::optional<std::pair<int32_t, int32_t>> resolveFenceposts(const std::optional<api::IntOrString>& maxSurge,
                                                             const std::optional<api::IntOrString>& maxUnavailable,
                                                             int32_t desired);
int32_t maxSurge(const Deployment& d);
int32_t maxUnavailable(const Deployment& d);
int32_t minAvailable(const Deployment& d);  // 0 unless RollingUpdate
int32_t newRSNewReplicas(const Deployment& d, const std::vector<RSPtr>& allRSs, const ReplicaSet& newRS);
bool isSaturated(const Deployment& d, const RSPtr& rs);
int32_t getReplicaSetProportion(const ReplicaSet& rs, const Deployment& d, int32_t toAdd, int32_t added);
// How many replicas rs should gain (or lose, negative) when the Deployment's size changed, before capping.
int32_t getReplicaSetFraction(const ReplicaSet& rs, const Deployment& d);

// --- counting (null entries skipped) ---
int32_t getReplicaCount(const std::vector<RSPtr>& rss);  // spec.replicas
int32_t getActualReplicaCount(const std::vector<RSPtr>& rss);
int32_t getReadyReplicaCount(const std::vector<RSPtr>& rss);
int32_t getAvailableReplicaCount(const std::vector<RSPtr>& rss);
std::optional<int32_t> getTerminatingReplicaCount(const std::vector<RSPtr>& rss);
std::vector<RSPtr> filterActive(const std::vector<RSPtr>& rss);  // spec.replicas > 0

// --- progress ---
bool hasProgressDeadline(const Deployment& d);
bool hasRevisionHistoryLimit(const Deployment& d);
bool deploymentComplete(const Deployment& d, const DeploymentStatus& s);
bool deploymentProgressing(const Deployment& d, const DeploymentStatus& s);
bool deploymentTimedOut(const Clock& clock, const Deployment& d, const DeploymentStatus& s);

// --- finding ReplicaSets ---
bool equalIgnoreHash(const api::core::v1::PodTemplateSpec& a, const api::core::v1::PodTemplateSpec& b);
RSPtr findNewReplicaSet(const Deployment& d, std::vector<RSPtr> rss);
std::vector<RSPtr> findOldReplicaSets(const Deployment& d, const std::vector<RSPtr>& rss);  // all but the new one
RSPtr findActiveOrLatest(const RSPtr& newRS, std::vector<RSPtr> oldRSs);

// --- ordering ---
void sortByCreationTimestamp(std::vector<RSPtr>& rss);  // oldest first, name breaks ties
void sortBySizeNewer(std::vector<RSPtr>& rss);          // larger first, then newer
void sortBySizeOlder(std::vector<RSPtr>& rss);          // larger first, then older
void sortByRevision(std::vector<RSPtr>& rss);           // lower revision first

// --- naming ---
// Upstream's controller.ComputeHash, exactly (controllers/util/pod_template_hash.h).
std::string computeHash(const api::core::v1::PodTemplateSpec& t, std::optional<int32_t> collisionCount);
std::string generateReplicaSetName(const std::string& deploymentName, const std::string& hash);

}  // namespace kcm::controllers::deploymentutil
