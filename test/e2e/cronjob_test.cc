// cronjob-controller on the real cluster, as upstream test/e2e/apps/cronjob.go checks it. Schedules are whole minutes,
// so the CronJobs of one case run side by side over the same two schedule times (about two minutes) instead of one
// case each: Allow (two Jobs at once), Forbid (the second run skipped), Replace (the first Job deleted), suspend,
// successfulJobsHistoryLimit, spec.timeZone; then the GC case "should delete jobs and pods created by cronjob".
#include <set>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class CronJobE2E : public SoloKcmSuite<CronJobE2E> {
 public:
  static constexpr const char* kControllers =
      "cronjob-controller,job-controller,garbage-collector-controller,node-lifecycle-controller";
  static constexpr const char* kLogName = "kcm-cronjob";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  // A */1 CronJob; `spec` holds extra spec members, `annotations` the pods'.
  void cronJob(const std::string& name, const std::string& spec, const std::string& annotations = "") {
    apply(R"({"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":")" + name +
          R"("},"spec":{"schedule":"*/1 * * * ?",)" + spec +
          R"("jobTemplate":{"spec":{"template":{"metadata":{"labels":{"cron":")" + name +
          R"("},"annotations":{)" + annotations +
          R"(}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}}}})");
  }
  Json get(const std::string& kind, const std::string& name) {
    ExecResult r = kubectl({"get", kind, name, "-n", ns(), "-o", "json"});
    return r.ok() ? Json::parse(r.out) : Json::object();
  }
  size_t active(const std::string& name) {
    const Json cj = get("cronjob", name);
    return cj.contains("status") ? cj["status"].value("active", Json::array()).size() : 0;
  }
  // The Jobs owned by CronJob `name`.
  std::vector<Json> jobsOf(const std::string& name) {
    std::vector<Json> out;
    ExecResult r = kubectl({"get", "jobs", "-n", ns(), "-o", "json"});
    if (!r.ok()) return out;
    const Json list = Json::parse(r.out);
    for (const auto& j : list["items"]) {
      const Json refs = j["metadata"].value("ownerReferences", Json::array());
      for (const auto& ref : refs)
        if (ref.value("kind", "") == "CronJob" && ref.value("name", "") == name) out.push_back(j);
    }
    return out;
  }
  bool hasEvent(const std::string& reason, const std::string& object) {
    for (const auto& e : eventsWithReason(ns(), reason))
      if (e["involvedObject"].value("name", "") == object) return true;
    return false;
  }
};

TEST_F(CronJobE2E, PoliciesSuspendHistoryAndTimeZoneOverTwoScheduleTimes) {
  cronJob("allow", R"("concurrencyPolicy":"Allow",)", R"("kwok.kcm.test/behavior":"run")");
  cronJob("forbid", R"("concurrencyPolicy":"Forbid",)", R"("kwok.kcm.test/behavior":"run")");
  cronJob("replace", R"("concurrencyPolicy":"Replace",)", R"("kwok.kcm.test/behavior":"run")");
  cronJob("paused", R"("suspend":true,)");
  cronJob("history", R"("successfulJobsHistoryLimit":1,"failedJobsHistoryLimit":1,)");
  cronJob("berlin", R"("timeZone":"Europe/Berlin",)");

  // "should schedule multiple jobs concurrently": two schedule times, two Jobs running at once.
  ASSERT_TRUE(waitFor([&] { return active("allow") >= 2; }, 200s, 1s)) << get("cronjob", "allow").dump();
  EXPECT_TRUE(get("cronjob", "allow")["status"].contains("lastScheduleTime"));

  // "should not schedule new jobs when ForbidConcurrent": still the first Job, the second time skipped.
  EXPECT_TRUE(waitFor([&] { return hasEvent("JobAlreadyActive", "forbid"); }, 30s));
  EXPECT_EQ(active("forbid"), 1u);
  EXPECT_EQ(jobsOf("forbid").size(), 1u);

  // "should replace jobs when ReplaceConcurrent": the first Job deleted, one active.
  EXPECT_TRUE(waitFor([&] { return hasEvent("SuccessfulDelete", "replace") && jobsOf("replace").size() == 1; }, 30s));
  EXPECT_EQ(active("replace"), 1u);

  // "should not schedule jobs when suspended"
  EXPECT_TRUE(jobsOf("paused").empty());
  EXPECT_EQ(active("paused"), 0u);

  // "should delete successful finished jobs with limit of one successful job": two ran, one kept.
  EXPECT_TRUE(waitFor([&] { return hasEvent("SawCompletedJob", "history") && jobsOf("history").size() == 1; }, 30s))
      << jobsOf("history").size();
  EXPECT_TRUE(get("cronjob", "history")["status"].contains("lastSuccessfulTime"));

  // spec.timeZone: the scheduled time in the zone's offset.
  const auto berlin = jobsOf("berlin");
  ASSERT_FALSE(berlin.empty());
  const std::string stamp = berlin[0]["metadata"]["annotations"].value("batch.kubernetes.io/cronjob-scheduled-timestamp", "");
  EXPECT_TRUE(stamp.size() > 6 && (stamp.substr(stamp.size() - 6) == "+01:00" || stamp.substr(stamp.size() - 6) == "+02:00"))
      << stamp;

  // Job names are <cronjob>-<scheduled time in minutes>.
  std::set<std::string> names;
  for (const auto& j : jobsOf("allow")) names.insert(j["metadata"].value("name", ""));
  for (const auto& n : names) EXPECT_EQ(n.rfind("allow-", 0), 0u) << n;

  // "should delete jobs and pods created by cronjob" (garbage collector): foreground deletion of the CronJob.
  ASSERT_TRUE(kubectl({"delete", "cronjob", "allow", "-n", ns(), "--cascade=foreground", "--wait=false"}).ok());
  EXPECT_TRUE(waitFor([&] {
    return jobsOf("allow").empty() &&
           kubectl({"get", "pods", "-n", ns(), "-l", "cron=allow", "-o", "name"}).out.empty();
  }, 60s));
  for (const char* n : {"forbid", "replace", "history", "berlin", "paused"})
    kubectl({"delete", "cronjob", n, "-n", ns(), "--cascade=background", "--wait=false"});
}

}  // namespace
}  // namespace kcm::e2e
