#include "controllers/daemon/daemonset_util.h"

#include <algorithm>
#include <charconv>

#include "controllers/util/taints.h"

namespace kcm::controllers::daemon {

using api::core::v1::Toleration;

Result<std::optional<int64_t>> getTemplateGeneration(const DaemonSet& ds) {
  auto it = ds.metadata.annotations.find(kDeprecatedTemplateGeneration);
  if (it == ds.metadata.annotations.end()) return std::optional<int64_t>();
  int64_t v = 0;
  const std::string& s = it->second;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty())
    return Status(StatusCode::kInvalidArgument, "strconv.ParseInt: parsing \"" + s + "\": invalid syntax");
  return std::optional<int64_t>(v);
}

std::optional<int64_t> templateGeneration(const DaemonSet& ds) {
  auto g = getTemplateGeneration(ds);
  return g.ok() ? *g : std::nullopt;
}

namespace {
void addOrUpdateToleration(api::core::v1::PodSpec& spec, const char* key, const char* effect) {
  Toleration t;
  t.key = key;
  t.operator_ = "Exists";
  t.effect = effect;
  bool updated = false;
  for (auto& cur : spec.tolerations) {
    // Upstream compares a pointer with a value here, so a match is always replaced (tolerationSeconds dropped).
    if (cur.key == t.key && cur.effect == t.effect && cur.operator_ == t.operator_ && cur.value == t.value) {
      cur = t;
      updated = true;
    }
  }
  if (!updated) spec.tolerations.push_back(std::move(t));
}
}  // namespace

void addOrUpdateDaemonPodTolerations(api::core::v1::PodSpec& spec) {
  addOrUpdateToleration(spec, kTaintNodeNotReady, kTaintEffectNoExecute);
  addOrUpdateToleration(spec, kTaintNodeUnreachable, kTaintEffectNoExecute);
  addOrUpdateToleration(spec, kTaintNodeDiskPressure, kTaintEffectNoSchedule);
  addOrUpdateToleration(spec, kTaintNodeMemoryPressure, kTaintEffectNoSchedule);
  addOrUpdateToleration(spec, kTaintNodePIDPressure, kTaintEffectNoSchedule);
  addOrUpdateToleration(spec, kTaintNodeUnschedulable, kTaintEffectNoSchedule);
  if (spec.hostNetwork) addOrUpdateToleration(spec, kTaintNodeNetworkUnavailable, kTaintEffectNoSchedule);
}

std::vector<Toleration> daemonPodTolerations(const DaemonSet& ds) {
  api::core::v1::PodSpec spec;
  spec.tolerations = ds.spec.template_.spec.tolerations;
  spec.hostNetwork = ds.spec.template_.spec.hostNetwork;
  addOrUpdateDaemonPodTolerations(spec);
  return std::move(spec.tolerations);
}

api::core::v1::PodTemplateSpec createPodTemplate(const api::core::v1::PodTemplateSpec& t,
                                                 std::optional<int64_t> generation, const std::string& hash) {
  api::core::v1::PodTemplateSpec out = t;
  addOrUpdateDaemonPodTolerations(out.spec);
  if (generation) out.metadata.labels[kDaemonSetTemplateGenerationKey] = std::to_string(*generation);
  if (!hash.empty()) out.metadata.labels["controller-revision-hash"] = hash;
  return out;
}

namespace {
Result<int> scaled(const api::IntOrString& v, int total) {
  auto r = api::getScaledValueFromIntOrPercent(v, total, true);
  if (!r) return Status(StatusCode::kInvalidArgument, "invalid value for IntOrString: invalid value \"" + v.strVal + "\"");
  return *r;
}
}  // namespace

Result<int> surgeCount(const DaemonSet& ds, int numberToSchedule) {
  const auto& s = ds.spec.updateStrategy;
  if (s.type != "RollingUpdate" || !s.rollingUpdate || !s.rollingUpdate->maxSurge) return 0;
  return scaled(*s.rollingUpdate->maxSurge, numberToSchedule);
}

Result<int> unavailableCount(const DaemonSet& ds, int numberToSchedule) {
  const auto& s = ds.spec.updateStrategy;
  if (s.type != "RollingUpdate" || !s.rollingUpdate) return 0;
  if (!s.rollingUpdate->maxUnavailable) return 0;  // upstream scales a nil IntOrString to 0
  return scaled(*s.rollingUpdate->maxUnavailable, numberToSchedule);
}

bool allowsSurge(const DaemonSet& ds) {
  auto r = surgeCount(ds, 1);
  return r.ok() && *r > 0;
}

bool isPodUpdated(const Pod& pod, const std::string& hash, std::optional<int64_t> dsTemplateGeneration) {
  const auto& l = pod.metadata.labels;
  auto gen = l.find(kDaemonSetTemplateGenerationKey);
  const bool templateMatches = dsTemplateGeneration && gen != l.end() && gen->second == std::to_string(*dsTemplateGeneration);
  auto h = l.find("controller-revision-hash");
  const bool hashMatches = !hash.empty() && h != l.end() && h->second == hash;
  return hashMatches || templateMatches;
}

void replaceDaemonSetPodNodeNameNodeAffinity(api::Box<api::core::v1::Affinity>& affinity, const std::string& nodeName) {
  api::core::v1::NodeSelectorRequirement req;
  req.key = "metadata.name";
  req.operator_ = "In";
  req.values = {nodeName};
  api::core::v1::NodeSelectorTerm term;
  term.matchFields.push_back(std::move(req));
  if (!affinity) affinity.emplace();
  if (!affinity->nodeAffinity) affinity->nodeAffinity.emplace();
  auto& na = *affinity->nodeAffinity;
  if (!na.requiredDuringSchedulingIgnoredDuringExecution) na.requiredDuringSchedulingIgnoredDuringExecution.emplace();
  na.requiredDuringSchedulingIgnoredDuringExecution->nodeSelectorTerms = {std::move(term)};
}

