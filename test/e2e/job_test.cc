// job-controller on the real cluster, as upstream test/e2e/apps/job.go checks it. KWOK plays the kubelet: pods
// succeed at once unless their template carries a kwok.kcm.test/behavior annotation (fail with an exit code, stay
// Running, fail on odd indexes: test/cluster/kwok-stages/pod-behaviors.yaml).
#include <set>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class JobE2E : public SoloKcmSuite<JobE2E> {
 public:
  // node-lifecycle: new KWOK nodes lose the not-ready taint, so the scheduler places the pods; the garbage
  // collector removes a deleted Job's pods.
  static constexpr const char* kControllers =
      "job-controller,garbage-collector-controller,node-lifecycle-controller";
  static constexpr const char* kLogName = "kcm-job";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  // A Job; `spec` holds extra spec members ("\"completions\":4,"), `annotations` the pod template's.
  void job(const std::string& name, const std::string& spec, const std::string& annotations = "") {
    apply(R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":")" + name + R"("},"spec":{)" + spec +
          R"("template":{"metadata":{"annotations":{)" + annotations +
          R"(}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}})");
  }
  Json jobJson(const std::string& name) {
    ExecResult r = kubectl({"get", "job", name, "-n", ns(), "-o", "json"});
    return r.ok() ? Json::parse(r.out) : Json();
  }
  // "Type=Status/Reason" of every condition, in order.
  std::string conditions(const std::string& name) {
    std::string out;
    const Json j = jobJson(name);
    const Json list = j.is_object() ? j["status"].value("conditions", Json::array()) : Json::array();
    for (const auto& c : list)
      out += (out.empty() ? "" : ",") + c.value("type", "") + "=" + c.value("status", "") + "/" + c.value("reason", "");
    return out;
  }
  bool hasCondition(const std::string& name, const std::string& typeReason) {
    return conditions(name).find(typeReason) != std::string::npos;
  }
  Json pods(const std::string& jobName) {
    ExecResult r = kubectl({"get", "pods", "-n", ns(), "-l", "job-name=" + jobName, "-o", "json"});
    return r.ok() ? Json::parse(r.out)["items"] : Json::array();
  }
  int status(const std::string& name, const std::string& field) {
    const Json j = jobJson(name);
    return j.is_object() ? j["status"].value(field, 0) : 0;
  }
  std::vector<Json> events(const std::string& reason) { return eventsWithReason(ns(), reason); }
};

// "should run a job to completion when tasks succeed"
TEST_F(JobE2E, AJobRunsToCompletion) {
  job("done", R"("completions":4,"parallelism":2,)");
  ASSERT_TRUE(waitFor([&] { return hasCondition("done", "Complete=True/CompletionsReached"); }, 90s))
      << conditions("done");
  Json j = jobJson("done");
  EXPECT_EQ(j["status"].value("succeeded", 0), 4);
  EXPECT_EQ(j["status"].value("active", 0), 0);  // omitted when zero
  EXPECT_TRUE(j["status"].contains("completionTime"));
  EXPECT_EQ(conditions("done"), "SuccessCriteriaMet=True/CompletionsReached,Complete=True/CompletionsReached");
  const Json ps = pods("done");
  EXPECT_EQ(ps.size(), 4u);
  for (const auto& p : ps) {
    EXPECT_EQ(p["status"].value("phase", ""), "Succeeded");
    EXPECT_FALSE(p["metadata"].contains("finalizers")) << p["metadata"].dump();  // counted, finalizer off
  }
  EXPECT_TRUE(waitFor([&] { return !events("Completed").empty(); }, 20s));
}

// "should not create pods when created in suspend state" / "should delete pods when suspended"
TEST_F(JobE2E, ASuspendedJobCreatesNoPodsAndRunsOnResume) {
  job("later", R"("suspend":true,"completions":2,"parallelism":2,)");
  ASSERT_TRUE(waitFor([&] { return hasCondition("later", "Suspended=True/JobSuspended"); }, 60s))
      << conditions("later");
  EXPECT_TRUE(pods("later").empty());
  EXPECT_FALSE(jobJson("later")["status"].contains("startTime"));
  ASSERT_TRUE(kubectl({"patch", "job", "later", "-n", ns(), "--type=merge", "-p", R"({"spec":{"suspend":false}})"}).ok());
  ASSERT_TRUE(waitFor([&] { return hasCondition("later", "Complete=True"); }, 90s)) << conditions("later");
  EXPECT_TRUE(hasCondition("later", "Suspended=False/JobResumed"));
  EXPECT_TRUE(jobJson("later")["status"].contains("startTime"));
}

