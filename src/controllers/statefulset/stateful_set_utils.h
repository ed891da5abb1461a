#pragma once
// Pure helpers of the statefulset controller (upstream pkg/controller/statefulset/stateful_set_utils.go): pod
// identity (<set>-<ordinal>, hostname, subdomain, the pod-name and pod-index labels), storage (one claim per
// volumeClaimTemplate, <claim>-<set>-<ordinal>), the owner references PersistentVolumeClaimRetentionPolicy asks for
// on claims, revisions (the template-replacing patch, applying a revision back), and status helpers. No I/O.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/gen/apps_v1.h"
#include "api/gen/core_v1.h"
#include "base/status.h"
#include "controllers/util/controller_utils.h"

namespace kcm::controllers::statefulset {

using api::apps::v1::ControllerRevision;
using api::apps::v1::StatefulSet;
using api::apps::v1::StatefulSetStatus;
using api::core::v1::PersistentVolumeClaim;
using api::core::v1::Pod;

inline constexpr const char* kStatefulSetPodNameLabel = "statefulset.kubernetes.io/pod-name";
inline constexpr const char* kPodIndexLabel = "apps.kubernetes.io/pod-index";
inline constexpr const char* kStatefulSetRevisionLabel = "controller-revision-hash";

// "<parent>-<ordinal>" of a pod name; ordinal -1 when the name has no such form.
std::pair<std::string, int> getParentNameAndOrdinal(const Pod& pod);
int getOrdinal(const Pod& pod);
int getStartOrdinal(const StatefulSet& set);
int getEndOrdinal(const StatefulSet& set);
bool podInOrdinalRange(const Pod& pod, const StatefulSet& set);
std::string getPodName(const StatefulSet& set, int ordinal);
std::string getPersistentVolumeClaimName(const StatefulSet& set, const PersistentVolumeClaim& claim, int ordinal);
bool isMemberOf(const StatefulSet& set, const Pod& pod);
bool identityMatches(const StatefulSet& set, const Pod& pod);
bool storageMatches(const StatefulSet& set, const Pod& pod);

// WhenDeleted/WhenScaled, Retain when unset.
struct RetentionPolicy {
  std::string whenDeleted = "Retain", whenScaled = "Retain";
};
RetentionPolicy getPersistentVolumeClaimRetentionPolicy(const StatefulSet& set);
bool hasOwnerRef(const api::meta::v1::ObjectMeta& target, const std::string& ownerUID);
bool hasUnexpectedController(const PersistentVolumeClaim& claim, const StatefulSet& set, const Pod& pod);
bool hasNonControllerOwner(const PersistentVolumeClaim& claim, const StatefulSet& set, const Pod& pod);
// Whether the claim's owner references are what the retention policy asks for.
bool isClaimOwnerUpToDate(const PersistentVolumeClaim& claim, const StatefulSet& set, const Pod& pod);
// Sets the claim's owner references to what the policy asks for (the set while in range and WhenDeleted=Delete,
// the pod once scaled down and WhenScaled=Delete); drops ours when another controller owns the claim.
void updateClaimOwnerRefForSetAndPod(PersistentVolumeClaim& claim, const StatefulSet& set, const Pod& pod);

// The claims of a pod, by template name: named for the ordinal, labelled with the selector's matchLabels.
std::map<std::string, PersistentVolumeClaim> getPersistentVolumeClaims(const StatefulSet& set, const Pod& pod);
// The pod's volumes: one per claim template (in template-name order), then the others it had.
void updateStorage(const StatefulSet& set, Pod& pod);
void initIdentity(const StatefulSet& set, Pod& pod);
void updateIdentity(const StatefulSet& set, Pod& pod);

bool isRunningAndReady(const Pod& pod);
bool isRunningAndAvailable(const Pod& pod, int32_t minReadySeconds, WallTime now);
bool isCreated(const Pod& pod);
bool isPending(const Pod& pod);
bool isTerminalPhase(const Pod& pod);
bool isTerminating(const Pod& pod);
bool isUnavailable(const Pod& pod, int32_t minReadySeconds, WallTime now);
bool allowsBurst(const StatefulSet& set);
void setPodRevision(Pod& pod, const std::string& revision);
std::string getPodRevision(const Pod& pod);

// A new pod for an ordinal (upstream GetPodFromTemplate, then identity and storage).
Pod newStatefulSetPod(const StatefulSet& set, int ordinal);
// From the current set below the partition (or below currentReplicas without a rollingUpdate), else the update one.
Pod newVersionedStatefulSetPod(const StatefulSet& currentSet, const StatefulSet& updateSet,
                               const std::string& currentRevision, const std::string& updateRevision, int ordinal);

// Revisions: the stored data, a new revision (named <set>-<hash of data and collisionCount>), a set with a
// revision's template.
Result<std::string> getPatch(const StatefulSet& set);
Result<ControllerRevision> newRevision(const StatefulSet& set, int64_t revision, std::optional<int32_t> collisionCount);
Result<StatefulSet> applyRevision(const StatefulSet& set, const ControllerRevision& revision);
int64_t nextRevision(const std::vector<std::shared_ptr<const ControllerRevision>>& sortedRevisions);

bool inconsistentStatus(const StatefulSet& set, const StatefulSetStatus& status);
// The update is complete when every replica is updated and ready: current becomes the update revision.
void completeUpdate(const StatefulSet& set, StatefulSetStatus& status);
// maxUnavailable of replicaCount (rounded down, at least 1; default 1).
Result<int> getStatefulSetMaxUnavailable(const std::optional<api::IntOrString>& maxUnavailable, int replicaCount);

}  // namespace kcm::controllers::statefulset
