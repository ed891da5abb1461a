#pragma once
// Taint and toleration rules shared by node-lifecycle and taint-eviction (upstream pkg/util/taints and
// k8s.io/api/core/v1 toleration helpers): a taint is identified by key+effect; a toleration tolerates a taint
// when effect (if set) and key (if set) match and, for operator Equal (or empty), the value matches too.
#include <chrono>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"

namespace kcm::controllers {

inline constexpr const char* kTaintNodeNotReady = "node.kubernetes.io/not-ready";
inline constexpr const char* kTaintNodeUnreachable = "node.kubernetes.io/unreachable";
inline constexpr const char* kTaintNodeUnschedulable = "node.kubernetes.io/unschedulable";
inline constexpr const char* kTaintNodeMemoryPressure = "node.kubernetes.io/memory-pressure";
inline constexpr const char* kTaintNodeDiskPressure = "node.kubernetes.io/disk-pressure";
inline constexpr const char* kTaintNodeNetworkUnavailable = "node.kubernetes.io/network-unavailable";
inline constexpr const char* kTaintNodePIDPressure = "node.kubernetes.io/pid-pressure";
inline constexpr const char* kTaintEffectNoSchedule = "NoSchedule";
inline constexpr const char* kTaintEffectNoExecute = "NoExecute";

bool matchTaint(const api::core::v1::Taint& a, const api::core::v1::Taint& b);
// Same taints in the same order, timeAdded included (apiequality.Semantic.DeepEqual of the lists).
bool sameTaints(const std::vector<api::core::v1::Taint>& a, const std::vector<api::core::v1::Taint>& b);
bool taintExists(const std::vector<api::core::v1::Taint>& taints, const api::core::v1::Taint& t);
// Lt/Gt (integer comparison of the taint's value against the toleration's) only with the
// TaintTolerationComparisonOperators gate.
bool toleratesTaint(const api::core::v1::Toleration& tol, const api::core::v1::Taint& taint,
                    bool enableComparisonOperators = false);

// Whether every taint is tolerated, and the tolerations used (the first that tolerates each taint).
struct MatchingTolerations {
  bool allTolerated = true;
  std::vector<api::core::v1::Toleration> used;
};
MatchingTolerations getMatchingTolerations(const std::vector<api::core::v1::Taint>& taints,
                                           const std::vector<api::core::v1::Toleration>& tolerations,
                                           bool enableComparisonOperators = false);

// Smallest tolerationSeconds of `tolerations`: 0 when there are none or one is <= 0, -1 (forever) when none
// sets tolerationSeconds.
std::chrono::seconds getMinTolerationTime(const std::vector<api::core::v1::Toleration>& tolerations);

// Taints of `a` not in `b` and of `b` not in `a` (by key+effect), as upstream's TaintSetDiff(a, b).
struct TaintDiff {
  std::vector<api::core::v1::Taint> toAdd, toRemove;
};
TaintDiff taintSetDiff(const std::vector<api::core::v1::Taint>& want, const std::vector<api::core::v1::Taint>& have);

}  // namespace kcm::controllers