// "should delete pods when suspended": running pods go when the Job is suspended.
TEST_F(JobE2E, SuspendingARunningJobDeletesItsPods) {
  job("pause", R"("completions":2,"parallelism":2,)", R"("kwok.kcm.test/behavior":"run")");
  ASSERT_TRUE(waitFor([&] { return status("pause", "ready") == 2; }, 60s)) << jobJson("pause").dump();
  ASSERT_TRUE(kubectl({"patch", "job", "pause", "-n", ns(), "--type=merge", "-p", R"({"spec":{"suspend":true}})"}).ok());
  ASSERT_TRUE(waitFor([&] { return pods("pause").empty(); }, 60s));
  EXPECT_TRUE(waitFor([&] { return hasCondition("pause", "Suspended=True/JobSuspended"); }, 30s));
  EXPECT_EQ(status("pause", "active"), 0);
}

// "should create pods for an Indexed job with completion indexes and specified hostname"
TEST_F(JobE2E, AnIndexedJobGivesEachPodItsIndexAndHostname) {
  job("idx", R"("completions":4,"parallelism":2,"completionMode":"Indexed",)");
  ASSERT_TRUE(waitFor([&] { return hasCondition("idx", "Complete=True"); }, 90s)) << conditions("idx");
  EXPECT_EQ(jobJson("idx")["status"].value("completedIndexes", ""), "0-3");
  std::set<std::string> hostnames, indexes;
  const Json idxPods = pods("idx");
  for (const auto& p : idxPods) {
    hostnames.insert(p["spec"].value("hostname", ""));
    indexes.insert(p["metadata"]["annotations"].value("batch.kubernetes.io/job-completion-index", ""));
    EXPECT_EQ(p["metadata"]["labels"].value("batch.kubernetes.io/job-completion-index", "?"),
              p["metadata"]["annotations"].value("batch.kubernetes.io/job-completion-index", "!"));
    EXPECT_EQ(p["spec"]["containers"][0]["env"][0].value("name", ""), "JOB_COMPLETION_INDEX");
  }
  EXPECT_EQ(hostnames, (std::set<std::string>{"idx-0", "idx-1", "idx-2", "idx-3"}));
  EXPECT_EQ(indexes, (std::set<std::string>{"0", "1", "2", "3"}));
}

// "should fail to exceed backoffLimit"
TEST_F(JobE2E, PastTheBackoffLimitTheJobFails) {
  job("doomed", R"("backoffLimit":1,)", R"("kwok.kcm.test/behavior":"fail")");
  ASSERT_TRUE(waitFor([&] { return hasCondition("doomed", "Failed=True/BackoffLimitExceeded"); }, 90s))
      << conditions("doomed");
  EXPECT_EQ(status("doomed", "failed"), 2);  // the first pod, then one replacement after the 10 s back-off
  EXPECT_EQ(pods("doomed").size(), 2u);
  EXPECT_FALSE(events("BackoffLimitExceeded").empty());
}

// "should fail when exceeds active deadline"
TEST_F(JobE2E, PastActiveDeadlineSecondsTheJobFails) {
  job("slow", R"("activeDeadlineSeconds":3,"parallelism":2,"completions":2,)", R"("kwok.kcm.test/behavior":"run")");
  ASSERT_TRUE(waitFor([&] { return hasCondition("slow", "Failed=True/DeadlineExceeded"); }, 60s)) << conditions("slow");
  EXPECT_TRUE(hasCondition("slow", "FailureTarget=True/DeadlineExceeded"));
  EXPECT_TRUE(waitFor([&] { return pods("slow").empty(); }, 30s));  // the running pods were deleted
}

