#pragma once
// ControllerRevision helpers shared by the daemonset and statefulset controllers (upstream
// pkg/controller/history and the revision parts of pkg/controller/daemon/update.go): revision names and hashes,
// the order of a history, the "restore the template" patch a revision stores, and the claim (adopt/release) of
// revisions through the controller-ref manager.
//
// Bytes matter here: a revision is matched to its owner by comparing `data` byte for byte, so the patch must be
// what upstream's json.Marshal of a map writes (keys sorted at every level, HTML-safe escapes). A revision written
// by upstream kcm is then recognised by ours, and the other way round.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/gen/apps_v1.h"
#include "base/status.h"

namespace kcm::controllers::history {

using api::apps::v1::ControllerRevision;
using RevisionPtr = std::shared_ptr<const ControllerRevision>;

inline constexpr const char* kControllerRevisionHashLabel = "controller.kubernetes.io/hash";
// apps.DefaultDaemonSetUniqueLabelKey / ControllerRevisionHashLabelKey
inline constexpr const char* kDefaultDaemonSetUniqueLabelKey = "controller-revision-hash";
inline constexpr const char* kControllerRevisionControllerIndex = "controllerRevisionController";

// "<ns>/<kind>/<name>/<uid>" of the controller, or "<ns>" for orphans (upstream ControllerRevisionControllerIndexKey).
std::string controllerRevisionControllerIndexKey(const std::string& ns, const api::meta::v1::OwnerReference* ref);
std::vector<std::string> controllerRevisionControllerIndexKeys(const ControllerRevision& r);

// prefix (at most 223 bytes) + "-" + hash.
std::string controllerRevisionName(const std::string& prefix, const std::string& hash);
// FNV-32 (not 32a) of data, then the decimal of probe when given, as rand.SafeEncodeString of the decimal sum.
std::string hashControllerRevision(const std::string& data, std::optional<int32_t> probe);
// rand.SafeEncodeString: each byte mapped into an alphabet without vowels.
std::string safeEncodeString(const std::string& s);

// Stable by revision, then creation time, then name (upstream SortControllerRevisions).
void sortControllerRevisions(std::vector<RevisionPtr>& revisions);
bool equalRevision(const ControllerRevision& a, const ControllerRevision& b);  // data byte-equal
std::vector<RevisionPtr> findEqualRevisions(const std::vector<RevisionPtr>& revisions,
                                            const ControllerRevision& needle);
int64_t maxRevision(const std::vector<RevisionPtr>& revisions);

// Go's json.Marshal of a decoded map: keys sorted bytewise at every level, Go's string escapes.
std::string goMarshalSorted(const nlohmann::json& j);
// {"spec":{"template":{<objectJson's spec.template>,"$patch":"replace"}}} as upstream's getPatch writes it.
// objectJson: the owner encoded as upstream's json.Marshal would (our toJson).
Result<std::string> templateReplacePatch(const std::string& objectJson);

}  // namespace kcm::controllers::history
