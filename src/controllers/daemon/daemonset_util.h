#pragma once
// Pure helpers of the daemonset controller (upstream pkg/controller/daemon/util, the node-affinity matcher of
// k8s.io/component-helpers/scheduling/corev1/nodeaffinity, and client-go's flowcontrol.Backoff used for failed
// daemon pods). No I/O.
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/gen/apps_v1.h"
#include "api/gen/core_v1.h"
#include "base/clock.h"
#include "base/status.h"

namespace kcm::controllers::daemon {

using api::apps::v1::DaemonSet;
using api::core::v1::Node;
using api::core::v1::Pod;

inline constexpr const char* kDaemonSetTemplateGenerationKey = "pod-template-generation";
inline constexpr const char* kDeprecatedTemplateGeneration = "deprecated.daemonset.template.generation";

// The deprecated template-generation annotation: nullopt when absent; an error when it does not parse.
Result<std::optional<int64_t>> getTemplateGeneration(const DaemonSet& ds);
// The generation when the annotation parses, else nullopt (the hash then decides alone).
std::optional<int64_t> templateGeneration(const DaemonSet& ds);
// Adds (or replaces, matched by key, operator, value and effect) the tolerations every daemon pod gets.
void addOrUpdateDaemonPodTolerations(api::core::v1::PodSpec& spec);
// The template's tolerations plus those every daemon pod gets (the template is not changed).
std::vector<api::core::v1::Toleration> daemonPodTolerations(const DaemonSet& ds);
// The pod template the controller creates from: daemon tolerations, the template-generation label when
// generation is set, the revision hash label when hash is not empty.
api::core::v1::PodTemplateSpec createPodTemplate(const api::core::v1::PodTemplateSpec& t,
                                                 std::optional<int64_t> generation, const std::string& hash);
Result<int> surgeCount(const DaemonSet& ds, int numberToSchedule);
Result<int> unavailableCount(const DaemonSet& ds, int numberToSchedule);
bool allowsSurge(const DaemonSet& ds);
bool isPodUpdated(const Pod& pod, const std::string& hash, std::optional<int64_t> dsTemplateGeneration);
// Makes the required node affinity select exactly nodeName through matchFields metadata.name.
void replaceDaemonSetPodNodeNameNodeAffinity(api::Box<api::core::v1::Affinity>& affinity, const std::string& nodeName);
// spec.nodeName, or for a pod not yet scheduled the node its metadata.name matchFields names.
Result<std::string> getTargetNodeName(const Pod& pod);

// nodeaffinity.RequiredNodeAffinity: the pod's nodeSelector AND any of its required node-affinity terms.
// Terms that do not parse are skipped (no match), as upstream's lazy-error selector.
class RequiredNodeAffinity {
 public:
  RequiredNodeAffinity(const api::StringMap<api::String>& nodeSelector, const api::Box<api::core::v1::Affinity>& a);
  bool match(const Node& node) const;

 private:
  const api::StringMap<api::String>* nodeSelector_;
  const api::core::v1::NodeSelector* required_ = nullptr;
};
// One term: matchExpressions on the labels and matchFields on metadata.name; nullopt when it does not parse.
std::optional<bool> nodeSelectorTermMatches(const api::core::v1::NodeSelectorTerm& term, const Node& node);

// client-go flowcontrol.Backoff without jitter: per-id delay starting at `initial`, doubling to `max`; an entry
// untouched for 2*max starts over. Thread-safe.
class FailedPodsBackoff {
 public:
  FailedPodsBackoff(Clock::Duration initial, Clock::Duration max) : initial_(initial), max_(max) {}
  Clock::Duration get(const std::string& id) const;
  void next(const std::string& id, Clock::TimePoint eventTime);
  bool isInBackOffSinceUpdate(const std::string& id, Clock::TimePoint eventTime) const;
  void gc(Clock::TimePoint now);
  size_t size() const;

 private:
  struct Entry {
    Clock::Duration backoff;
    Clock::TimePoint lastUpdate;
  };
  bool hasExpired(Clock::TimePoint eventTime, Clock::TimePoint lastUpdate) const {
    return eventTime - lastUpdate > 2 * max_;
  }
  Clock::Duration initial_, max_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace kcm::controllers::daemon