// "should allow to use the pod failure policy on exit code to fail the job early"
TEST_F(JobE2E, PodFailurePolicyFailJobOnAnExitCode) {
  job("policy",
      R"("backoffLimit":6,"podFailurePolicy":{"rules":[{"action":"FailJob","onExitCodes":{"operator":"In","values":[42]}}]},)",
      R"("kwok.kcm.test/behavior":"fail","kwok.kcm.test/exit-code":"42")");
  ASSERT_TRUE(waitFor([&] { return hasCondition("policy", "Failed=True/PodFailurePolicy"); }, 60s))
      << conditions("policy");
  std::string msg;
  const Json policy = jobJson("policy");
  for (const auto& c : policy["status"]["conditions"])
    if (c["type"] == "Failed") msg = c.value("message", "");
  EXPECT_NE(msg.find("failed with exit code 42 matching FailJob rule at index 0"), std::string::npos) << msg;
  EXPECT_EQ(status("policy", "failed"), 1);
}

// "should allow to use the pod failure policy to not count the failure towards the backoffLimit"
TEST_F(JobE2E, PodFailurePolicyIgnoreDoesNotCountDisruptions) {
  job("tolerant",
      R"("backoffLimit":0,"completions":1,"podFailurePolicy":{"rules":[{"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget","status":"True"}]}]},)",
      R"("kwok.kcm.test/behavior":"fail","kwok.kcm.test/condition":"DisruptionTarget")");
  // Every pod fails with DisruptionTarget: ignored, re-created after the back-off, the Job never fails.
  ASSERT_TRUE(waitFor([&] { return pods("tolerant").size() >= 2; }, 60s));
  EXPECT_EQ(status("tolerant", "failed"), 0);
  EXPECT_EQ(conditions("tolerant"), "");
  ASSERT_TRUE(kubectl({"delete", "job", "tolerant", "-n", ns()}).ok());
}

// "should execute all indexes despite some failing when using backoffLimitPerIndex" / maxFailedIndexes
TEST_F(JobE2E, BackoffLimitPerIndexRunsEveryIndexThenFails) {
  job("perindex", R"("completions":4,"parallelism":4,"completionMode":"Indexed","backoffLimitPerIndex":0,)",
      R"("kwok.kcm.test/behavior":"fail-odd-index")");
  ASSERT_TRUE(waitFor([&] { return hasCondition("perindex", "Failed=True/FailedIndexes"); }, 90s))
      << conditions("perindex");
  Json s = jobJson("perindex")["status"];
  EXPECT_EQ(s.value("failedIndexes", ""), "1,3");
  EXPECT_EQ(s.value("completedIndexes", ""), "0,2");
  EXPECT_EQ(s.value("succeeded", 0), 2);
  EXPECT_EQ(s.value("failed", 0), 2);
}

// "should allow to use a pod failure policy to ignore failure matching on DisruptionTarget condition" has its
// FailIndex sibling: an index whose pod fails with a matching exit code is failed at once, without its retries.
TEST_F(JobE2E, PodFailurePolicyFailIndexSkipsTheIndexRetries) {
  job("failindex",
      R"("completions":4,"parallelism":4,"completionMode":"Indexed","backoffLimitPerIndex":1,)"
      R"("podFailurePolicy":{"rules":[{"action":"FailIndex","onExitCodes":{"operator":"In","values":[42]}}]},)",
      R"("kwok.kcm.test/behavior":"fail-odd-index","kwok.kcm.test/exit-code":"42")");
  ASSERT_TRUE(waitFor([&] { return hasCondition("failindex", "Failed=True/FailedIndexes"); }, 90s))
      << conditions("failindex");
  Json s = jobJson("failindex")["status"];
  EXPECT_EQ(s.value("failedIndexes", ""), "1,3");
  EXPECT_EQ(s.value("failed", 0), 2);  // no second try for the failed indexes
  EXPECT_EQ(pods("failindex").size(), 4u);
}

TEST_F(JobE2E, MaxFailedIndexesEndsTheJobEarly) {
  job("maxfailed",
      R"("completions":4,"parallelism":2,"completionMode":"Indexed","backoffLimitPerIndex":0,"maxFailedIndexes":0,)",
      R"("kwok.kcm.test/behavior":"fail-odd-index")");
  ASSERT_TRUE(waitFor([&] { return hasCondition("maxfailed", "Failed=True/MaxFailedIndexesExceeded"); }, 90s))
      << conditions("maxfailed");
  EXPECT_EQ(jobJson("maxfailed")["status"].value("failedIndexes", ""), "1");
}