Result<std::string> getTargetNodeName(const Pod& pod) {
  if (!pod.spec.nodeName.empty()) return pod.spec.nodeName.str();
  const std::string who = pod.metadata.namespace_ + "/" + pod.metadata.name;
  const auto& a = pod.spec.affinity;
  if (!a || !a->nodeAffinity || !a->nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution)
    return Status(StatusCode::kNotFound,
                  "no spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution for pod " + who);
  const auto& terms = a->nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution->nodeSelectorTerms;
  if (terms.empty())
    return Status(StatusCode::kNotFound, "no nodeSelectorTerms in requiredDuringSchedulingIgnoredDuringExecution of pod " + who);
  for (const auto& t : terms)
    for (const auto& e : t.matchFields)
      if (e.key == "metadata.name" && e.operator_ == "In") {
        if (e.values.size() != 1)
          return Status(StatusCode::kInvalidArgument, "the matchFields value of 'metadata.name' is not unique for pod " + who);
        return e.values[0].str();
      }
  return Status(StatusCode::kNotFound, "no node name found for pod " + who);
}

// --- node affinity ---

namespace {
std::optional<int64_t> parseInt64(const std::string& s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// One matchExpressions requirement on the node's labels; nullopt when it does not parse.
std::optional<bool> labelRequirementMatches(const api::core::v1::NodeSelectorRequirement& r,
                                            const api::StringMap<api::String>& labels) {
  auto it = labels.find(r.key);
  const bool has = it != labels.end();
  const auto& op = r.operator_;
  if (op == "In" || op == "NotIn") {
    if (r.values.empty()) return std::nullopt;
    const bool in = has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    return op == "In" ? in : !in;
  }
  if (op == "Exists" || op == "DoesNotExist") {
    if (!r.values.empty()) return std::nullopt;
    return op == "Exists" ? has : !has;
  }
  if (op == "Gt" || op == "Lt") {
    if (r.values.size() != 1) return std::nullopt;
    auto want = parseInt64(r.values[0]);
    if (!want) return std::nullopt;
    if (!has) return false;
    auto got = parseInt64(it->second);
    if (!got) return false;
    return op == "Gt" ? *got > *want : *got < *want;
  }
  return std::nullopt;
}
}  // namespace

std::optional<bool> nodeSelectorTermMatches(const api::core::v1::NodeSelectorTerm& term, const Node& node) {
  bool ok = true;
  for (const auto& r : term.matchExpressions) {
    auto m = labelRequirementMatches(r, node.metadata.labels);
    if (!m) return std::nullopt;
    ok = ok && *m;
  }
  for (const auto& r : term.matchFields) {
    if ((r.operator_ != "In" && r.operator_ != "NotIn") || r.values.size() != 1) return std::nullopt;
    // Only metadata.name is a node field; an unknown key reads as "".
    const std::string value = r.key == "metadata.name" ? node.metadata.name : "";
    // A node without a name has no fields, and upstream then skips the field check.
    if (node.metadata.name.empty()) continue;
    ok = ok && ((value == r.values[0]) == (r.operator_ == "In"));
  }
  return ok;
}

RequiredNodeAffinity::RequiredNodeAffinity(const api::StringMap<api::String>& nodeSelector,
                                           const api::Box<api::core::v1::Affinity>& a)
    : nodeSelector_(&nodeSelector) {
  if (a && a->nodeAffinity && a->nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution)
    required_ = &*a->nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution;
}

bool RequiredNodeAffinity::match(const Node& node) const {
  for (const auto& [k, v] : *nodeSelector_) {
    auto it = node.metadata.labels.find(k);
    if (it == node.metadata.labels.end() || it->second != v) return false;
  }
  if (!required_) return true;
  for (const auto& term : required_->nodeSelectorTerms) {
    if (term.matchExpressions.empty() && term.matchFields.empty()) continue;  // an empty term matches nothing
    auto m = nodeSelectorTermMatches(term, node);
    if (m && *m) return true;
  }
  return false;
}

// --- failed pods back-off ---

Clock::Duration FailedPodsBackoff::get(const std::string& id) const {
  std::lock_guard l(mu_);
  auto it = entries_.find(id);
  return it == entries_.end() ? Clock::Duration::zero() : it->second.backoff;
}

void FailedPodsBackoff::next(const std::string& id, Clock::TimePoint eventTime) {
  std::lock_guard l(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || hasExpired(eventTime, it->second.lastUpdate)) {
    entries_[id] = Entry{initial_, eventTime};
    return;
  }
  it->second.backoff = std::min(it->second.backoff * 2, max_);
  it->second.lastUpdate = eventTime;
}

bool FailedPodsBackoff::isInBackOffSinceUpdate(const std::string& id, Clock::TimePoint eventTime) const {
  std::lock_guard l(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || hasExpired(eventTime, it->second.lastUpdate)) return false;
  return eventTime - it->second.lastUpdate < it->second.backoff;
}

void FailedPodsBackoff::gc(Clock::TimePoint now) {
  std::lock_guard l(mu_);
  std::erase_if(entries_, [&](const auto& kv) { return hasExpired(now, kv.second.lastUpdate); });
}

size_t FailedPodsBackoff::size() const {
  std::lock_guard l(mu_);
  return entries_.size();
}

}  // namespace kcm::controllers::daemon
