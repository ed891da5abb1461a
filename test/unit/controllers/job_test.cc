// job-controller over the in-memory apiserver, as upstream's pkg/controller/job tests drive syncJob: the informers
// never run; the tests fill the caches, call syncJob/syncOrphanPod and read what was written. Cases follow
// TestControllerSyncJob, TestSyncJobPastDeadline, TestSyncJobWithJobPodFailurePolicy,
// TestSyncJobWithJobBackoffLimitPerIndex, TestSyncJobWithJobSuccessPolicy, TestFinalizersRemovedExpectations and
// the helpers' own tests (indexed_job_utils_test, success_policy_test, backoff_utils_test).
#include "controllers/job/job_controller.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/gen/batch_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/support/wall_time.h"
#include "base/metrics.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::job {

class JobTestPeer {
 public:
  static runtime::WorkQueue& queue(JobController& c) { return c.base_.queue(); }
  static void updateJob(JobController& c, const JobPtr& o, const JobPtr& n) { c.updateJob(o, n); }
};

namespace {

using testing::Action;
using testing::FakeApiServer;
using namespace std::chrono_literals;

class JobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    server->addResource({"batch", "v1", "jobs", "Job", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
    JobControllerOptions o;
    o.staleConsistency = false;  // the informers never run, so they never catch up with our writes
    ctrl = std::make_unique<JobController>(server->client(), broadcaster.newRecorder("job-controller"),
                                           factory.forType<Job>(), factory.forType<Pod>(), o, clock);
  }

  int64_t nowUnix() const { return std::chrono::system_clock::to_time_t(clock.wallNow()); }
  api::Time ago(int64_t s) const { return api::Time::fromUnix(nowUnix() - s); }

  // A Job as the apiserver defaults it: selector job-name=<name>, template labels to match, backoffLimit 6.
  static Job newJob(const std::string& name, int32_t parallelism, std::optional<int32_t> completions,
                    int32_t backoffLimit = 6, const std::string& mode = "NonIndexed") {
    Job j;
    j.metadata.namespace_ = "ns";
    j.metadata.name = name;
    j.spec.parallelism = parallelism;
    j.spec.completions = completions;
    j.spec.backoffLimit = backoffLimit;
    j.spec.completionMode = mode;
    j.spec.suspend = false;
    j.spec.podReplacementPolicy = "TerminatingOrFailed";
    api::meta::v1::LabelSelector sel;
    sel.matchLabels["job-name"] = name;
    j.spec.selector = sel;
    j.spec.template_.metadata.labels["job-name"] = name;
    j.spec.template_.spec.restartPolicy = "Never";
    auto& c = j.spec.template_.spec.containers.emplace_back();
    c.name = "main";
    c.image = "busybox";
    return j;
  }

  Job addJob(Job j) {
    Job stored = server->add(j);
    factory.forType<Job>().store().upsert("ns/" + stored.metadata.name, std::make_shared<const Job>(stored));
    return stored;
  }

  // A pod of job j: phase, completion index (-1: none), the tracking finalizer, ready when Running.
  Pod newPod(const Job& j, const std::string& name, const std::string& phase, int index = -1,
             bool finalizer = true, bool owned = true) {
    Pod p;
    p.metadata.namespace_ = "ns";
    p.metadata.name = name;
    p.metadata.labels["job-name"] = j.metadata.name;
    p.metadata.creationTimestamp = ago(60);
    if (index >= 0) {
      p.metadata.annotations[kJobCompletionIndexAnnotation] = std::to_string(index);
      p.metadata.labels[kJobCompletionIndexAnnotation] = std::to_string(index);
    }
    if (finalizer) p.metadata.finalizers.push_back(kJobTrackingFinalizer);
    if (owned) p.metadata.ownerReferences.push_back(newControllerRef(j.metadata, "batch/v1", "Job"));
    p.spec.nodeName = "node";
    auto& c = p.spec.containers.emplace_back();
    c.name = "main";
    c.image = "busybox";
    p.status.phase = phase;
    if (phase == "Running") {
      auto& r = p.status.conditions.emplace_back();
      r.type = "Ready";
      r.status = "True";
      r.lastTransitionTime = ago(30);
    }
    if (phase == "Succeeded" || phase == "Failed") {
      auto& cs = p.status.containerStatuses.emplace_back();
      cs.name = "main";
      cs.state.terminated.emplace().exitCode = phase == "Failed" ? 1 : 0;
      cs.state.terminated->finishedAt = ago(1);
    }
    return p;
  }
  PodPtr addPod(const Pod& p) {
    auto stored = std::make_shared<const Pod>(server->add(p));
    factory.forType<Pod>().store().upsert("ns/" + p.metadata.name, stored);
    return stored;
  }

  // Copies the apiserver's Jobs and Pods into the caches (what the informers would deliver).
  void refresh() {
    auto& js = factory.forType<Job>().store();
    for (const auto& k : js.keys()) js.erase(k);
    for (auto& j : server->list<Job>("ns")) js.upsert("ns/" + j.metadata.name, std::make_shared<const Job>(j));
    auto& ps = factory.forType<Pod>().store();
    for (const auto& k : ps.keys()) ps.erase(k);
    for (auto& p : server->list<Pod>("ns")) ps.upsert("ns/" + p.metadata.name, std::make_shared<const Pod>(p));
  }

  // A podFailurePolicy with one rule: `action` on exit code 42.
  static void onExitCode42(Job& j, const std::string& action) {
    auto& rule = j.spec.podFailurePolicy.emplace().rules.emplace_back();
    rule.action = action;
    auto& codes = rule.onExitCodes.emplace();
    codes.operator_ = "In";
    codes.values = {42};
  }
  runtime::SyncResult sync(const std::string& name) { return ctrl->syncJob("ns/" + name); }
  Job job(const std::string& name) { return *server->get<Job>("ns", name); }
  std::vector<Pod> createdPods() {
    std::vector<Pod> out;
    for (const auto& p : server->list<Pod>("ns"))
      if (p.metadata.name.find('-') != std::string::npos && p.metadata.generateName.size()) out.push_back(p);
    return out;
  }
  std::vector<Action> creates() const { return server->actionsFor("create", "pods"); }
  std::vector<Action> deletes() const { return server->actionsFor("delete", "pods"); }
  std::vector<Action> podPatches() const { return server->actionsFor("patch", "pods"); }
  std::vector<std::string> events() {
    broadcaster.flush();
    return eventSink->createdEvents();
  }
  static std::vector<std::string> conditions(const Job& j) {
    std::vector<std::string> out;
    for (const auto& c : j.status.conditions) out.push_back(c.type + "=" + c.status + "/" + c.reason);
    return out;
  }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  std::shared_ptr<FakeApiServer> eventSink = std::make_shared<FakeApiServer>();
  client::EventBroadcaster broadcaster{eventSink->client(), "test"};
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  std::unique_ptr<JobController> ctrl;
};

// ---- pod creation, counting and completion ----

TEST_F(JobTest, ANewJobGetsParallelismPodsWithTheTrackingFinalizer) {
  addJob(newJob("job", 2, 5));
  ASSERT_TRUE(sync("job").status.ok());
  ASSERT_EQ(creates().size(), 2u);
  auto pods = server->list<Pod>("ns");
  ASSERT_EQ(pods.size(), 2u);
  for (const auto& p : pods) {
    EXPECT_EQ(p.metadata.generateName, "job-");
    EXPECT_EQ(p.metadata.finalizers, std::vector<std::string>{kJobTrackingFinalizer});
    ASSERT_EQ(p.metadata.ownerReferences.size(), 1u);
    EXPECT_EQ(p.metadata.ownerReferences[0].kind, "Job");
    EXPECT_TRUE(p.metadata.ownerReferences[0].controller.value_or(false));
  }
  Job j = job("job");
  EXPECT_EQ(j.status.active, 2);
  EXPECT_EQ(j.status.ready, 0);
  EXPECT_EQ(j.status.terminating, 0);
  EXPECT_TRUE(j.status.startTime.has_value());
  EXPECT_EQ(events(), (std::vector<std::string>{"Normal SuccessfulCreate Created pod: " + pods[0].metadata.name,
                                                "Normal SuccessfulCreate Created pod: " + pods[1].metadata.name}));
}

TEST_F(JobTest, ExpectationsHoldTheNextSyncUntilTheCreatesAreSeen) {
  addJob(newJob("job", 2, 5));
  ASSERT_TRUE(sync("job").status.ok());
  refresh();  // the Job's status, not yet the pods: nothing new is created
  auto& pods = factory.forType<Pod>().store();
  for (const auto& k : pods.keys()) pods.erase(k);
  server->clearActions();
  ASSERT_TRUE(sync("job").status.ok());
  EXPECT_TRUE(creates().empty());
}

TEST_F(JobTest, SucceededPodsAreCountedThroughUncountedAndTheJobCompletes) {
  Job j = addJob(newJob("job", 2, 2));
  addPod(newPod(j, "p0", "Succeeded"));
  addPod(newPod(j, "p1", "Succeeded"));
  ASSERT_TRUE(sync("job").status.ok());
  j = job("job");
  EXPECT_EQ(j.status.succeeded, 2);
  EXPECT_EQ(j.status.active, 0);
  ASSERT_TRUE(j.status.uncountedTerminatedPods.has_value());
  EXPECT_TRUE(j.status.uncountedTerminatedPods->succeeded.empty());
  EXPECT_EQ(conditions(j), (std::vector<std::string>{"SuccessCriteriaMet=True/CompletionsReached",
                                                     "Complete=True/CompletionsReached"}));
  EXPECT_TRUE(j.status.completionTime.has_value());
  for (const auto& p : server->list<Pod>("ns")) EXPECT_TRUE(p.metadata.finalizers.empty()) << p.metadata.name;
  // The UIDs went through status.uncountedTerminatedPods before the finalizers came off.
  auto updates = server->actionsFor("update", "jobs/status");
  ASSERT_GE(updates.size(), 2u);
  auto first = nlohmann::json::parse(updates[0].body);
  EXPECT_EQ(first["status"]["uncountedTerminatedPods"]["succeeded"].size(), 2u);
  EXPECT_EQ(events(), (std::vector<std::string>{"Normal Completed Job completed"}));
}

TEST_F(JobTest, WithoutCompletionsOneSuccessEndsTheJobOnceNothingRuns) {
  Job j = addJob(newJob("job", 2, std::nullopt));
  addPod(newPod(j, "p0", "Succeeded"));
  addPod(newPod(j, "p1", "Running"));
  ASSERT_TRUE(sync("job").status.ok());
  EXPECT_TRUE(creates().empty());  // the running pod is left running, nothing new
  EXPECT_EQ(job("job").status.active, 1);
  EXPECT_EQ(job("job").status.ready, 1);
  EXPECT_TRUE(conditions(job("job")).empty());
}

TEST_F(JobTest, TooManyActivePodsAreDeletedNotReadyFirst) {
  Job j = addJob(newJob("job", 1, 5));
  Pod ready = newPod(j, "ready", "Running");
  Pod pending = newPod(j, "pending", "Pending");
  addPod(ready);
  addPod(pending);
  ASSERT_TRUE(sync("job").status.ok());
  ASSERT_EQ(deletes().size(), 1u);
  EXPECT_EQ(deletes()[0].name, "pending");
  EXPECT_EQ(job("job").status.terminating, 1);
  EXPECT_EQ(job("job").status.active, 1);
}

// ---- failures ----

TEST_F(JobTest, BackoffLimitExceededFailsTheJobAndDeletesWhatRuns) {
  Job j = addJob(newJob("job", 1, 5, /*backoffLimit=*/1));
  addPod(newPod(j, "f0", "Failed"));
  addPod(newPod(j, "f1", "Failed"));
  addPod(newPod(j, "r0", "Running"));
  ASSERT_TRUE(sync("job").status.ok());
  ASSERT_EQ(deletes().size(), 1u);
  EXPECT_EQ(deletes()[0].name, "r0");
  j = job("job");
  // The running pod is still terminating: the interim condition only.
  EXPECT_EQ(conditions(j), (std::vector<std::string>{"FailureTarget=True/BackoffLimitExceeded"}));
  EXPECT_EQ(j.status.failed, 3);  // the terminating pod counts as failed once the Job is failing
  // The pod is gone: Failed follows.
  factory.forType<Pod>().store().erase("ns/r0");
  refresh();
  ASSERT_TRUE(sync("job").status.ok());
  EXPECT_EQ(conditions(job("job")),
            (std::vector<std::string>{"FailureTarget=True/BackoffLimitExceeded", "Failed=True/BackoffLimitExceeded"}));
  EXPECT_EQ(events(), (std::vector<std::string>{"Normal SuccessfulDelete Deleted pod: r0",
                                                "Warning BackoffLimitExceeded Job has reached the specified backoff limit"}));
}

TEST_F(JobTest, PastActiveDeadlineTheJobFailsWithDeadlineExceeded) {
  Job spec = newJob("job", 1, 1);
  spec.spec.activeDeadlineSeconds = 10;
  spec.status.startTime = ago(20);
  addJob(spec);
  ASSERT_TRUE(sync("job").status.ok());
  EXPECT_TRUE(creates().empty());
  EXPECT_EQ(conditions(job("job")), (std::vector<std::string>{"FailureTarget=True/DeadlineExceeded",
                                                              "Failed=True/DeadlineExceeded"}));
  EXPECT_EQ(events(), (std::vector<std::string>{"Warning DeadlineExceeded Job was active longer than specified deadline"}));
}

TEST_F(JobTest, BeforeTheDeadlineTheJobIsLookedAtAgainWhenItComes) {
  Job spec = newJob("job", 1, 1);
  spec.spec.activeDeadlineSeconds = 10;
  spec.status.startTime = ago(4);
  addJob(spec);
  ASSERT_TRUE(sync("job").status.ok());
  auto& q = JobTestPeer::queue(*ctrl);
  EXPECT_FALSE(q.tryGet());
  clock.advance(7s);
  auto k = q.tryGet();
  ASSERT_TRUE(k);
  EXPECT_EQ(*k, "ns/job");
  q.done(*k);
}

TEST_F(JobTest, FailedPodsAreReplacedOnlyAfterTheBackOff) {
  Job j = addJob(newJob("job", 1, 1));
  addPod(newPod(j, "f0", "Failed"));  // finished a second ago
  ASSERT_TRUE(sync("job").status.ok());
  EXPECT_TRUE(creates().empty());
  EXPECT_EQ(job("job").status.failed, 1);
  clock.advance(10s);
  refresh();
  ASSERT_TRUE(sync("job").status.ok());
  EXPECT_EQ(creates().size(), 1u);
}

TEST_F(JobTest, PodFailurePolicyFailJobEndsTheJobWithTheRuleInTheMessage) {
  Job spec = newJob("job", 1, 1);
  onExitCode42(spec, "FailJob");
  Job j = addJob(spec);
  Pod p = newPod(j, "p0", "Failed");
  p.status.containerStatuses[0].state.terminated->exitCode = 42;
  addPod(p);
  ASSERT_TRUE(sync("job").status.ok());
  j = job("job");
  EXPECT_EQ(conditions(j), (std::vector<std::string>{"FailureTarget=True/PodFailurePolicy", "Failed=True/PodFailurePolicy"}));
  EXPECT_EQ(j.status.conditions[1].message,
            "Container main for pod ns/p0 failed with exit code 42 matching FailJob rule at index 0");
  EXPECT_EQ(j.status.failed, 1);
}

TEST_F(JobTest, PodFailurePolicyIgnoreDoesNotCountTheFailure) {
  Job spec = newJob("job", 1, 1, /*backoffLimit=*/0);
  auto& rule = spec.spec.podFailurePolicy.emplace().rules.emplace_back();
  rule.action = "Ignore";
  auto& pattern = rule.onPodConditions.emplace_back();
  pattern.type = "DisruptionTarget";
  pattern.status = "True";
  Job j = addJob(spec);
  Pod p = newPod(j, "p0", "Failed");
  auto& c = p.status.conditions.emplace_back();
  c.type = "DisruptionTarget";
  c.status = "True";
  addPod(p);
  ASSERT_TRUE(sync("job").status.ok());
  j = job("job");
  EXPECT_EQ(j.status.failed, 0);
  EXPECT_TRUE(conditions(j).empty());
  // The ignored failure still delays the replacement by the back-off.
  EXPECT_TRUE(creates().empty());
  clock.advance(10s);
  refresh();
  ASSERT_TRUE(sync("job").status.ok());
  EXPECT_EQ(creates().size(), 1u);
}

// ---- suspend ----

TEST_F(JobTest, SuspendingDeletesTheActivePodsAndResetsStartTime) {
  Job spec = newJob("job", 2, 4);
  spec.spec.suspend = true;
  spec.status.startTime = ago(30);
  Job j = addJob(spec);
  addPod(newPod(j, "r0", "Running"));
  addPod(newPod(j, "r1", "Pending"));
  ASSERT_TRUE(sync("job").status.ok());
  EXPECT_EQ(deletes().size(), 2u);
  j = job("job");
  EXPECT_EQ(conditions(j), (std::vector<std::string>{"Suspended=True/JobSuspended"}));
  EXPECT_FALSE(j.status.startTime.has_value());
  EXPECT_EQ(j.status.active, 0);
  EXPECT_EQ(j.status.terminating, 2);
  auto ev = events();
  EXPECT_NE(std::find(ev.begin(), ev.end(), "Normal Suspended Job suspended"), ev.end());
}

TEST_F(JobTest, ResumingSetsAFreshStartTimeAndCreatesPods) {
  Job spec = newJob("job", 2, 4);
  spec.status.conditions.push_back(newCondition("Suspended", "True", "JobSuspended", "Job suspended", ago(100)));
  addJob(spec);
  ASSERT_TRUE(sync("job").status.ok());
  Job j = job("job");
  EXPECT_EQ(conditions(j), (std::vector<std::string>{"Suspended=False/JobResumed"}));
  ASSERT_TRUE(j.status.startTime.has_value());
  EXPECT_EQ(j.status.startTime->unixSeconds, nowUnix());
  EXPECT_EQ(creates().size(), 2u);
  auto ev = events();
  EXPECT_NE(std::find(ev.begin(), ev.end(), "Normal Resumed Job resumed"), ev.end());
}

// ---- Indexed ----

TEST_F(JobTest, IndexedJobCreatesThePendingIndexesWithHostnameAndEnv) {
  Job j = addJob(newJob("job", 3, 3, 6, "Indexed"));
  addPod(newPod(j, "job-1-abc", "Succeeded", 1));
  ASSERT_TRUE(sync("job").status.ok());
  ASSERT_EQ(creates().size(), 2u);
  std::set<std::string> hostnames, prefixes;
  for (const auto& p : server->list<Pod>("ns")) {
    if (p.metadata.name == "job-1-abc") continue;
    hostnames.insert(p.spec.hostname);
    prefixes.insert(p.metadata.generateName);
    const std::string ix = p.metadata.annotations.at(kJobCompletionIndexAnnotation);
    EXPECT_EQ(p.metadata.labels.at(kJobCompletionIndexAnnotation), ix);
    ASSERT_EQ(p.spec.containers[0].env.size(), 1u);
    EXPECT_EQ(p.spec.containers[0].env[0].name, "JOB_COMPLETION_INDEX");
    EXPECT_EQ(p.spec.containers[0].env[0].valueFrom->fieldRef->fieldPath,
              "metadata.labels['batch.kubernetes.io/job-completion-index']");
  }
  EXPECT_EQ(hostnames, (std::set<std::string>{"job-0", "job-2"}));
  EXPECT_EQ(prefixes, (std::set<std::string>{"job-0-", "job-2-"}));
  Job after = job("job");
  EXPECT_EQ(after.status.completedIndexes, "1");
  EXPECT_EQ(after.status.succeeded, 1);
}

TEST_F(JobTest, IndexedJobDeletesDuplicateAndOutOfRangeIndexes) {
  Job j = addJob(newJob("job", 2, 2, 6, "Indexed"));
  addPod(newPod(j, "a", "Running", 0));
  addPod(newPod(j, "b", "Pending", 0));
  addPod(newPod(j, "c", "Running", 5));
  ASSERT_TRUE(sync("job").status.ok());
  std::set<std::string> deleted;
  for (const auto& a : deletes()) deleted.insert(a.name);
  EXPECT_EQ(deleted, (std::set<std::string>{"b", "c"}));
  EXPECT_TRUE(creates().empty());  // deletions and creations never in the same sync
}

TEST_F(JobTest, BackoffLimitPerIndexFailsTheIndexAndThenTheJob) {
  Job spec = newJob("job", 2, 2, 6, "Indexed");
  spec.spec.backoffLimitPerIndex = 0;
  Job j = addJob(spec);
  Pod f = newPod(j, "f0", "Failed", 0);
  f.metadata.annotations[kJobIndexFailureCountAnnotation] = "0";
  addPod(f);
  addPod(newPod(j, "s1", "Succeeded", 1));
  ASSERT_TRUE(sync("job").status.ok());
  j = job("job");
  EXPECT_EQ(j.status.failedIndexes, "0");
  EXPECT_EQ(j.status.completedIndexes, "1");
  EXPECT_EQ(conditions(j), (std::vector<std::string>{"FailureTarget=True/FailedIndexes", "Failed=True/FailedIndexes"}));
}

TEST_F(JobTest, MaxFailedIndexesExceededFailsTheJob) {
  Job spec = newJob("job", 3, 3, 6, "Indexed");
  spec.spec.backoffLimitPerIndex = 0;
  spec.spec.maxFailedIndexes = 0;
  Job j = addJob(spec);
  addPod(newPod(j, "f0", "Failed", 0));
  ASSERT_TRUE(sync("job").status.ok());
  EXPECT_EQ(conditions(job("job")), (std::vector<std::string>{"FailureTarget=True/MaxFailedIndexesExceeded",
                                                              "Failed=True/MaxFailedIndexesExceeded"}));
}

TEST_F(JobTest, AFailedIndexIsRecreatedWithItsFailureCount) {
  Job spec = newJob("job", 1, 1, 6, "Indexed");
  spec.spec.backoffLimitPerIndex = 2;
  Job j = addJob(spec);
  Pod f = newPod(j, "f0", "Failed", 0);
  f.metadata.annotations[kJobIndexFailureCountAnnotation] = "0";
  f.status.containerStatuses[0].state.terminated->finishedAt = ago(60);  // past the 10 s back-off
  addPod(f);
  ASSERT_TRUE(sync("job").status.ok());
  ASSERT_EQ(creates().size(), 1u);
  Pod created;
  for (const auto& p : server->list<Pod>("ns"))
    if (p.metadata.name != "f0") created = p;
  EXPECT_EQ(created.metadata.annotations.at(kJobIndexFailureCountAnnotation), "1");
  // The failed pod keeps its finalizer until the replacement exists (its count moved to the new pod).
  EXPECT_FALSE(server->get<Pod>("ns", "f0")->metadata.finalizers.empty());
}

TEST_F(JobTest, PodFailurePolicyFailIndexFailsTheIndexWithoutItsRetries) {
  Job spec = newJob("job", 2, 2, 6, "Indexed");
  spec.spec.backoffLimitPerIndex = 3;
  onExitCode42(spec, "FailIndex");
  Job j = addJob(spec);
  Pod f = newPod(j, "f0", "Failed", 0);
  f.metadata.annotations[kJobIndexFailureCountAnnotation] = "0";
  f.status.containerStatuses[0].state.terminated->exitCode = 42;
  addPod(f);
  addPod(newPod(j, "r1", "Running", 1));
  ASSERT_TRUE(sync("job").status.ok());
  j = job("job");
  EXPECT_EQ(j.status.failedIndexes, "0");
  EXPECT_TRUE(creates().empty());  // index 0 is not retried
  EXPECT_TRUE(conditions(j).empty());  // index 1 still runs
}

TEST_F(JobTest, SyncsAreCountedInTheJobControllerMetrics) {
  addJob(newJob("job", 1, 1));
  ASSERT_TRUE(sync("job").status.ok());
  const std::string text = kcm::metrics::Registry::global().render();
  EXPECT_NE(text.find("job_controller_job_syncs_total{action=\"pods_created\",completion_mode=\"NonIndexed\",result=\"success\"}"),
            std::string::npos);
  EXPECT_NE(text.find("job_controller_job_sync_duration_seconds_bucket"), std::string::npos);
  EXPECT_NE(text.find("job_controller_job_pods_creation_total{reason=\"new\",status=\"succeeded\"}"), std::string::npos);
}

TEST_F(JobTest, SuccessPolicyEndsTheJobAndStopsTheRest) {
  Job spec = newJob("job", 3, 3, 6, "Indexed");
  auto& r = spec.spec.successPolicy.emplace().rules.emplace_back();
  r.succeededIndexes = "0";
  Job j = addJob(spec);
  addPod(newPod(j, "s0", "Succeeded", 0));
  addPod(newPod(j, "r1", "Running", 1));
  ASSERT_TRUE(sync("job").status.ok());
  EXPECT_EQ(deletes().size(), 1u);
  j = job("job");
  EXPECT_EQ(conditions(j), (std::vector<std::string>{"SuccessCriteriaMet=True/SuccessPolicy"}));
  EXPECT_EQ(j.status.conditions[0].message, "Matched rules at index 0");
  factory.forType<Pod>().store().erase("ns/r1");
  refresh();
  ASSERT_TRUE(sync("job").status.ok());
  EXPECT_EQ(conditions(job("job")), (std::vector<std::string>{"SuccessCriteriaMet=True/SuccessPolicy",
                                                              "Complete=True/SuccessPolicy"}));
}

// ---- podReplacementPolicy, managedBy, adoption, orphans ----

TEST_F(JobTest, PodReplacementPolicyFailedWaitsForTerminatingPods) {
  Job spec = newJob("job", 1, 1);
  spec.spec.podReplacementPolicy = "Failed";
  Job j = addJob(spec);
  Pod t = newPod(j, "t0", "Running");
  t.metadata.deletionTimestamp = ago(0);
  addPod(t);
  ASSERT_TRUE(sync("job").status.ok());
  EXPECT_TRUE(creates().empty());
  EXPECT_EQ(job("job").status.terminating, 1);
  EXPECT_EQ(job("job").status.failed, 0);  // a terminating pod is not a failure under this policy
}

TEST_F(JobTest, TerminatingOrFailedReplacesTerminatingPodsAtOnce) {
  Job j = addJob(newJob("job", 1, 1));
  Pod t = newPod(j, "t0", "Running");
  t.metadata.deletionTimestamp = ago(0);
  addPod(t);
  clock.advance(20s);  // past the back-off of the terminating pod counted as failed
  ASSERT_TRUE(sync("job").status.ok());
  EXPECT_EQ(creates().size(), 1u);
}

TEST_F(JobTest, AJobManagedByAnotherControllerIsLeftAlone) {
  Job spec = newJob("job", 2, 2);
  spec.spec.managedBy = "example.com/other";
  addJob(spec);
  server->clearActions();
  ASSERT_TRUE(sync("job").status.ok());
  EXPECT_TRUE(server->writes().empty());
}

TEST_F(JobTest, MatchingOrphansAreAdoptedWithTheFinalizer) {
  Job j = addJob(newJob("job", 1, 1));
  addPod(newPod(j, "orphan", "Running", -1, /*finalizer=*/false, /*owned=*/false));
  ASSERT_TRUE(sync("job").status.ok());
  auto patches = podPatches();
  ASSERT_FALSE(patches.empty());
  auto body = nlohmann::json::parse(patches[0].body);
  EXPECT_EQ(body["metadata"]["finalizers"], nlohmann::json::array({kJobTrackingFinalizer}));
  auto pod = server->get<Pod>("ns", "orphan");
  ASSERT_EQ(pod->metadata.ownerReferences.size(), 1u);
  EXPECT_EQ(pod->metadata.ownerReferences[0].uid, j.metadata.uid);
  EXPECT_TRUE(creates().empty());  // the adopted pod is the one active pod
}

TEST_F(JobTest, AnOrphanPodLosesTheTrackingFinalizer) {
  Job j = newJob("gone", 1, 1);
  j.metadata.uid = "gone-uid";
  addPod(newPod(j, "left", "Succeeded"));  // its Job is not in the cache
  ASSERT_TRUE(ctrl->syncOrphanPod("name|ns|left").status.ok());
  EXPECT_TRUE(server->get<Pod>("ns", "left")->metadata.finalizers.empty());
}

TEST_F(JobTest, PodsOfAFinishedJobLoseTheFinalizerBySelector) {
  Job spec = newJob("job", 1, 1);
  spec.status.conditions.push_back(newCondition("Complete", "True", "CompletionsReached", "", ago(1)));
  Job j = addJob(spec);
  addPod(newPod(j, "p0", "Succeeded"));
  auto cur = std::make_shared<const Job>(j);
  JobTestPeer::updateJob(*ctrl, cur, cur);  // a finished Job enqueues its selector on the orphan queue
  // drain the orphan queue through the controller's own sync
  ASSERT_TRUE(ctrl->syncOrphanPod("selector|ns|{\"e\":[],\"l\":{\"job-name\":\"job\"}}").status.ok());
  EXPECT_TRUE(server->get<Pod>("ns", "p0")->metadata.finalizers.empty());
}

TEST_F(JobTest, AFinishedJobIsNotSyncedAgain) {
  Job spec = newJob("job", 1, 1);
  spec.status.conditions.push_back(newCondition("Failed", "True", "BackoffLimitExceeded", "", ago(1)));
  addJob(spec);
  server->clearActions();
  ASSERT_TRUE(sync("job").status.ok());
  EXPECT_TRUE(server->writes().empty());
}

TEST_F(JobTest, AnUnknownCompletionModeIsReported) {
  Job spec = newJob("job", 1, 1, 6, "Sideways");
  addJob(spec);
  ASSERT_TRUE(sync("job").status.ok());
  EXPECT_TRUE(creates().empty());
  EXPECT_EQ(events(), (std::vector<std::string>{
                          "Warning UnknownCompletionMode Skipped Job sync because completion mode is unknown"}));
}

TEST_F(JobTest, AFailedCreateIsReturnedAndNotCountedActive) {
  addJob(newJob("job", 3, 3));
  server->prependReactor("create", "pods", [](const Action&) {
    return std::optional<client::Transport::Reply>(FakeApiServer::errorReply(403, "Forbidden", "quota exceeded"));
  });
  auto r = sync("job");
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(creates().size(), 1u);  // slow start stops after the first batch fails
  EXPECT_EQ(job("job").status.active, 0);
}

// ---- helpers ----

TEST(JobIntervals, ParseFormatAndMerge) {
  auto oi = OrderedIntervals::parse("0,2-4,6,7", 10);
  EXPECT_EQ(oi.toString(), "0,2-4,6,7");
  EXPECT_EQ(oi.total(), 6);
  EXPECT_TRUE(oi.has(3));
  EXPECT_FALSE(oi.has(5));
  EXPECT_EQ(OrderedIntervals::parse("1-3,5", 3).toString(), "1,2");  // cut at completions
  EXPECT_EQ(OrderedIntervals::parse("1,x,3", 10).toString(), "1,3");  // corrupt pieces skipped
  EXPECT_EQ(OrderedIntervals::parse("1,2", 10).withOrderedIndexes({0, 3, 7}).toString(), "0-3,7");
  EXPECT_EQ(OrderedIntervals::parse("0-2", 10).merge(OrderedIntervals::parse("4-5", 10)).toString(), "0-2,4,5");
}

TEST(JobSuccessPolicy, RulesMatchByIndexesAndCount) {
  api::batch::v1::SuccessPolicy p;
  auto& r = p.rules.emplace_back();
  r.succeededIndexes = "0-3";
  r.succeededCount = 2;
  EXPECT_EQ(matchSuccessPolicy(&p, 10, OrderedIntervals::parse("1,7", 10)), std::nullopt);
  EXPECT_EQ(matchSuccessPolicy(&p, 10, OrderedIntervals::parse("1,3", 10)), "Matched rules at index 0");
  api::batch::v1::SuccessPolicy byCount;
  byCount.rules.emplace_back().succeededCount = 3;
  byCount.rules.emplace_back().succeededCount = 1;
  EXPECT_EQ(matchSuccessPolicy(&byCount, 10, OrderedIntervals::parse("4", 10)), "Matched rules at index 1");
}

TEST(JobBackoff, DoublesFromTenSecondsUpToTheMax) {
  const WallTime now = std::chrono::system_clock::from_time_t(1'000'000);
  auto rem = [&](int failures, int secondsAgo) {
    return std::chrono::duration_cast<std::chrono::seconds>(getRemainingTimeForFailuresCount(
        now, 10s, 10min, failures, now - std::chrono::seconds(secondsAgo)));
  };
  EXPECT_EQ(rem(0, 0), 0s);
  EXPECT_EQ(rem(1, 0), 10s);
  EXPECT_EQ(rem(1, 4), 6s);
  EXPECT_EQ(rem(3, 0), 40s);
  EXPECT_EQ(rem(20, 0), 600s);
  EXPECT_EQ(rem(2, 30), 0s);
}

TEST(JobNames, GenerateNameWithIndexKeepsTheIndexWithinTheLimit) {
  EXPECT_EQ(podGenerateNameWithIndex("job", 3), "job-3-");
  const std::string longName(70, 'a');
  const std::string prefix = podGenerateNameWithIndex(longName, 12);
  EXPECT_EQ(prefix.size(), kMaxGeneratedNameLength);
  EXPECT_EQ(prefix.substr(prefix.size() - 4), "-12-");
}

}  // namespace
}  // namespace kcm::controllers::job
