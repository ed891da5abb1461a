// ttl-after-finished-controller (upstream pkg/controller/ttlafterfinished/ttlafterfinished_controller_test.go and
// the behaviour of processJob) over the fake apiserver, with the clock injected.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/gen/batch_v1_json.h"
#include "client/typed_client.h"
#include "controllers/ttlafterfinished/ttlafterfinished_controller.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::ttlafterfinished {
namespace {

using testing::FakeApiServer;
using namespace std::chrono_literals;

class TTLTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addResource({"batch", "v1", "jobs", "Job", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
  }
  int64_t now() const { return std::chrono::system_clock::to_time_t(clock.wallNow()); }
  // A Job finished (`type` True) `ago` seconds ago, with `ttl` when given; stored in the server and the cache.
  Job job(const std::string& name, std::optional<int32_t> ttl, const std::string& type = "Complete", int64_t ago = 0,
          bool inCache = true) {
    Job j;
    j.metadata.namespace_ = "ns";
    j.metadata.name = name;
    j.spec.ttlSecondsAfterFinished = ttl;
    if (!type.empty()) {
      auto& c = j.status.conditions.emplace_back();
      c.type = type;
      c.status = "True";
      c.lastTransitionTime = api::Time::fromUnix(now() - ago);
    }
    Job stored = server->add(j);
    if (inCache) factory.forType<Job>().store().upsert("ns/" + name, std::make_shared<const Job>(stored));
    return stored;
  }
  std::vector<testing::Action> deletes() { return server->actionsFor("delete", "jobs"); }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  TTLAfterFinishedController controller{server->client(), factory.forType<Job>(), clock};
};

// TestTimeLeft's cases, through what processJob does with them.
TEST_F(TTLTest, AFinishedJobIsDeletedOnceItsTTLHasPassed) {
  job("complete-0s", 0);
  job("failed-0s", 0, "Failed");
  job("complete-10s-ago-ttl-5", 5, "Complete", 10);
  job("complete-now-ttl-10", 10);
  job("failed-10s-ago-ttl-15", 15, "Failed", 10);
  job("no-ttl", std::nullopt);
  job("unfinished", 0, "");
  for (const char* n : {"complete-0s", "failed-0s", "complete-10s-ago-ttl-5", "complete-now-ttl-10",
                        "failed-10s-ago-ttl-15", "no-ttl", "unfinished"})
    ASSERT_TRUE(controller.processJob(std::string("ns/") + n).status.ok()) << n;
  std::vector<std::string> deleted;
  for (const auto& a : deletes()) deleted.push_back(a.name);
  std::sort(deleted.begin(), deleted.end());
  EXPECT_EQ(deleted, (std::vector<std::string>{"complete-0s", "complete-10s-ago-ttl-5", "failed-0s"}));
  // Foreground, with the fresh Job's UID as precondition.
  auto body = nlohmann::json::parse(deletes().at(0).body);
  EXPECT_EQ(body["propagationPolicy"], "Foreground");
  EXPECT_FALSE(body["preconditions"]["uid"].get<std::string>().empty());
  EXPECT_EQ(server->get<Job>("ns", "complete-now-ttl-10").has_value(), true);
}

TEST_F(TTLTest, AJobNotYetDueIsDeletedWhenItIs) {
  job("later", 10);
  ASSERT_TRUE(controller.processJob("ns/later").status.ok());  // re-queued for 10 s later
  EXPECT_TRUE(deletes().empty());
  clock.advance(9s);
  ASSERT_TRUE(controller.processJob("ns/later").status.ok());
  EXPECT_TRUE(deletes().empty());
  clock.advance(2s);
  ASSERT_TRUE(controller.processJob("ns/later").status.ok());
  ASSERT_EQ(deletes().size(), 1u);
  EXPECT_EQ(deletes()[0].name, "later");
}

// The fresh read decides: a TTL raised since the cache saw the Job keeps it.
TEST_F(TTLTest, ATTLRaisedMeanwhileIsRespected) {
  Job j = job("raised", 0);
  j.spec.ttlSecondsAfterFinished = 3600;
  ASSERT_TRUE(client::update(*server->client(), j).ok());
  ASSERT_TRUE(controller.processJob("ns/raised").status.ok());
  EXPECT_TRUE(deletes().empty());
  EXPECT_TRUE(server->get<Job>("ns", "raised").has_value());
}

TEST_F(TTLTest, AFinishedConditionWithoutTimeIsAnError) {
  Job j;
  j.metadata.namespace_ = "ns";
  j.metadata.name = "odd";
  j.spec.ttlSecondsAfterFinished = 0;
  auto& c = j.status.conditions.emplace_back();
  c.type = "Failed";
  c.status = "True";
  EXPECT_EQ(jobFinishTime(j).status().message(), "unable to find the time when the Job ns/odd finished");
  factory.forType<Job>().store().upsert("ns/odd", std::make_shared<const Job>(server->add(j)));
  EXPECT_FALSE(controller.processJob("ns/odd").status.ok());
}

}  // namespace
}  // namespace kcm::controllers::ttlafterfinished
