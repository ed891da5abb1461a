// Deployment arithmetic and bookkeeping (controllers/deployment/util), table-driven after the cases of upstream's
// pkg/controller/deployment/util tests (v1.37.2): template identity, finding new/old ReplicaSets, replica counts,
// fenceposts, conditions, completeness/progress/timeout checks, annotations and proportional-scaling fractions.
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <climits>
#include <set>
#include <string>
#include <vector>

#include "api/gen/core_v1_codec.h"
#include "api/support/codec.h"
#include "base/clock.h"
#include "controllers/deployment/util/deployment_util.h"

namespace kcm::controllers::deploymentutil {
namespace {

using api::IntOrString;
using api::core::v1::PodTemplateSpec;
using namespace std::chrono_literals;

// A readable, unique gtest name for a table row.
template <class Case>
std::string rowName(const ::testing::TestParamInfo<Case>& info) {
  std::string out = std::to_string(info.index) + "_";
  for (char c : std::string(info.param.name)) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

api::Time at(int64_t unixSeconds) { return api::Time::fromUnix(unixSeconds); }

// An nginx-like Deployment: the template carries a full pod spec, its labels are {name: image}.
Deployment generateDeployment(const std::string& image) {
  Deployment d;
  d.metadata.name = image;
  d.spec.replicas = 1;
  api::meta::v1::LabelSelector sel;
  sel.matchLabels["name"] = image;
  d.spec.selector = sel;
  d.spec.template_.metadata.labels["name"] = image;
  api::core::v1::Container c;
  c.name = image;
  c.image = image;
  c.imagePullPolicy = "Always";
  c.terminationMessagePath = "/dev/termination-log";
  d.spec.template_.spec.containers.push_back(c);
  d.spec.template_.spec.dnsPolicy = "ClusterFirst";
  d.spec.template_.spec.terminationGracePeriodSeconds = 30;
  d.spec.template_.spec.restartPolicy = "Always";
  d.spec.template_.spec.securityContext = api::core::v1::PodSecurityContext{};
  d.spec.template_.spec.enableServiceLinks = true;
  return d;
}

// A ReplicaSet of d (a copy of its template and labels), with zero replicas and a unique name and uid.
ReplicaSet generateRS(const Deployment& d) {
  static int seq = 0;
  ++seq;
  ReplicaSet rs;
  rs.metadata.uid = "rs-uid-" + std::to_string(seq);
  rs.metadata.name = d.metadata.name + "-" + std::to_string(seq);
  rs.metadata.labels = d.spec.template_.metadata.labels;
  api::meta::v1::OwnerReference ref;
  ref.apiVersion = "apps/v1";
  ref.kind = "Deployment";
  ref.name = d.metadata.name;
  ref.uid = d.metadata.uid;
  ref.controller = true;
  rs.metadata.ownerReferences.push_back(ref);
  rs.spec.replicas = 0;
  rs.spec.template_ = d.spec.template_;
  api::meta::v1::LabelSelector sel;
  sel.matchLabels = d.spec.template_.metadata.labels;
  rs.spec.selector = sel;
  return rs;
}

RSPtr ptr(const ReplicaSet& rs) { return std::make_shared<const ReplicaSet>(rs); }

Deployment rollingDeployment(int32_t replicas, IntOrString surge, IntOrString unavailable) {
  Deployment d;
  d.spec.replicas = replicas;
  d.spec.strategy.type = "RollingUpdate";
  api::apps::v1::RollingUpdateDeployment ru;
  ru.maxSurge = surge;
  ru.maxUnavailable = unavailable;
  d.spec.strategy.rollingUpdate = ru;
  return d;
}

// "type/status/reason" of each condition, in order.
std::vector<std::string> conditionKeys(const DeploymentStatus& s) {
  std::vector<std::string> out;
  for (const auto& c : s.conditions) out.push_back(c.type + "/" + c.status + "/" + c.reason);
  return out;
}

DeploymentCondition cond(const std::string& type, const std::string& status, const std::string& reason) {
  DeploymentCondition c;
  c.type = type;
  c.status = status;
  c.reason = reason;
  return c;
}
DeploymentCondition condProgressing() { return cond("Progressing", "False", "ForSomeReason"); }
DeploymentCondition condProgressing2() { return cond("Progressing", "True", "BecauseItIs"); }
DeploymentCondition condAvailable() { return cond("Available", "True", "AwesomeController"); }
DeploymentStatus exampleStatus() {
  DeploymentStatus s;
  s.conditions = {condProgressing(), condAvailable()};
  return s;
}

// ---------------------------------------------------------------------------------------------------------------
// equalIgnoreHash

PodTemplateSpec podTemplate(const std::string& name, const std::string& nodeName, api::StringMap<api::String> ann,
                            api::StringMap<api::String> labels) {
  PodTemplateSpec t;
  t.metadata.name = name;
  t.metadata.annotations = std::move(ann);
  t.metadata.labels = std::move(labels);
  t.spec.nodeName = nodeName;
  return t;
}

struct EqualIgnoreHashCase {
  std::string name;
  PodTemplateSpec former, latter;
  bool expected;
};

const std::vector<EqualIgnoreHashCase>& equalIgnoreHashCases() {
  static const std::string h = kDefaultDeploymentUniqueLabelKey;
  static const std::vector<EqualIgnoreHashCase> cases = {
      {"same spec same labels", podTemplate("foo", "foo-node", {}, {{h, "value-1"}, {"something", "else"}}),
       podTemplate("foo", "foo-node", {}, {{h, "value-1"}, {"something", "else"}}), true},
      {"same spec only hash value differs", podTemplate("foo", "foo-node", {}, {{h, "value-1"}, {"something", "else"}}),
       podTemplate("foo", "foo-node", {}, {{h, "value-2"}, {"something", "else"}}), true},
      {"same spec former has no hash", podTemplate("foo", "foo-node", {}, {{"something", "else"}}),
       podTemplate("foo", "foo-node", {}, {{h, "value-2"}, {"something", "else"}}), true},
      {"label differs former has no hash same count", podTemplate("foo", "foo-node", {}, {{"something", "else"}}),
       podTemplate("foo", "foo-node", {}, {{h, "value-2"}}), false},
      {"label differs latter has no hash same count", podTemplate("foo", "foo-node", {}, {{h, "value-1"}}),
       podTemplate("foo", "foo-node", {}, {{"something", "else"}}), false},
      {"label differs same hash value", podTemplate("foo", "foo-node", {}, {{h, "value-1"}}),
       podTemplate("foo", "foo-node", {}, {{h, "value-1"}, {"something", "else"}}), false},
      {"different spec same labels",
       podTemplate("foo", "foo-node", {{"former", "value"}}, {{h, "value-1"}, {"something", "else"}}),
       podTemplate("foo", "foo-node", {{"latter", "value"}}, {{h, "value-1"}, {"something", "else"}}), false},
      {"different spec different hash value",
       podTemplate("foo-1", "foo-node", {}, {{h, "value-1"}, {"something", "else"}}),
       podTemplate("foo-2", "foo-node", {}, {{h, "value-2"}, {"something", "else"}}), false},
      {"different spec former has no hash", podTemplate("foo-1", "foo-node-1", {}, {{"something", "else"}}),
       podTemplate("foo-2", "foo-node-2", {}, {{h, "value-2"}, {"something", "else"}}), false},
      {"different spec different labels", podTemplate("foo", "foo-node-1", {}, {{"something", "else"}}),
       podTemplate("foo", "foo-node-2", {}, {{"nothing", "else"}}), false},
  };
  return cases;
}

class DeploymentUtilEqualIgnoreHash : public ::testing::TestWithParam<EqualIgnoreHashCase> {};

TEST_P(DeploymentUtilEqualIgnoreHash, BothOrders) {
  const auto& c = GetParam();
  EXPECT_EQ(equalIgnoreHash(c.former, c.latter), c.expected);
  EXPECT_EQ(equalIgnoreHash(c.latter, c.former), c.expected) << "reverse order";
}

INSTANTIATE_TEST_SUITE_P(, DeploymentUtilEqualIgnoreHash, ::testing::ValuesIn(equalIgnoreHashCases()),
                         rowName<EqualIgnoreHashCase>);

// ---------------------------------------------------------------------------------------------------------------
// findNewReplicaSet / findOldReplicaSets

// The Deployment, two ReplicaSets with its template (different hashes, the later one created later) and one of an
// older template.
struct FindFixture {
  Deployment d = generateDeployment("nginx");
  RSPtr newRS, newRSDup, oldRS;
  FindFixture() {
    const int64_t now = 1767225600;
    ReplicaSet n = generateRS(d);
    n.spec.replicas = 1;
    n.metadata.labels[kDefaultDeploymentUniqueLabelKey] = "hash";
    n.spec.template_.metadata.labels[kDefaultDeploymentUniqueLabelKey] = "hash";
    n.metadata.creationTimestamp = at(now + 60);
    ReplicaSet dup = generateRS(d);
    dup.metadata.labels[kDefaultDeploymentUniqueLabelKey] = "different-hash";
    dup.spec.template_.metadata.labels[kDefaultDeploymentUniqueLabelKey] = "different-hash";
    dup.metadata.creationTimestamp = at(now);
    Deployment oldD = generateDeployment("nginx");
    oldD.spec.template_.spec.containers[0].name = "nginx-old-1";
    ReplicaSet o = generateRS(oldD);
    o.status.fullyLabeledReplicas = 0;
    o.metadata.creationTimestamp = at(now - 60);
    newRS = ptr(n);
    newRSDup = ptr(dup);
    oldRS = ptr(o);
  }
};

TEST(DeploymentUtilFindNewReplicaSet, SameTemplateDifferentHash) {
  FindFixture f;
  EXPECT_EQ(findNewReplicaSet(f.d, {f.newRS, f.oldRS}), f.newRS);
}

TEST(DeploymentUtilFindNewReplicaSet, OldestOfSeveralWithTheTemplate) {
  FindFixture f;
  EXPECT_EQ(findNewReplicaSet(f.d, {f.newRS, f.oldRS, f.newRSDup}), f.newRSDup);
}

TEST(DeploymentUtilFindNewReplicaSet, NoneWithTheTemplate) {
  FindFixture f;
  EXPECT_EQ(findNewReplicaSet(f.d, {f.oldRS}), nullptr);
}

std::vector<std::string> sortedNames(std::vector<RSPtr> rss) {
  sortByCreationTimestamp(rss);
  std::vector<std::string> out;
  for (const auto& rs : rss) out.push_back(rs->metadata.name);
  return out;
}

TEST(DeploymentUtilFindOldReplicaSets, OldOnes) {
  FindFixture f;
  EXPECT_EQ(sortedNames(findOldReplicaSets(f.d, {f.newRS, f.oldRS})), sortedNames({f.oldRS}));
}

TEST(DeploymentUtilFindOldReplicaSets, NoNewReplicaSet) {
  FindFixture f;
  EXPECT_EQ(sortedNames(findOldReplicaSets(f.d, {f.oldRS})), sortedNames({f.oldRS}));
}

TEST(DeploymentUtilFindOldReplicaSets, OnlyTheOldestWithTheTemplateIsNew) {
  FindFixture f;
  EXPECT_EQ(sortedNames(findOldReplicaSets(f.d, {f.oldRS, f.newRS, f.newRSDup})), sortedNames({f.oldRS, f.newRS}));
}

TEST(DeploymentUtilFindOldReplicaSets, NoneOld) {
  FindFixture f;
  EXPECT_TRUE(findOldReplicaSets(f.d, {f.newRS}).empty());
}

// ---------------------------------------------------------------------------------------------------------------
// replica counts (spec, status and terminating)

struct ReplicaCountCase {
  std::string name;
  std::vector<int> sets;  // indexes into the four ReplicaSets below
  int32_t count, actual;
  std::optional<int32_t> terminating;
};

std::vector<RSPtr> countSets() {
  ReplicaSet rs1 = generateRS(generateDeployment("foo-rs"));
  rs1.status.observedGeneration = 1;
  rs1.spec.replicas = 1;
  rs1.status.replicas = 2;
  rs1.status.terminatingReplicas = 3;
  ReplicaSet rs2 = generateRS(generateDeployment("bar-rs"));  // never observed, but reports terminating pods
  rs2.spec.replicas = 2;
  rs2.status.replicas = 3;
  rs2.status.terminatingReplicas = 1;
  ReplicaSet rs3 = generateRS(generateDeployment("unsynced-rs"));  // never observed: no terminating count yet
  rs3.spec.replicas = 3;
  rs3.status.replicas = 0;
  ReplicaSet rs4 = generateRS(generateDeployment("dropped-rs"));  // observed without a terminating count
  rs4.status.observedGeneration = 1;
  rs4.spec.replicas = 1;
  rs4.status.replicas = 1;
  return {ptr(rs1), ptr(rs2), ptr(rs3), ptr(rs4)};
}

class DeploymentUtilReplicaCounts : public ::testing::TestWithParam<ReplicaCountCase> {};

TEST_P(DeploymentUtilReplicaCounts, SpecActualAndTerminating) {
  const auto& c = GetParam();
  auto all = countSets();
  std::vector<RSPtr> sets;
  for (int i : c.sets) sets.push_back(all[i]);
  EXPECT_EQ(getReplicaCount(sets), c.count);
  EXPECT_EQ(getActualReplicaCount(sets), c.actual);
  EXPECT_EQ(getTerminatingReplicaCount(sets), c.terminating);
}

INSTANTIATE_TEST_SUITE_P(, DeploymentUtilReplicaCounts,
                         ::testing::Values(ReplicaCountCase{"scaling down rs1", {0}, 1, 2, 3},
                                           ReplicaCountCase{"scaling down rs1 and rs2", {0, 1}, 3, 5, 4},
                                           ReplicaCountCase{"scaling up rs3", {2}, 3, 0, 0},
                                           ReplicaCountCase{"rs1 rs2 down rs3 up", {0, 1, 2}, 6, 5, 4},
                                           ReplicaCountCase{"unknown terminating rs4", {3}, 1, 1, std::nullopt},
                                           ReplicaCountCase{"unknown terminating rs4 with others", {0, 1, 2, 3}, 7, 6,
                                                            std::nullopt}),
                         rowName<ReplicaCountCase>);

// ---------------------------------------------------------------------------------------------------------------
// resolveFenceposts

struct FencepostCase {
  std::string name;
  std::optional<std::string> surge, unavailable;
  int32_t desired;
  int32_t expectSurge, expectUnavailable;
  bool expectError;
};

class DeploymentUtilResolveFenceposts : public ::testing::TestWithParam<FencepostCase> {};

TEST_P(DeploymentUtilResolveFenceposts, Resolves) {
  const auto& c = GetParam();
  std::optional<IntOrString> s, u;
  if (c.surge) s = IntOrString::fromString(*c.surge);
  if (c.unavailable) u = IntOrString::fromString(*c.unavailable);
  auto r = resolveFenceposts(s, u, c.desired);
  ASSERT_EQ(!r.has_value(), c.expectError);
  if (r) {
    EXPECT_EQ(r->first, c.expectSurge);
    EXPECT_EQ(r->second, c.expectUnavailable);
  }
}

INSTANTIATE_TEST_SUITE_P(
    , DeploymentUtilResolveFenceposts,
    ::testing::Values(FencepostCase{"zero percent of zero", "0%", "0%", 0, 0, 1, false},
                      FencepostCase{"39 percent of 10", "39%", "39%", 10, 4, 3, false},
                      FencepostCase{"malformed surge", "oops", "39%", 10, 0, 0, true},
                      FencepostCase{"malformed unavailable", "55%", "urg", 10, 0, 0, true},
                      FencepostCase{"no surge", std::nullopt, "39%", 10, 0, 3, false},
                      FencepostCase{"no unavailable", "39%", std::nullopt, 10, 4, 0, false},
                      FencepostCase{"neither", std::nullopt, std::nullopt, 10, 0, 1, false}),
    rowName<FencepostCase>);

// A malformed value counts as 0 for both fenceposts (upstream ignores the error the same way).
TEST(DeploymentUtilFenceposts, MalformedValuesCountAsZero) {
  Deployment d = rollingDeployment(10, IntOrString::fromString("oops"), IntOrString::fromString("30%"));
  EXPECT_EQ(maxSurge(d), 0);
  EXPECT_EQ(maxUnavailable(d), 0);
}

// ---------------------------------------------------------------------------------------------------------------
// newRSNewReplicas

struct NewRSNewReplicasCase {
  std::string name;
  std::string strategy;
  int32_t depReplicas, newRSReplicas, maxSurge, expected;
};

class DeploymentUtilNewRSNewReplicas : public ::testing::TestWithParam<NewRSNewReplicasCase> {};

TEST_P(DeploymentUtilNewRSNewReplicas, Computes) {
  const auto& c = GetParam();
  Deployment d = generateDeployment("nginx");
  d.spec.replicas = c.depReplicas;
  d.spec.strategy.type = c.strategy;
  api::apps::v1::RollingUpdateDeployment ru;
  ru.maxUnavailable = IntOrString::fromInt(1);
  ru.maxSurge = IntOrString::fromInt(c.maxSurge);
  d.spec.strategy.rollingUpdate = ru;
  ReplicaSet newRS = generateRS(d);
  newRS.spec.replicas = c.newRSReplicas;
  ReplicaSet rs5 = generateRS(d);
  rs5.spec.replicas = 5;
  EXPECT_EQ(newRSNewReplicas(d, {ptr(rs5)}, newRS), c.expected);
}

INSTANTIATE_TEST_SUITE_P(, DeploymentUtilNewRSNewReplicas,
                         ::testing::Values(NewRSNewReplicasCase{"cannot scale up", "RollingUpdate", 1, 5, 1, 5},
                                           NewRSNewReplicasCase{"scale up to desired", "RollingUpdate", 6, 2, 10, 6},
                                           NewRSNewReplicasCase{"recreate to desired", "Recreate", 3, 1, 1, 3}),
                         rowName<NewRSNewReplicasCase>);

// ---------------------------------------------------------------------------------------------------------------
// conditions

TEST(DeploymentUtilConditions, GetExisting) {
  auto s = exampleStatus();
  const auto* c = getDeploymentCondition(s, "Available");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->reason, "AwesomeController");
}

TEST(DeploymentUtilConditions, GetMissing) {
  EXPECT_EQ(getDeploymentCondition(exampleStatus(), "ReplicaFailure"), nullptr);
}

TEST(DeploymentUtilConditions, SetForTheFirstTime) {
  DeploymentStatus s;
  setDeploymentCondition(s, condAvailable());
  EXPECT_EQ(conditionKeys(s), std::vector<std::string>{"Available/True/AwesomeController"});
}

TEST(DeploymentUtilConditions, SetAppends) {
  DeploymentStatus s;
  s.conditions = {condProgressing()};
  setDeploymentCondition(s, condAvailable());
  EXPECT_EQ(conditionKeys(s), conditionKeys(exampleStatus()));
}

TEST(DeploymentUtilConditions, SetOverwrites) {
  DeploymentStatus s;
  s.conditions = {condProgressing()};
  setDeploymentCondition(s, condProgressing2());
  EXPECT_EQ(conditionKeys(s), std::vector<std::string>{"Progressing/True/BecauseItIs"});
}

TEST(DeploymentUtilConditions, SetKeepsTransitionTimeWhenStatusIsUnchanged) {
  DeploymentStatus s;
  auto first = condProgressing2();
  first.lastTransitionTime = at(100);
  s.conditions = {first};
  auto next = cond("Progressing", "True", "OtherReason");
  next.lastTransitionTime = at(200);
  next.lastUpdateTime = at(200);
  setDeploymentCondition(s, next);
  ASSERT_EQ(s.conditions.size(), 1u);
  EXPECT_EQ(s.conditions[0].reason, "OtherReason");
  EXPECT_EQ(s.conditions[0].lastTransitionTime, at(100));
  EXPECT_EQ(s.conditions[0].lastUpdateTime, at(200));
}

TEST(DeploymentUtilConditions, RemoveFromEmpty) {
  DeploymentStatus s;
  removeDeploymentCondition(s, "Progressing");
  EXPECT_TRUE(s.conditions.empty());
}

TEST(DeploymentUtilConditions, RemoveOnly) {
  DeploymentStatus s;
  s.conditions = {condProgressing()};
  removeDeploymentCondition(s, "Progressing");
  EXPECT_TRUE(s.conditions.empty());
}

TEST(DeploymentUtilConditions, RemoveNothing) {
  auto s = exampleStatus();
  removeDeploymentCondition(s, "ReplicaFailure");
  EXPECT_EQ(conditionKeys(s), conditionKeys(exampleStatus()));
}

TEST(DeploymentUtilConditions, NewConditionIsStampedByTheClock) {
  FakeClock clock;
  clock.advance(90s);
  auto c = newDeploymentCondition(clock, "Progressing", "True", kNewReplicaSetReason, "m");
  const int64_t expected = FakeClock::kDefaultWallStart.count() + 90;
  EXPECT_EQ(c.lastUpdateTime, at(expected));
  EXPECT_EQ(c.lastTransitionTime, at(expected));
  EXPECT_EQ(c.reason, kNewReplicaSetReason);
}

// ---------------------------------------------------------------------------------------------------------------
// deploymentComplete

struct CompleteCase {
  std::string name;
  int32_t desired, current, updated, available, maxUnavailable, maxSurge;
  bool expected;
};

class DeploymentUtilDeploymentComplete : public ::testing::TestWithParam<CompleteCase> {};

TEST_P(DeploymentUtilDeploymentComplete, Checks) {
  const auto& c = GetParam();
  Deployment d = rollingDeployment(c.desired, IntOrString::fromInt(c.maxSurge), IntOrString::fromInt(c.maxUnavailable));
  d.status.replicas = c.current;
  d.status.updatedReplicas = c.updated;
  d.status.availableReplicas = c.available;
  EXPECT_EQ(deploymentComplete(d, d.status), c.expected);
}

INSTANTIATE_TEST_SUITE_P(, DeploymentUtilDeploymentComplete,
                         ::testing::Values(CompleteCase{"min but not all available", 5, 5, 5, 4, 1, 0, false},
                                           CompleteCase{"min availability not honored", 5, 5, 5, 3, 1, 0, false},
                                           CompleteCase{"complete", 5, 5, 5, 5, 0, 0, true},
                                           CompleteCase{"available but not updated", 5, 5, 4, 5, 0, 0, false},
                                           CompleteCase{"still running old pods", 1, 2, 1, 1, 0, 1, false},
                                           CompleteCase{"one replica never comes up", 1, 1, 1, 0, 1, 1, false}),
                         rowName<CompleteCase>);

// ---------------------------------------------------------------------------------------------------------------
// deploymentProgressing

struct ProgressingCase {
  std::string name;
  int32_t old[4];  // replicas, updated, ready, available in the Deployment's status
  int32_t now[4];  // the same in the new status
  bool expected;
};

DeploymentStatus statusOf(const int32_t (&v)[4]) {
  DeploymentStatus s;
  s.replicas = v[0];
  s.updatedReplicas = v[1];
  s.readyReplicas = v[2];
  s.availableReplicas = v[3];
  return s;
}

class DeploymentUtilDeploymentProgressing : public ::testing::TestWithParam<ProgressingCase> {};

TEST_P(DeploymentUtilDeploymentProgressing, Checks) {
  const auto& c = GetParam();
  Deployment d;
  d.status = statusOf(c.old);
  EXPECT_EQ(deploymentProgressing(d, statusOf(c.now)), c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    , DeploymentUtilDeploymentProgressing,
    ::testing::Values(ProgressingCase{"updated pods", {10, 4, 4, 4}, {10, 6, 4, 4}, true},
                      ProgressingCase{"not progressing", {10, 4, 4, 4}, {10, 4, 4, 4}, false},
                      ProgressingCase{"old pods removed", {10, 4, 6, 6}, {8, 4, 6, 6}, true},
                      ProgressingCase{"less new pods", {10, 7, 3, 3}, {10, 6, 3, 3}, false},
                      ProgressingCase{"less overall more new", {10, 4, 7, 7}, {8, 8, 5, 5}, true},
                      ProgressingCase{"more ready pods", {10, 10, 9, 8}, {10, 10, 10, 8}, true},
                      ProgressingCase{"more available pods", {10, 10, 10, 9}, {10, 10, 10, 10}, true}),
    rowName<ProgressingCase>);

// ---------------------------------------------------------------------------------------------------------------
// deploymentTimedOut (the clock reads 2016-01-01T00:01:20Z)

struct TimedOutCase {
  std::string name;
  std::string reason;
  std::optional<int32_t> pds;
  std::optional<int> fromSecond;  // seconds past 2016-01-01T00:00:00Z of the last update; none: zero time
  bool expected;
};

constexpr int64_t k2016 = 1451606400;

class DeploymentUtilDeploymentTimedOut : public ::testing::TestWithParam<TimedOutCase> {};

TEST_P(DeploymentUtilDeploymentTimedOut, Checks) {
  const auto& c = GetParam();
  FakeClock clock(std::chrono::system_clock::time_point(std::chrono::seconds(k2016 + 80)));
  Deployment d;
  d.spec.progressDeadlineSeconds = c.pds;
  auto pc = cond("Progressing", "True", c.reason);
  if (c.fromSecond) pc.lastUpdateTime = at(k2016 + *c.fromSecond);
  d.status.conditions = {pc};
  EXPECT_EQ(deploymentTimedOut(clock, d, d.status), c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    , DeploymentUtilDeploymentTimedOut,
    ::testing::Values(TimedOutCase{"no deadline", "", std::nullopt, 69, false},
                      TimedOutCase{"infinite deadline", "", INT32_MAX, 69, false},
                      TimedOutCase{"10s deadline 11s ago", "", 10, 69, true},
                      TimedOutCase{"10s deadline 9s ago", "", 10, 71, false},
                      TimedOutCase{"previous rollout complete", kNewRSAvailableReason, std::nullopt, std::nullopt,
                                   false}),
    rowName<TimedOutCase>);

// The deadline is compared at the clock's precision: a nanosecond past it is past it.
TEST(DeploymentUtilTimedOutPrecision, SubSecondPastTheDeadline) {
  FakeClock clock(std::chrono::system_clock::time_point(std::chrono::seconds(k2016 + 80)));
  Deployment d;
  d.spec.progressDeadlineSeconds = 10;
  auto pc = cond("Progressing", "True", kReplicaSetUpdatedReason);
  pc.lastUpdateTime = at(k2016 + 70);
  d.status.conditions = {pc};
  EXPECT_FALSE(deploymentTimedOut(clock, d, d.status));
  clock.advance(1ns);
  EXPECT_TRUE(deploymentTimedOut(clock, d, d.status));
}

// ---------------------------------------------------------------------------------------------------------------
// maxUnavailable / minAvailable

struct AvailabilityCase {
  std::string name;
  std::optional<int32_t> replicas;  // none: a Recreate Deployment
  IntOrString maxUnavailable;
  int32_t expected;
};

Deployment availabilityDeployment(const AvailabilityCase& c) {
  if (!c.replicas) {
    Deployment d;
    d.spec.replicas = 10;
    d.spec.strategy.type = "Recreate";
    return d;
  }
  return rollingDeployment(*c.replicas, IntOrString::fromInt(1), c.maxUnavailable);
}

class DeploymentUtilMaxUnavailable : public ::testing::TestWithParam<AvailabilityCase> {};
TEST_P(DeploymentUtilMaxUnavailable, Computes) {
  EXPECT_EQ(maxUnavailable(availabilityDeployment(GetParam())), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    , DeploymentUtilMaxUnavailable,
    ::testing::Values(AvailabilityCase{"less than replicas", 10, IntOrString::fromInt(5), 5},
                      AvailabilityCase{"equal to replicas", 10, IntOrString::fromInt(10), 10},
                      AvailabilityCase{"more than replicas", 5, IntOrString::fromInt(10), 5},
                      AvailabilityCase{"zero replicas", 0, IntOrString::fromInt(10), 0},
                      AvailabilityCase{"recreate", std::nullopt, IntOrString::fromInt(0), 0},
                      AvailabilityCase{"less than replicas percent", 10, IntOrString::fromString("50%"), 5},
                      AvailabilityCase{"equal to replicas percent", 10, IntOrString::fromString("100%"), 10},
                      AvailabilityCase{"more than replicas percent", 5, IntOrString::fromString("100%"), 5}),
    rowName<AvailabilityCase>);

class DeploymentUtilMinAvailable : public ::testing::TestWithParam<AvailabilityCase> {};
TEST_P(DeploymentUtilMinAvailable, Computes) {
  EXPECT_EQ(minAvailable(availabilityDeployment(GetParam())), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    , DeploymentUtilMinAvailable,
    ::testing::Values(AvailabilityCase{"replicas above maxUnavailable", 10, IntOrString::fromInt(5), 5},
                      AvailabilityCase{"replicas equal maxUnavailable", 10, IntOrString::fromInt(10), 0},
                      AvailabilityCase{"replicas below maxUnavailable", 5, IntOrString::fromInt(10), 0},
                      AvailabilityCase{"zero replicas", 0, IntOrString::fromInt(10), 0},
                      AvailabilityCase{"recreate", std::nullopt, IntOrString::fromInt(0), 0},
                      AvailabilityCase{"replicas above percent", 10, IntOrString::fromString("60%"), 4},
                      AvailabilityCase{"replicas equal percent", 10, IntOrString::fromString("100%"), 0},
                      AvailabilityCase{"replicas below percent", 5, IntOrString::fromString("100%"), 0}),
    rowName<AvailabilityCase>);

// ---------------------------------------------------------------------------------------------------------------
// non-negative int32 annotations (read through the desired-replicas annotation)

struct AnnotationIntCase {
  std::string name;
  std::optional<std::string> value;  // none: no annotations at all
  std::optional<int32_t> expected;
};

class DeploymentUtilNonNegativeInt32Annotation : public ::testing::TestWithParam<AnnotationIntCase> {};

TEST_P(DeploymentUtilNonNegativeInt32Annotation, Parses) {
  const auto& c = GetParam();
  ReplicaSet rs = generateRS(generateDeployment("nginx"));
  if (c.value) rs.metadata.annotations = {{kDesiredReplicasAnnotation, *c.value}, {"foo", "2"}};
  EXPECT_EQ(getDesiredReplicasAnnotation(rs), c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    , DeploymentUtilNonNegativeInt32Annotation,
    ::testing::Values(AnnotationIntCase{"absent", std::nullopt, std::nullopt},
                      AnnotationIntCase{"invalid", "invalid", std::nullopt},
                      AnnotationIntCase{"negative", "-1", std::nullopt},
                      AnnotationIntCase{"zero", "0", 0}, AnnotationIntCase{"valid", "13", 13},
                      AnnotationIntCase{"max int32", std::to_string(INT32_MAX), INT32_MAX},
                      AnnotationIntCase{"max int32 plus one", std::to_string(int64_t{INT32_MAX} + 1), std::nullopt},
                      AnnotationIntCase{"max uint32 plus one", std::to_string(int64_t{UINT32_MAX} + 1), std::nullopt},
                      // strconv.ParseUint takes digits only
                      AnnotationIntCase{"leading space", " 13", std::nullopt},
                      AnnotationIntCase{"plus sign", "+13", std::nullopt}),
    rowName<AnnotationIntCase>);

// ---------------------------------------------------------------------------------------------------------------
// annotations

// Revisions 11..20 in turn, with room for 5 characters of history: the history keeps the last two old revisions.
TEST(DeploymentUtilAnnotations, SetNewReplicaSetAnnotationsKeepsABoundedHistory) {
  Deployment d = generateDeployment("nginx");
  d.metadata.annotations[kRevisionAnnotation] = "1";
  ReplicaSet rs = generateRS(d);
  for (int i = 10; i < 20; ++i) {
    const std::string next = std::to_string(i + 1);
    setNewReplicaSetAnnotations(d, rs, next, true, 5);
    if (i >= 12) {
      ASSERT_TRUE(rs.metadata.annotations.contains(kRevisionHistoryAnnotation)) << i;
      EXPECT_EQ(rs.metadata.annotations.at(kRevisionHistoryAnnotation),
                std::to_string(i - 1) + "," + std::to_string(i));
    }
    EXPECT_EQ(rs.metadata.annotations.at(kRevisionAnnotation), next);
  }
}

TEST(DeploymentUtilAnnotations, SetReplicasAnnotations) {
  ReplicaSet rs = generateRS(generateDeployment("nginx"));
  EXPECT_TRUE(setReplicasAnnotations(rs, 10, 11));
  EXPECT_EQ(rs.metadata.annotations.at(kDesiredReplicasAnnotation), "10");
  EXPECT_EQ(rs.metadata.annotations.at(kMaxReplicasAnnotation), "11");
  EXPECT_FALSE(setReplicasAnnotations(rs, 10, 11));  // already so
}

TEST(DeploymentUtilAnnotations, IsSaturated) {
  Deployment d = generateDeployment("nginx");
  ReplicaSet rs = generateRS(d);
  rs.metadata.annotations[kDesiredReplicasAnnotation] = "1";
  rs.status.availableReplicas = 1;
  rs.spec.replicas = 1;
  EXPECT_TRUE(isSaturated(d, ptr(rs)));
  rs.status.availableReplicas = 0;  // not all available: not saturated
  EXPECT_FALSE(isSaturated(d, ptr(rs)));
  EXPECT_FALSE(isSaturated(d, nullptr));
}

struct NeedUpdateCase {
  std::string name;
  std::optional<std::pair<std::string, std::string>> annotations;  // desired, max; none: no annotations
  bool expected;
};

class DeploymentUtilReplicasAnnotationsNeedUpdate : public ::testing::TestWithParam<NeedUpdateCase> {};

TEST_P(DeploymentUtilReplicasAnnotationsNeedUpdate, Checks) {
  const auto& c = GetParam();
  ReplicaSet rs;
  rs.metadata.name = "hello";
  rs.metadata.namespace_ = "test";
  if (c.annotations)
    rs.metadata.annotations = {{kDesiredReplicasAnnotation, c.annotations->first},
                               {kMaxReplicasAnnotation, c.annotations->second}};
  EXPECT_EQ(replicasAnnotationsNeedUpdate(rs, 10, 20), c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    , DeploymentUtilReplicasAnnotationsNeedUpdate,
    ::testing::Values(NeedUpdateCase{"no annotations", std::nullopt, true},
                      NeedUpdateCase{"desired differs", std::make_pair(std::string("8"), std::string("20")), true},
                      NeedUpdateCase{"max differs", std::make_pair(std::string("10"), std::string("16")), true},
                      NeedUpdateCase{"up to date", std::make_pair(std::string("10"), std::string("20")), false}),
    rowName<NeedUpdateCase>);

// ---------------------------------------------------------------------------------------------------------------
// getReplicaSetFraction

struct FractionCase {
  std::string name;
  int32_t deploymentReplicas, deploymentStatusReplicas, deploymentMaxSurge, rsReplicas;
  std::optional<std::string> maxReplicasAnnotation;
  int32_t expected;
};

class DeploymentUtilReplicaSetFraction : public ::testing::TestWithParam<FractionCase> {};

TEST_P(DeploymentUtilReplicaSetFraction, Computes) {
  const auto& c = GetParam();
  Deployment d = generateDeployment("nginx");
  d.status.replicas = c.deploymentStatusReplicas;
  d.spec.replicas = c.deploymentReplicas;
  d.spec.strategy.type = "RollingUpdate";
  api::apps::v1::RollingUpdateDeployment ru;
  ru.maxSurge = IntOrString::fromInt(c.deploymentMaxSurge);
  ru.maxUnavailable = IntOrString::fromInt(1);
  d.spec.strategy.rollingUpdate = ru;
  ReplicaSet rs = generateRS(d);
  if (c.maxReplicasAnnotation) rs.metadata.annotations[kMaxReplicasAnnotation] = *c.maxReplicasAnnotation;
  rs.spec.replicas = c.rsReplicas;
  EXPECT_EQ(getReplicaSetFraction(rs, d), c.expected);
  // The proportion is the fraction when nothing caps it.
  const int32_t toAdd = c.expected < 0 ? -1000 : 1000;
  EXPECT_EQ(getReplicaSetProportion(rs, d, toAdd, 0), c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    , DeploymentUtilReplicaSetFraction,
    ::testing::Values(FractionCase{"empty deployment scales to 0", 0, 0, 0, 10, std::nullopt, -10},
                      FractionCase{"unsynced without annotation", 10, 0, 0, 5, std::nullopt, 0},
                      FractionCase{"unsynced with annotation 0", 10, 0, 0, 5, "0", 0},
                      FractionCase{"scale up a fifth without annotation", 120, 100, 0, 50, std::nullopt, 10},
                      FractionCase{"scale up a fifth with annotation 0", 120, 100, 0, 50, "0", 10},
                      FractionCase{"scale up a fifth", 120, 0, 0, 50, "100", 10},
                      FractionCase{"scale up a fifth with surge", 120, 0, 10, 50, "110", 9},
                      FractionCase{"scale down a sixth", 10, 0, 0, 6, "12", -1},
                      FractionCase{"scale down a sixth with surge", 100, 0, 10, 50, "130", -8}),
    rowName<FractionCase>);

// The proportion never exceeds what is left to add (or remove).
TEST(DeploymentUtilReplicaSetProportion, CappedByWhatIsLeft) {
  Deployment d = rollingDeployment(120, IntOrString::fromInt(0), IntOrString::fromInt(1));
  ReplicaSet rs;
  rs.spec.replicas = 50;
  rs.metadata.annotations[kMaxReplicasAnnotation] = "100";
  EXPECT_EQ(getReplicaSetProportion(rs, d, 20, 15), 5);
  EXPECT_EQ(getReplicaSetProportion(rs, d, 20, 20), 0);
  rs.spec.replicas = 0;  // an inactive ReplicaSet gets nothing
  EXPECT_EQ(getReplicaSetProportion(rs, d, 20, 0), 0);
}

// ---------------------------------------------------------------------------------------------------------------
// computeHash: 1000 templates differing only in one image tag get 1000 different hashes.

constexpr const char* kHashPodSpec = R"({
  "metadata": {"labels": {"app": "cats"}},
  "spec": {
    "containers": [{
      "name": "cats",
      "image": "registry/test/cats:v0.@@VERSION@@.0",
      "ports": [{"name": "http", "containerPort": 9077, "protocol": "TCP"}],
      "env": [{"name": "DEPLOYMENT_ENVIRONMENT", "value": "cats-stubbed-functional"},
              {"name": "APP_NAME", "value": "cats"}],
      "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}},
      "livenessProbe": {"httpGet": {"path": "/private/status", "port": 9077, "scheme": "HTTP"},
                        "initialDelaySeconds": 30, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                        "failureThreshold": 3},
      "readinessProbe": {"httpGet": {"path": "/private/status", "port": 9077, "scheme": "HTTP"},
                         "initialDelaySeconds": 1, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                         "failureThreshold": 3},
      "terminationMessagePath": "/dev/termination-log",
      "imagePullPolicy": "IfNotPresent"
    }],
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "dnsPolicy": "ClusterFirst",
    "securityContext": {}
  }
})";

TEST(DeploymentUtilComputeHash, NoCollisionsAcrossVersions) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string json = kHashPodSpec;
    json.replace(json.find("@@VERSION@@"), 11, std::to_string(i));
    PodTemplateSpec t;
    ASSERT_TRUE(api::decodeJson(json, t).ok()) << i;
    ASSERT_EQ(t.spec.containers.size(), 1u);
    const std::string h = computeHash(t, std::nullopt);
    EXPECT_TRUE(seen.insert(h).second) << "hash collision at version " << i;
  }
}

TEST(DeploymentUtilComputeHash, CollisionCountChangesTheHash) {
  PodTemplateSpec t = generateDeployment("nginx").spec.template_;
  const std::string base = computeHash(t, std::nullopt);
  EXPECT_EQ(computeHash(t, std::nullopt), base);  // deterministic
  EXPECT_NE(computeHash(t, 1), base);
  EXPECT_NE(computeHash(t, 1), computeHash(t, 2));
  for (char c : base) EXPECT_NE(std::string("bcdfghjklmnpqrstvwxz2456789").find(c), std::string::npos) << base;
}

}  // namespace
}  // namespace kcm::controllers::deploymentutil
