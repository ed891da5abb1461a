#include "controllers/job/job_utils.h"

#include <algorithm>
#include <charconv>
#include <climits>

#include <nlohmann/json.hpp>

#include "base/log.h"

namespace kcm::controllers::job {

namespace {

std::optional<long long> parseInt(std::string_view s) {
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

int32_t parseInt32Annotation(const Pod& p, const char* key, bool logMissing) {
  auto it = p.metadata.annotations.find(key);
  if (it == p.metadata.annotations.end()) {
    if (logMissing)
      KLOG_V(3, "\"There is no expected annotation\" annotationKey=\"" + std::string(key) + "\" pod=\"" +
                    podKey(p) + "\" podUID=\"" + p.metadata.uid + "\"");
    return 0;
  }
  auto v = parseInt(it->second);
  if (!v) {
    KLOG_ERROR("\"Failed to parse the value\" value=\"" + it->second + "\"");
    return 0;
  }
  if (*v < 0 || *v > INT32_MAX) {
    KLOG_INFO("\"The value is invalid\" value=" + std::to_string(*v));
    return 0;
  }
  return static_cast<int32_t>(*v);
}

int32_t parseIndexFailureCountAnnotation(const Pod& p) {
  return parseInt32Annotation(p, kJobIndexFailureCountAnnotation, true);
}
int32_t parseIndexFailureIgnoreCountAnnotation(const Pod& p) {
  return parseInt32Annotation(p, kJobIndexIgnoredFailureCountAnnotation, false);
}

}  // namespace

// --- job predicates ---

bool isIndexedJob(const Job& j) { return j.spec.completionMode.value_or("") == "Indexed"; }
bool hasBackoffLimitPerIndex(const Job& j) { return j.spec.backoffLimitPerIndex.has_value(); }
bool jobSuspended(const Job& j) { return j.spec.suspend.value_or(false); }
bool onlyReplaceFailedPods(const Job& j) { return j.spec.podReplacementPolicy.value_or("") == "Failed"; }
std::string completionModeStr(const Job& j) { return j.spec.completionMode.value_or("NonIndexed"); }

bool isJobFinished(const Job& j) {
  for (const auto& c : j.status.conditions)
    if ((c.type == "Complete" || c.type == "Failed") && c.status == "True") return true;
  return false;
}

const JobCondition* findConditionByType(const std::vector<JobCondition>& list, const std::string& type) {
  for (const auto& c : list)
    if (c.type == type) return &c;
  return nullptr;
}
JobCondition* findConditionByType(std::vector<JobCondition>& list, const std::string& type) {
  for (auto& c : list)
    if (c.type == type) return &c;
  return nullptr;
}

JobCondition newCondition(const std::string& type, const std::string& status, const std::string& reason,
                          const std::string& message, api::Time now) {
  JobCondition c;
  c.type = type;
  c.status = status;
  c.lastProbeTime = now;
  c.lastTransitionTime = now;
  c.reason = reason;
  c.message = message;
  return c;
}

bool ensureJobConditionStatus(std::vector<JobCondition>& list, const std::string& type, const std::string& status,
                              const std::string& reason, const std::string& message, api::Time now) {
  if (JobCondition* c = findConditionByType(list, type)) {
    if (c->status == status && c->reason == reason && c->message == message) return false;
    *c = newCondition(type, status, reason, message, now);
    return true;
  }
  if (status == "False") return false;
  list.push_back(newCondition(type, status, reason, message, now));
  return true;
}

// --- pods ---

bool hasJobTrackingFinalizer(const Pod& p) {
  const auto& f = p.metadata.finalizers;
  return std::find(f.begin(), f.end(), kJobTrackingFinalizer) != f.end();
}

bool isPodFailed(const Pod& p, const Job& j) {
  if (p.status.phase == "Failed") return true;
  if (onlyReplaceFailedPods(j)) return false;
  return p.metadata.deletionTimestamp.has_value() && p.status.phase != "Succeeded";
}

int getCompletionIndex(const api::StringMap<api::String>& annotations) {
  auto it = annotations.find(kJobCompletionIndexAnnotation);
  if (it == annotations.end()) return kUnknownCompletionIndex;
  auto v = parseInt(it->second);
  if (!v || *v < 0 || *v > INT_MAX) return kUnknownCompletionIndex;
  return static_cast<int>(*v);
}

int32_t getIndexFailureCount(const Pod& p) { return parseIndexFailureCountAnnotation(p); }
int32_t getIndexAbsoluteFailureCount(const Pod& p) {
  return parseIndexFailureCountAnnotation(p) + parseIndexFailureIgnoreCountAnnotation(p);
}

std::string podGenerateNameWithIndex(const std::string& jobName, int index) {
  const std::string appendIndex = "-" + std::to_string(index) + "-";
  std::string prefix = jobName + appendIndex;
  if (prefix.size() > kMaxGeneratedNameLength)
    prefix = prefix.substr(0, kMaxGeneratedNameLength - appendIndex.size()) + appendIndex;
  return prefix;
}

void addCompletionIndexEnvVariables(api::core::v1::PodTemplateSpec& t) {
  auto add = [](api::core::v1::Container& c) {
    for (const auto& e : c.env)
      if (e.name == kCompletionIndexEnvName) return;
    api::core::v1::EnvVar v;
    v.name = kCompletionIndexEnvName;
    v.valueFrom.emplace().fieldRef.emplace().fieldPath =
        std::string("metadata.labels['") + kJobCompletionIndexAnnotation + "']";
    c.env.push_back(std::move(v));
  };
  for (auto& c : t.spec.initContainers) add(c);
  for (auto& c : t.spec.containers) add(c);
}

std::optional<std::string> removeTrackingFinalizerPatch(const Pod& p) {
  if (!hasJobTrackingFinalizer(p)) return std::nullopt;
  return nlohmann::json(
             {{"metadata", {{"$deleteFromPrimitiveList/finalizers", nlohmann::json::array({kJobTrackingFinalizer})}}}})
      .dump();
}

// --- ordered intervals ---

OrderedIntervals OrderedIntervals::parse(const std::string& s, int completions) {
  std::vector<Interval> out;
  if (s.empty()) return OrderedIntervals();
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string_view piece(s.data() + start, (comma == std::string::npos ? s.size() : comma) - start);
    start = comma == std::string::npos ? s.size() + 1 : comma + 1;
    size_t dash = piece.find('-');
    auto first = parseInt(piece.substr(0, dash));
    if (!first || *first > INT_MAX || *first < INT_MIN) {
      KLOG_INFO("\"Corrupted indexes interval, ignoring\" interval=\"" + std::string(piece) + "\"");
      continue;
    }
    Interval iv{static_cast<int>(*first), static_cast<int>(*first)};
    if (iv.first >= completions) break;
    if (dash != std::string_view::npos) {
      std::string_view rest = piece.substr(dash + 1);
      // strings.Split: "1-2-3" has a second element "2".
      auto last = parseInt(rest.substr(0, rest.find('-')));
      if (!last || *last > INT_MAX || *last < INT_MIN) {
        KLOG_INFO("\"Corrupted indexes interval, ignoring\" interval=\"" + std::string(piece) + "\"");
        continue;
      }
      iv.last = static_cast<int>(std::min<long long>(*last, completions - 1));
    }
    if (!out.empty() && out.back().last == iv.first - 1) out.back().last = iv.last;
    else out.push_back(iv);
  }
  return OrderedIntervals(std::move(out));
}

OrderedIntervals OrderedIntervals::withOrderedIndexes(const std::vector<int>& ascending) const {
  std::vector<Interval> n;
  n.reserve(ascending.size());
  for (int i : ascending) n.push_back({i, i});
  return merge(OrderedIntervals(std::move(n)));
}

OrderedIntervals OrderedIntervals::merge(const OrderedIntervals& o) const {
  std::vector<Interval> out;
  auto put = [&](const Interval& iv) {
    if (out.empty() || iv.first > out.back().last + 1) out.push_back(iv);
    else if (out.back().last < iv.last) out.back().last = iv.last;
  };
  size_t i = 0, j = 0;
  while (i < v_.size() && j < o.v_.size()) {
    if (v_[i].first < o.v_[j].first) put(v_[i++]);
    else put(o.v_[j++]);
  }
  while (i < v_.size()) put(v_[i++]);
  while (j < o.v_.size()) put(o.v_[j++]);
  return OrderedIntervals(std::move(out));
}

int OrderedIntervals::total() const {
  int n = 0;
  for (const auto& iv : v_) n += iv.last - iv.first + 1;
  return n;
}

bool OrderedIntervals::has(int ix) const {
  auto it = std::lower_bound(v_.begin(), v_.end(), ix, [](const Interval& iv, int x) { return iv.last < x; });
  return it != v_.end() && it->first <= ix;
}

std::string OrderedIntervals::toString() const {
  std::string out;
  for (const auto& iv : v_) {
    if (!out.empty()) out += ',';
    out += std::to_string(iv.first);
    if (iv.last > iv.first) {
      out += iv.last == iv.first + 1 ? ',' : '-';
      out += std::to_string(iv.last);
    }
  }
  return out;
}

// --- pod failure policy ---

namespace {

bool exitCodeMatches(int32_t code, const api::batch::v1::PodFailurePolicyOnExitCodesRequirement& r) {
  const bool in = std::find(r.values.begin(), r.values.end(), code) != r.values.end();
  if (r.operator_ == "In") return in;
  if (r.operator_ == "NotIn") return !in;
  return false;
}

const api::core::v1::ContainerStatus* matchingContainer(
    const std::vector<api::core::v1::ContainerStatus>& statuses,
    const api::batch::v1::PodFailurePolicyOnExitCodesRequirement& r) {
  for (const auto& cs : statuses) {
    if (!cs.state.terminated) continue;
    if (r.containerName && *r.containerName != cs.name) continue;
    const int32_t code = cs.state.terminated->exitCode;
    if (code != 0 && exitCodeMatches(code, r)) return &cs;
  }
  return nullptr;
}

}  // namespace

PodFailurePolicyMatch matchPodFailurePolicy(const api::batch::v1::PodFailurePolicy* policy, const Pod& pod) {
  PodFailurePolicyMatch m;
  if (!policy) return m;
  for (size_t index = 0; index < policy->rules.size(); ++index) {
    const auto& rule = policy->rules[index];
    std::string failJobMessage;
    bool matched = false;
    if (rule.onExitCodes) {
      const auto* cs = matchingContainer(pod.status.containerStatuses, *rule.onExitCodes);
      if (!cs) cs = matchingContainer(pod.status.initContainerStatuses, *rule.onExitCodes);
      if (cs) {
        matched = true;
        failJobMessage = "Container " + cs->name + " for pod " + podKey(pod) + " failed with exit code " +
                         std::to_string(cs->state.terminated->exitCode) + " matching " + rule.action +
                         " rule at index " + std::to_string(index);
      }
    } else if (!rule.onPodConditions.empty()) {
      for (const auto& c : pod.status.conditions) {
        for (const auto& pattern : rule.onPodConditions)
          if (c.type == pattern.type && c.status == pattern.status) {
            matched = true;
            failJobMessage = "Pod " + podKey(pod) + " has condition " + c.type + " matching " + rule.action +
                             " rule at index " + std::to_string(index);
            break;
          }
        if (matched) break;
      }
    }
    if (!matched) continue;
    if (rule.action == "Ignore") return {std::nullopt, false, rule.action};
    if (rule.action == "FailIndex" || rule.action == "Count") return {std::nullopt, true, rule.action};
    if (rule.action == "FailJob") return {failJobMessage, true, rule.action};
    // An action this build does not know: the rule is passed over, as upstream's switch does.
  }
  return m;
}

// --- success policy ---

namespace {
bool matchSucceededIndexesRule(const OrderedIntervals& rule, const OrderedIntervals& succeeded,
                               const std::optional<int32_t>& succeededCount) {
  const auto& r = rule.intervals();
  const auto& s = succeeded.intervals();
  int contains = 0;
  size_t ri = 0, si = 0;
  while (ri < r.size() && si < s.size()) {
    int overlap = std::min(r[ri].last, s[si].last) - std::max(r[ri].first, s[si].first) + 1;
    if (overlap > 0) contains += overlap;
    if (s[si].last < r[ri].last) ++si;
    else if (s[si].last > r[ri].last) ++ri;
    else ++si, ++ri;
  }
  return contains == rule.total() || (succeededCount && contains >= *succeededCount);
}
}  // namespace

std::optional<std::string> matchSuccessPolicy(const api::batch::v1::SuccessPolicy* policy, int32_t completions,
                                              const OrderedIntervals& succeededIndexes) {
  if (!policy || succeededIndexes.empty()) return std::nullopt;
  for (size_t index = 0; index < policy->rules.size(); ++index) {
    const auto& rule = policy->rules[index];
    const std::string msg = "Matched rules at index " + std::to_string(index);
    if (rule.succeededIndexes) {
      auto required = OrderedIntervals::parse(*rule.succeededIndexes, completions);
      if (required.empty()) continue;
      if (matchSucceededIndexesRule(required, succeededIndexes, rule.succeededCount)) return msg;
    } else if (rule.succeededCount && succeededIndexes.total() >= *rule.succeededCount) {
      return msg;
    }
  }
  return std::nullopt;
}

// --- back-off ---

namespace {

// The latest finishedAt of the containers (regular, then sidecars); nullopt when any of them has not terminated.
std::optional<WallTime> finishTimeFromContainers(const Pod& p) {
  std::optional<api::Time> latest;
  auto scan = [&](const std::vector<api::core::v1::ContainerStatus>& cs, const std::set<std::string>* only) -> bool {
    for (const auto& c : cs) {
      if (only && !only->count(c.name)) continue;
      if (!c.state.terminated || c.state.terminated->finishedAt.isZero()) return false;
      if (!latest || *latest < c.state.terminated->finishedAt) latest = c.state.terminated->finishedAt;
    }
    return true;
  };
  if (!scan(p.status.containerStatuses, nullptr)) return std::nullopt;
  std::set<std::string> sidecars;
  for (const auto& c : p.spec.initContainers)
    if (c.restartPolicy.value_or("") == "Always") sidecars.insert(c.name);
  if (!scan(p.status.initContainerStatuses, &sidecars)) return std::nullopt;
  if (!latest) return std::nullopt;
  return toWallTime(*latest);
}

}  // namespace

WallTime getFinishedTime(const Pod& p) {
  if (auto t = finishTimeFromContainers(p)) return *t;
  if (const auto* c = podReadyCondition(p); c && c->status == "False" && !c->lastTransitionTime.isZero())
    return toWallTime(c->lastTransitionTime);
  if (p.metadata.deletionTimestamp)
    return toWallTime(*p.metadata.deletionTimestamp) -
           std::chrono::seconds(p.metadata.deletionGracePeriodSeconds.value_or(0));
  if (p.metadata.creationTimestamp.isZero()) return WallTime{};
  return toWallTime(p.metadata.creationTimestamp);
}

Clock::Duration getRemainingTimeForFailuresCount(WallTime now, Clock::Duration defaultBackoff,
                                                 Clock::Duration maxBackoff, int32_t failures,
                                                 std::optional<WallTime> lastFailure) {
  if (failures == 0 || !lastFailure) return Clock::Duration::zero();
  Clock::Duration backoff = defaultBackoff;
  for (int i = 1; i < failures; ++i) {
    backoff *= 2;
    if (backoff >= maxBackoff) {
      backoff = maxBackoff;
      break;
    }
  }
  const auto elapsed = std::chrono::duration_cast<Clock::Duration>(now - *lastFailure);
  if (backoff < elapsed) return Clock::Duration::zero();
  return backoff - elapsed;
}

BackoffRecord BackoffStore::newBackoffRecord(const std::string& key, std::vector<PodPtr> newSucceeded,
                                             std::vector<PodPtr> newFailed) const {
  BackoffRecord b;
  b.key = key;
  if (auto old = get(key)) b = *old;
  auto byFinish = [](const PodPtr& a, const PodPtr& c) { return getFinishedTime(*a) < getFinishedTime(*c); };
  std::stable_sort(newSucceeded.begin(), newSucceeded.end(), byFinish);
  std::stable_sort(newFailed.begin(), newFailed.end(), byFinish);
  if (newSucceeded.empty()) {
    if (newFailed.empty()) return b;
    b.failuresAfterLastSuccess += static_cast<int32_t>(newFailed.size());
    b.lastFailureTime = getFinishedTime(*newFailed.back());
    return b;
  }
  b.failuresAfterLastSuccess = 0;
  b.lastFailureTime.reset();
  if (newFailed.empty()) return b;
  const WallTime lastSuccess = getFinishedTime(*newSucceeded.back());
  for (auto it = newFailed.rbegin(); it != newFailed.rend(); ++it) {
    const WallTime failed = getFinishedTime(**it);
    if (!(failed > lastSuccess)) break;
    if (!b.lastFailureTime) b.lastFailureTime = failed;
    ++b.failuresAfterLastSuccess;
  }
  return b;
}

void BackoffStore::updateBackoffRecord(const BackoffRecord& r) {
  std::lock_guard l(mu_);
  records_[r.key] = r;
}

void BackoffStore::removeBackoffRecord(const std::string& key) {
  std::lock_guard l(mu_);
  records_.erase(key);
}

std::optional<BackoffRecord> BackoffStore::get(const std::string& key) const {
  std::lock_guard l(mu_);
  auto it = records_.find(key);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

// --- finalizer expectations ---

std::set<std::string> FinalizerExpectations::getExpectedUIDs(const std::string& jobKey) const {
  std::lock_guard l(mu_);
  auto it = uids_.find(jobKey);
  return it == uids_.end() ? std::set<std::string>{} : it->second;
}

void FinalizerExpectations::expectFinalizersRemoved(const std::string& jobKey, const std::vector<std::string>& uids) {
  KLOG_V(4, "\"Expecting tracking finalizers removed\" key=\"" + jobKey + "\" count=" + std::to_string(uids.size()));
  std::lock_guard l(mu_);
  uids_[jobKey].insert(uids.begin(), uids.end());
}

void FinalizerExpectations::finalizerRemovalObserved(const std::string& jobKey, const std::string& uid) {
  std::lock_guard l(mu_);
  auto it = uids_.find(jobKey);
  if (it != uids_.end() && it->second.erase(uid))
    KLOG_V(4, "\"Observed tracking finalizer removed\" key=\"" + jobKey + "\" podUID=\"" + uid + "\"");
}

void FinalizerExpectations::deleteExpectations(const std::string& jobKey) {
  std::lock_guard l(mu_);
  uids_.erase(jobKey);
}

// --- indexed jobs over pod lists ---

void sortByCompletionIndex(std::vector<PodPtr>& pods) {
  std::stable_sort(pods.begin(), pods.end(), [](const PodPtr& a, const PodPtr& b) {
    return getCompletionIndex(a->metadata.annotations) < getCompletionIndex(b->metadata.annotations);
  });
}

std::set<int> getIndexes(const std::vector<PodPtr>& pods) {
  std::set<int> out;
  for (const auto& p : pods)
    if (int ix = getCompletionIndex(p->metadata.annotations); ix != kUnknownCompletionIndex) out.insert(ix);
  return out;
}

std::pair<OrderedIntervals, OrderedIntervals> calculateSucceededIndexes(const Job& j,
                                                                        const std::vector<PodPtr>& pods) {
  const int completions = j.spec.completions.value_or(0);
  auto prev = OrderedIntervals::parse(j.status.completedIndexes, completions);
  std::set<int> fresh;
  for (const auto& p : pods) {
    int ix = getCompletionIndex(p->metadata.annotations);
    if (p->status.phase == "Succeeded" && ix != kUnknownCompletionIndex && ix < completions &&
        hasJobTrackingFinalizer(*p))
      fresh.insert(ix);
  }
  return {prev, prev.withOrderedIndexes({fresh.begin(), fresh.end()})};
}

bool isIndexFailed(const Job& j, const Pod& p) {
  bool counted = false;
  if (isPodFailed(p, j)) {
    if (j.spec.podFailurePolicy) {
      auto m = matchPodFailurePolicy(j.spec.podFailurePolicy.operator->(), p);
      if (m.action && *m.action == "FailIndex") return true;
      counted = m.countFailed;
    } else {
      counted = true;
    }
  }
  return counted && getIndexFailureCount(p) >= j.spec.backoffLimitPerIndex.value_or(0);
}

OrderedIntervals calculateFailedIndexes(const Job& j, const std::vector<PodPtr>& pods) {
  const int completions = j.spec.completions.value_or(0);
  OrderedIntervals prev;
  if (j.status.failedIndexes) prev = OrderedIntervals::parse(*j.status.failedIndexes, completions);
  std::set<int> fresh;
  for (const auto& p : pods) {
    int ix = getCompletionIndex(p->metadata.annotations);
    if (ix != kUnknownCompletionIndex && ix < completions && hasJobTrackingFinalizer(*p) && isIndexFailed(j, *p))
      fresh.insert(ix);
  }
  return prev.withOrderedIndexes({fresh.begin(), fresh.end()});
}

std::pair<std::vector<PodPtr>, std::vector<PodPtr>> appendDuplicatedIndexPodsForRemoval(std::vector<PodPtr> pods,
                                                                                       int completions) {
  std::vector<PodPtr> rm, left;
  auto flush = [&](std::vector<PodPtr> same, int ix) {
    if (same.empty()) return;
    if (ix == kUnknownCompletionIndex) {
      rm.insert(rm.end(), same.begin(), same.end());
      return;
    }
    if (same.size() == 1) {
      left.push_back(same[0]);
      return;
    }
    sortActivePods(same);
    rm.insert(rm.end(), same.begin(), same.end() - 1);
    left.push_back(same.back());
  };
  sortByCompletionIndex(pods);
  int lastIndex = kUnknownCompletionIndex;
  std::vector<PodPtr> same;
  for (size_t i = 0; i < pods.size(); ++i) {
    int ix = getCompletionIndex(pods[i]->metadata.annotations);
    if (ix >= completions) {
      rm.insert(rm.end(), pods.begin() + static_cast<std::ptrdiff_t>(i), pods.end());
      break;
    }
    if (ix != lastIndex) {
      flush(std::move(same), lastIndex);
      same.clear();
      lastIndex = ix;
    }
    same.push_back(pods[i]);
  }
  flush(std::move(same), lastIndex);
  return {rm, left};
}

std::pair<int32_t, int32_t> getNewIndexFailureCounts(const Job& j, const Pod* replaced) {
  if (!replaced) return {0, 0};
  int32_t counted = parseIndexFailureCountAnnotation(*replaced);
  int32_t ignored = parseIndexFailureIgnoreCountAnnotation(*replaced);
  if (j.spec.podFailurePolicy) {
    if (matchPodFailurePolicy(j.spec.podFailurePolicy.operator->(), *replaced).countFailed) ++counted;
    else ++ignored;
  } else {
    ++counted;
  }
  return {counted, ignored};
}

}  // namespace kcm::controllers::job
