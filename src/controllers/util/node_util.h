#pragma once
// Node and pod writes shared by node-lifecycle and taint-eviction (upstream pkg/controller/controller_utils.go and
// pkg/controller/util/node): taint add/remove as merge patches guarded by the node's resourceVersion (retried on
// conflict against a fresh read), pods marked not Ready, and the node events both controllers record.
#include <memory>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "base/clock.h"
#include "base/status.h"
#include "client/events.h"
#include "client/rest_client.h"

namespace kcm::controllers {

// `cached` may be null (the node is then read from the API server). Taints already present (key+effect and
// equal) are left alone.
Status addOrUpdateTaintOnNode(client::RestClient& c, const std::string& nodeName,
                              std::shared_ptr<const api::core::v1::Node> cached,
                              const std::vector<api::core::v1::Taint>& taints);
// When `cached` is given and carries none of `taints`, nothing is written.
Status removeTaintOffNode(client::RestClient& c, const std::string& nodeName,
                          std::shared_ptr<const api::core::v1::Node> cached,
                          const std::vector<api::core::v1::Taint>& taints);
// Adds `toAdd` (timeAdded = the clock's wall time) then removes `toRemove`; false (logged) when either write failed.
bool swapNodeControllerTaint(client::RestClient& c, std::vector<api::core::v1::Taint> toAdd,
                             const std::vector<api::core::v1::Taint>& toRemove,
                             std::shared_ptr<const api::core::v1::Node> node, const Clock& clock);

// The condition of `type` in a node's status, or null (upstream GetNodeCondition).
const api::core::v1::NodeCondition* getNodeCondition(const api::core::v1::NodeStatus& s, const std::string& type);

// upstream UpdatePodCondition: sets or adds `cond` (lastTransitionTime `now` unless the status is unchanged);
// whether anything changed.
bool updatePodCondition(api::core::v1::PodStatus& status, api::core::v1::PodCondition cond, api::Time now);

// Sets Ready=False on each pod bound to `nodeName` whose Ready condition is not already False, with a
// NodeNotReady event; pods that are gone are skipped. The first error is returned after trying them all.
Status markPodsNotReady(client::RestClient& c, const client::EventRecorder& recorder,
                        const std::vector<std::shared_ptr<const api::core::v1::Pod>>& pods, const std::string& nodeName,
                        const Clock& clock);

// "Node <name> event: <message>" on the Node.
void recordNodeEvent(const client::EventRecorder& recorder, const std::string& nodeName, const std::string& nodeUID,
                     const std::string& type, const std::string& reason, const std::string& message);
// "Node <name> status is now: <status>" (reason = status).
void recordNodeStatusChange(const client::EventRecorder& recorder, const api::core::v1::Node& node,
                            const std::string& newStatus);

// Zone of a node for disruption accounting: "<region>:\0:<zone>" from the topology labels (beta labels as
// fallback), "" when neither is set.
std::string getZoneKey(const api::core::v1::Node& node);

}  // namespace kcm::controllers