// "with successPolicy succeededIndexes rule should succeeded even when some indexes remain pending"
TEST_F(JobE2E, SuccessPolicyCompletesTheJobBeforeEveryIndexRan) {
  job("enough",
      R"("completions":4,"parallelism":4,"completionMode":"Indexed","successPolicy":{"rules":[{"succeededIndexes":"0,2"}]},)",
      R"("kwok.kcm.test/behavior":"fail-odd-index")");
  ASSERT_TRUE(waitFor([&] { return hasCondition("enough", "Complete=True/SuccessPolicy"); }, 90s))
      << conditions("enough");
  EXPECT_TRUE(hasCondition("enough", "SuccessCriteriaMet=True/SuccessPolicy"));
}

// "should remove pods when job is deleted"
TEST_F(JobE2E, DeletingAJobRemovesItsPods) {
  job("gone", R"("parallelism":2,"completions":2,)", R"("kwok.kcm.test/behavior":"run")");
  ASSERT_TRUE(waitFor([&] { return pods("gone").size() == 2; }, 60s));
  ASSERT_TRUE(kubectl({"delete", "job", "gone", "-n", ns(), "--cascade=background"}).ok());
  EXPECT_TRUE(waitFor([&] { return pods("gone").empty(); }, 60s));
}

// "should adopt matching orphans and release non-matching pods"
TEST_F(JobE2E, MatchingOrphansAreAdoptedAndNonMatchingPodsReleased) {
  job("owner", R"("parallelism":2,"completions":2,)", R"("kwok.kcm.test/behavior":"run")");
  ASSERT_TRUE(waitFor([&] { return status("owner", "ready") == 2; }, 60s));
  const std::string uid = jobJson("owner")["metadata"].value("uid", "");
  const std::string orphan = pods("owner")[0]["metadata"].value("name", "");
  ASSERT_TRUE(kubectl({"patch", "pod", orphan, "-n", ns(), "--type=merge", "-p",
                       R"({"metadata":{"ownerReferences":null}})"})
                  .ok());
  EXPECT_TRUE(waitFor([&] {
    const Json p = kubectlJson({"get", "pod", orphan, "-n", ns()});
    const Json refs = p["metadata"].value("ownerReferences", Json::array());
    return refs.size() == 1 &&
           p["metadata"]["ownerReferences"][0].value("uid", "") == uid;
  }, 30s)) << "orphan not adopted";
  // Release: labels that no longer match the selector.
  ASSERT_TRUE(kubectl({"label", "pod", orphan, "-n", ns(), "--overwrite", "batch.kubernetes.io/controller-uid-",
                       "controller-uid-"})
                  .ok());
  EXPECT_TRUE(waitFor([&] {
    const Json p = kubectlJson({"get", "pod", orphan, "-n", ns()});
    return !p["metadata"].contains("ownerReferences") && !p["metadata"].contains("finalizers");
  }, 30s)) << kubectl({"get", "pod", orphan, "-n", ns(), "-o", "json"}).out;
  kubectl({"delete", "pod", orphan, "-n", ns(), "--wait=false"});
}

// "should not create pods when managedBy is set to a foreign controller"
TEST_F(JobE2E, AJobManagedElsewhereIsLeftAlone) {
  job("foreign", R"("managedBy":"example.com/other",)");
  job("ours", "");
  ASSERT_TRUE(waitFor([&] { return hasCondition("ours", "Complete=True"); }, 60s));  // we did look at the namespace
  EXPECT_TRUE(pods("foreign").empty());
  EXPECT_FALSE(jobJson("foreign")["status"].contains("startTime"));
}

// status.ready and status.terminating with podReplacementPolicy Failed.
TEST_F(JobE2E, ReadyAndTerminatingAreReported) {
  job("counts", R"("parallelism":3,"completions":3,"podReplacementPolicy":"Failed",)", R"("kwok.kcm.test/behavior":"run")");
  ASSERT_TRUE(waitFor([&] { return status("counts", "ready") == 3 && status("counts", "active") == 3; }, 60s))
      << jobJson("counts").dump();
  EXPECT_EQ(status("counts", "terminating"), 0);
  ASSERT_TRUE(kubectl({"delete", "job", "counts", "-n", ns()}).ok());
}

}  // namespace
}  // namespace kcm::e2e
