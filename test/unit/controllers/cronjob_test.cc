// cronjob-controller: the cron parser and its calendar walk (robfig/cron v3's parser_test/spec_test cases), time
// zones from the system tz database, and the controller's sync over the in-memory apiserver (upstream
// cronjob_controllerv2_test.go TestControllerV2SyncCronJob's cases: schedule, Forbid/Replace, suspend, missed
// deadlines, finished and missing Jobs, history limits).
#include "controllers/cronjob/cronjob_controller.h"

#include <gtest/gtest.h>

#include "api/gen/batch_v1_json.h"
#include "controllers/util/controller_utils.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::cronjob {
namespace {

using testing::FakeApiServer;
using namespace std::chrono_literals;
using std::chrono::system_clock;

WallTime at(int64_t y, int m, int d, int h, int mi, int s = 0) {
  return system_clock::from_time_t(static_cast<std::time_t>(daysFromCivil(y, m, d) * 86400 + h * 3600 + mi * 60 + s));
}
std::string utc(WallTime t) { return formatRFC3339(t, *TimeZone::utc()); }
std::string nextOf(const std::string& spec, WallTime from) {
  auto s = CronSchedule::parseStandard(spec);
  if (!s.ok()) return "error: " + s.status().message();
  return utc(s->next(from));
}
std::string parseError(const std::string& spec) {
  auto s = CronSchedule::parseStandard(spec);
  return s.ok() ? "" : s.status().message();
}

// ---- parser and next() ----

TEST(CronSchedule, NextWalksTheFields) {
  EXPECT_EQ(nextOf("*/15 * * * *", at(2026, 1, 1, 10, 7, 30)), "2026-01-01T10:15:00Z");
  EXPECT_EQ(nextOf("*/1 * * * *", at(2026, 1, 1, 10, 7, 0)), "2026-01-01T10:08:00Z");  // strictly after
  EXPECT_EQ(nextOf("0 9 * * 1-5", at(2026, 1, 2, 10, 0)), "2026-01-05T09:00:00Z");     // Friday -> Monday
  EXPECT_EQ(nextOf("0 0 * JAN,feb MON", at(2026, 1, 27, 0, 0)), "2026-02-02T00:00:00Z");
  EXPECT_EQ(nextOf("0 0 13 * 5", at(2026, 1, 1, 0, 0)), "2026-01-02T00:00:00Z");  // the 13th or a Friday
  EXPECT_EQ(nextOf("0 0 29 2 *", at(2026, 3, 1, 0, 0)), "2028-02-29T00:00:00Z");
  EXPECT_EQ(nextOf("5/20 * * * *", at(2026, 1, 1, 0, 6)), "2026-01-01T00:25:00Z");  // N/step is N-max/step
  EXPECT_EQ(nextOf("? * * * *", at(2026, 1, 1, 0, 6)), "2026-01-01T00:07:00Z");
}

TEST(CronSchedule, Descriptors) {
  const WallTime t = at(2026, 1, 7, 10, 30);  // a Wednesday
  EXPECT_EQ(nextOf("@hourly", t), "2026-01-07T11:00:00Z");
  EXPECT_EQ(nextOf("@daily", t), "2026-01-08T00:00:00Z");
  EXPECT_EQ(nextOf("@midnight", t), "2026-01-08T00:00:00Z");
  EXPECT_EQ(nextOf("@weekly", t), "2026-01-11T00:00:00Z");
  EXPECT_EQ(nextOf("@monthly", t), "2026-02-01T00:00:00Z");
  EXPECT_EQ(nextOf("@yearly", t), "2027-01-01T00:00:00Z");
  EXPECT_EQ(nextOf("@annually", t), "2027-01-01T00:00:00Z");
  EXPECT_EQ(nextOf("@every 90s", t + 500ms), "2026-01-07T10:31:30Z");
  EXPECT_EQ(nextOf("@every 1h30m", t), "2026-01-07T12:00:00Z");
}

TEST(CronSchedule, ErrorsAreRobfigs) {
  EXPECT_EQ(parseError(""), "empty spec string");
  EXPECT_EQ(parseError("* * *"), "expected exactly 5 fields, found 3: [* * *]");
  EXPECT_EQ(parseError("60 * * * *"), "end of range (60) above maximum (59): 60");
  EXPECT_EQ(parseError("* * 0 * *"), "beginning of range (0) below minimum (1): 0");
  EXPECT_EQ(parseError("5-2 * * * *"), "beginning of range (5) beyond end of range (2): 5-2");
  EXPECT_EQ(parseError("x * * * *"), "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax");
  EXPECT_EQ(parseError("*/0 * * * *"), "step of range should be a positive number: */0");
  EXPECT_EQ(parseError("1-2-3 * * * *"), "too many hyphens: 1-2-3");
  EXPECT_EQ(parseError("* * * * 7"), "end of range (7) above maximum (6): 7");
  EXPECT_EQ(parseError("@fortnightly"), "unrecognized descriptor: @fortnightly");
  EXPECT_EQ(parseError("@every x"), "failed to parse duration @every x: time: invalid duration \"x\"");
  EXPECT_EQ(parseError("TZ=Nowhere/Land * * * * *"), "provided bad location Nowhere/Land: unknown time zone Nowhere/Land");
  EXPECT_EQ(parseError("TZ=UTC"), "invalid schedule format: runtime error: slice bounds out of range [3:-1]");
}

// ---- time zones ----

TEST(CronTimeZone, OffsetsFromTheTzDatabaseAndItsRule) {
  auto berlin = TimeZone::load("Europe/Berlin");
  ASSERT_TRUE(berlin.ok()) << berlin.status().message();
  auto off = [&](WallTime t) { return (*berlin)->lookup(system_clock::to_time_t(t)).offset; };
  EXPECT_EQ(off(at(2026, 1, 15, 12, 0)), 3600);
  EXPECT_EQ(off(at(2026, 7, 15, 12, 0)), 7200);
  EXPECT_EQ(off(at(2045, 7, 15, 12, 0)), 7200);  // past the file's transitions: the POSIX rule
  EXPECT_EQ(off(at(2045, 12, 15, 12, 0)), 3600);
  EXPECT_EQ(formatRFC3339(at(2026, 7, 1, 7, 0), **berlin), "2026-07-01T09:00:00+02:00");
  EXPECT_EQ(TimeZone::load("Nowhere/Land").status().message(), "unknown time zone Nowhere/Land");
  EXPECT_EQ(TimeZone::load("../etc/passwd").status().message(), "time: invalid location name");
  EXPECT_TRUE(TimeZone::load("").ok());
}

TEST(CronTimeZone, SchedulesWalkTheirZoneAcrossDaylightSaving) {
  EXPECT_EQ(nextOf("TZ=Europe/Berlin 0 9 * * *", at(2026, 7, 1, 0, 0)), "2026-07-01T07:00:00Z");
  EXPECT_EQ(nextOf("CRON_TZ=Europe/Berlin 0 9 * * *", at(2026, 1, 1, 0, 0)), "2026-01-01T08:00:00Z");
  // 2026-03-29 01:00Z: Berlin jumps from 02:00 CET to 03:00 CEST; the next full hour is 03:00 local.
  EXPECT_EQ(nextOf("TZ=Europe/Berlin 0 * * * *", at(2026, 3, 29, 0, 30)), "2026-03-29T01:00:00Z");
  // 2026-11-01 06:00Z: New York falls back from EDT to EST; midnights are 04:00Z before and 05:00Z after.
  EXPECT_EQ(nextOf("TZ=America/New_York 0 0 * * *", at(2026, 11, 1, 3, 0)), "2026-11-01T04:00:00Z");
  EXPECT_EQ(nextOf("TZ=America/New_York 0 0 * * *", at(2026, 11, 1, 4, 0)), "2026-11-02T05:00:00Z");
}

// ---- schedule bookkeeping ----

TEST(CronSchedule, MostRecentScheduleTimeAndTheRequeueDelay) {
  CronJob cj;
  cj.metadata.creationTimestamp = api::Time::fromUnix(system_clock::to_time_t(at(2026, 1, 1, 10, 0, 30)));
  auto s = *CronSchedule::parseStandard("*/1 * * * *");
  MostRecent m = mostRecentScheduleTime(cj, at(2026, 1, 1, 10, 0, 50), s, true);
  EXPECT_FALSE(m.mostRecent);
  m = mostRecentScheduleTime(cj, at(2026, 1, 1, 10, 1, 5), s, true);
  ASSERT_TRUE(m.mostRecent);
  EXPECT_EQ(utc(*m.mostRecent), "2026-01-01T10:01:00Z");
  m = mostRecentScheduleTime(cj, at(2026, 1, 1, 13, 0, 5), s, true);  // 180 missed
  EXPECT_EQ(utc(*m.mostRecent), "2026-01-01T13:00:00Z");
  EXPECT_EQ(m.missed, 2);
  EXPECT_EQ(nextScheduleTimeDuration(cj, at(2026, 1, 1, 10, 0, 50), s), std::chrono::milliseconds(10100));
  EXPECT_EQ(getJobName(cj, at(2026, 1, 1, 10, 1)), "-" + std::to_string(system_clock::to_time_t(at(2026, 1, 1, 10, 1)) / 60));
}

// ---- the controller ----

class CronJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    for (auto [res, kind] : {std::pair{"jobs", "Job"}, std::pair{"cronjobs", "CronJob"}})
      server->addResource({"batch", "v1", res, kind, true,
                           {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
  }
  int64_t now() const { return system_clock::to_time_t(clock.wallNow()); }
  // A CronJob created `createdAgo` seconds ago.
  CronJob cronJob(const std::string& schedule, int64_t createdAgo = 90) {
    CronJob cj;
    cj.metadata.namespace_ = "ns";
    cj.metadata.name = "cj";
    cj.metadata.creationTimestamp = api::Time::fromUnix(now() - createdAgo);
    cj.spec.schedule = schedule;
    cj.spec.concurrencyPolicy = "Allow";
    cj.spec.jobTemplate.metadata.labels["app"] = "cron";
    auto& c = cj.spec.jobTemplate.spec.template_.spec.containers.emplace_back();
    c.name = "c";
    c.image = "busybox";
    cj.spec.jobTemplate.spec.template_.spec.restartPolicy = "Never";
    return cj;
  }
  CronJob add(CronJob cj) {
    CronJob stored = server->add(cj);
    factory.forType<CronJob>().store().upsert("ns/cj", std::make_shared<const CronJob>(stored));
    return stored;
  }
  // A Job of the CronJob, finished as `condition` ("" running), started `startedAgo` seconds ago.
  Job ownedJob(const CronJob& cj, const std::string& name, const std::string& condition, int64_t startedAgo) {
    Job j;
    j.metadata.namespace_ = "ns";
    j.metadata.name = name;
    j.metadata.ownerReferences.push_back(controllers::newControllerRef(cj.metadata, "batch/v1", "CronJob"));
    j.status.startTime = api::Time::fromUnix(now() - startedAgo);
    if (!condition.empty()) {
      auto& c = j.status.conditions.emplace_back();
      c.type = condition;
      c.status = "True";
      if (condition == "Complete") j.status.completionTime = api::Time::fromUnix(now() - startedAgo + 5);
    }
    Job stored = server->add(j);
    factory.forType<Job>().store().upsert("ns/" + name, std::make_shared<const Job>(stored));
    return stored;
  }
  static api::core::v1::ObjectReference refTo(const Job& j) {
    api::core::v1::ObjectReference r;
    r.apiVersion = "batch/v1";
    r.kind = "Job";
    r.namespace_ = j.metadata.namespace_;
    r.name = j.metadata.name;
    r.uid = j.metadata.uid;
    return r;
  }
  // A */1 CronJob with `policy` whose Job "cj-old", started by the previous run, still runs.
  void withRunningJob(const std::string& policy) {
    CronJob spec = cronJob("*/1 * * * *", 200);
    spec.spec.concurrencyPolicy = policy;
    CronJob cj = add(spec);
    Job running = ownedJob(cj, "cj-old", "", 100);
    cj.status.active.push_back(refTo(running));
    cj.status.lastScheduleTime = api::Time::fromUnix(now() - 90);
    add(cj);
  }
  runtime::SyncResult sync() { return controller.sync("ns/cj"); }
  CronJob stored() { return *server->get<CronJob>("ns", "cj"); }
  std::vector<std::string> events() {
    broadcaster.flush();
    return eventSink->createdEvents();
  }
  std::vector<Job> jobs() { return server->list<Job>("ns"); }

  // 2026-01-01T00:00:00Z + 30 s: the */1 schedule fired 30 s ago.
  FakeClock clock{system_clock::from_time_t(1767225630)};
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  std::shared_ptr<FakeApiServer> eventSink = std::make_shared<FakeApiServer>();
  client::EventBroadcaster broadcaster{eventSink->client(), "test"};
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  CronJobController controller{server->client(), broadcaster.newRecorder("cronjob-controller"),
                               factory.forType<CronJob>(), factory.forType<Job>(), clock, TimeZone::utc()};
};

TEST_F(CronJobTest, TheScheduledTimeStartsAJobNamedByItsMinute) {
  add(cronJob("*/1 * * * *"));
  auto r = sync();
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_TRUE(r.requeueAfter);
  EXPECT_EQ(*r.requeueAfter, std::chrono::milliseconds(30100));  // the next minute, +100 ms
  auto js = jobs();
  ASSERT_EQ(js.size(), 1u);
  EXPECT_EQ(js[0].metadata.name, "cj-" + std::to_string(1767225600 / 60));
  EXPECT_EQ(js[0].metadata.annotations.at("batch.kubernetes.io/cronjob-scheduled-timestamp"), "2026-01-01T00:00:00Z");
  EXPECT_EQ(js[0].metadata.labels.at("app"), "cron");
  ASSERT_EQ(js[0].metadata.ownerReferences.size(), 1u);
  EXPECT_EQ(js[0].metadata.ownerReferences[0].kind, "CronJob");
  CronJob cj = stored();
  ASSERT_EQ(cj.status.active.size(), 1u);
  EXPECT_EQ(cj.status.active[0].name, js[0].metadata.name);
  EXPECT_EQ(cj.status.lastScheduleTime->unixSeconds, 1767225600);
  EXPECT_EQ(events(), (std::vector<std::string>{"Normal SuccessfulCreate Created job " + js[0].metadata.name}));
}

TEST_F(CronJobTest, TheTimeZoneGoesIntoTheScheduleAndTheAnnotation) {
  CronJob spec = cronJob("0 1 * * *", 7200);  // 01:00 in Berlin is 00:00Z in January
  spec.spec.timeZone = "Europe/Berlin";
  add(spec);
  ASSERT_TRUE(sync().status.ok());
  auto js = jobs();
  ASSERT_EQ(js.size(), 1u);
  EXPECT_EQ(js[0].metadata.annotations.at("batch.kubernetes.io/cronjob-scheduled-timestamp"),
            "2026-01-01T01:00:00+01:00");
}

TEST_F(CronJobTest, ForbidWaitsForTheActiveJob) {
  withRunningJob("Forbid");
  auto r = sync();
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(jobs().size(), 1u);
  EXPECT_EQ(events(), (std::vector<std::string>{
                          "Normal JobAlreadyActive Not starting job because prior execution is running and concurrency policy is Forbid"}));
}

TEST_F(CronJobTest, ReplaceDeletesTheActiveJobAndStartsANewOne) {
  withRunningJob("Replace");
  ASSERT_TRUE(sync().status.ok());
  auto js = jobs();
  ASSERT_EQ(js.size(), 1u);
  EXPECT_NE(js[0].metadata.name, "cj-old");
  auto dels = server->actionsFor("delete", "jobs");
  ASSERT_EQ(dels.size(), 1u);
  EXPECT_NE(dels[0].body.find("Background"), std::string::npos);
  EXPECT_EQ(stored().status.active.size(), 1u);
  auto ev = events();
  EXPECT_EQ(ev.at(0), "Normal SuccessfulDelete Deleted job cj-old");
}

TEST_F(CronJobTest, ASuspendedCronJobStartsNothing) {
  CronJob spec = cronJob("*/1 * * * *");
  spec.spec.suspend = true;
  add(spec);
  auto r = sync();
  ASSERT_TRUE(r.status.ok());
  EXPECT_FALSE(r.requeueAfter);
  EXPECT_TRUE(jobs().empty());
}

// Only schedule times within startingDeadlineSeconds are considered at all (upstream looks from now minus the
// deadline), so a time that passed the deadline is skipped silently and the next one is waited for.
TEST_F(CronJobTest, PastTheStartingDeadlineTheRunIsSkipped) {
  CronJob spec = cronJob("*/1 * * * *");
  spec.spec.startingDeadlineSeconds = 10;  // fired 30 s ago
  add(spec);
  auto r = sync();
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(jobs().empty());
  EXPECT_TRUE(events().empty());
  ASSERT_TRUE(r.requeueAfter);
  EXPECT_EQ(*r.requeueAfter, std::chrono::milliseconds(30100));
}

TEST_F(CronJobTest, TooManyMissedStartTimesAreReported) {
  add(cronJob("*/1 * * * *", 200 * 60));
  ASSERT_TRUE(sync().status.ok());
  EXPECT_EQ(jobs().size(), 1u);  // only the most recent one runs
  auto ev = events();
  EXPECT_EQ(ev.at(0), "Warning TooManyMissedTimes too many missed start times. Set or decrease "
                      ".spec.startingDeadlineSeconds or check clock skew");
}

TEST_F(CronJobTest, AFinishedJobLeavesTheActiveListAndSetsLastSuccessfulTime) {
  CronJob cj = add(cronJob("0 0 1 1 *", 30));  // yearly: nothing due now (created after it fired)
  Job done = ownedJob(cj, "cj-done", "Complete", 60);
  cj.status.active.push_back(refTo(done));
  add(cj);
  ASSERT_TRUE(sync().status.ok());
  CronJob after = stored();
  EXPECT_TRUE(after.status.active.empty());
  ASSERT_TRUE(after.status.lastSuccessfulTime);
  EXPECT_EQ(after.status.lastSuccessfulTime->unixSeconds, now() - 55);
  EXPECT_EQ(events(), (std::vector<std::string>{"Normal SawCompletedJob Saw completed job: cj-done, condition: Complete"}));
}

TEST_F(CronJobTest, AMissingActiveJobIsDropped) {
  CronJob cj = add(cronJob("0 0 1 1 *", 30));
  Job gone;
  gone.metadata.namespace_ = "ns";
  gone.metadata.name = "cj-gone";
  gone.metadata.uid = "gone-uid";
  cj.status.active.push_back(refTo(gone));
  add(cj);
  ASSERT_TRUE(sync().status.ok());
  EXPECT_TRUE(stored().status.active.empty());
  EXPECT_EQ(events(), (std::vector<std::string>{"Normal MissingJob Active job went missing: cj-gone"}));
}

TEST_F(CronJobTest, HistoryLimitsDeleteTheOldestFinishedJobs) {
  CronJob spec = cronJob("0 0 1 1 *", 30);
  spec.spec.successfulJobsHistoryLimit = 1;
  spec.spec.failedJobsHistoryLimit = 0;
  CronJob cj = add(spec);
  ownedJob(cj, "s-old", "Complete", 300);
  ownedJob(cj, "s-mid", "Complete", 200);
  ownedJob(cj, "s-new", "Complete", 100);
  ownedJob(cj, "f-one", "Failed", 100);
  ownedJob(cj, "running", "", 50);
  ASSERT_TRUE(sync().status.ok());
  std::set<std::string> left;
  for (const auto& j : jobs()) left.insert(j.metadata.name);
  EXPECT_EQ(left, (std::set<std::string>{"s-new", "running"}));
  auto ev = events();
  EXPECT_NE(std::find(ev.begin(), ev.end(), "Normal SuccessfulDelete Deleted job s-old"), ev.end());
  EXPECT_NE(std::find(ev.begin(), ev.end(), "Warning UnexpectedJob Saw a job that the controller did not create or forgot: running"), ev.end());
}

TEST_F(CronJobTest, AnUnparseableScheduleIsReported) {
  add(cronJob("not a schedule"));
  auto r = sync();
  ASSERT_TRUE(r.status.ok());
  EXPECT_FALSE(r.requeueAfter);
  EXPECT_EQ(events(), (std::vector<std::string>{
                          "Warning UnparseableSchedule unparseable schedule: \"not a schedule\" : expected exactly 5 "
                          "fields, found 3: [not a schedule]"}));
}

TEST_F(CronJobTest, TZInTheScheduleIsWarnedAbout) {
  add(cronJob("TZ=UTC */1 * * * *"));
  ASSERT_TRUE(sync().status.ok());
  EXPECT_EQ(jobs().size(), 1u);
  auto ev = events();
  EXPECT_EQ(ev.at(0), "Warning UnsupportedSchedule CRON_TZ or TZ used in schedule \"TZ=UTC */1 * * * *\" is not "
                      "officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ "
                      "for more details");
}

TEST_F(CronJobTest, AnAlreadyProcessedTimeIsNotRunTwice) {
  CronJob cj = add(cronJob("*/1 * * * *"));
  cj.status.lastScheduleTime = api::Time::fromUnix(1767225600);
  add(cj);
  auto r = sync();
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(jobs().empty());
  EXPECT_EQ(*r.requeueAfter, std::chrono::milliseconds(30100));
}

}  // namespace
}  // namespace kcm::controllers::cronjob
