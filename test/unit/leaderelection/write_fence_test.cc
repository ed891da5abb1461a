// The write fence (client/write_fence.h): the controllers' clients refuse writes while it is closed, and the
// leader elector keeps it open exactly until the start of its last successful renewal plus the renew deadline.
#include "client/write_fence.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "api/gen/coordination_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/support/wall_time.h"
#include "client/typed_client.h"
#include "fake/fake_apiserver.h"
#include "leaderelection/leader_elector.h"

namespace kcm {
namespace {

using namespace std::chrono_literals;

class WriteFenceTest : public ::testing::Test {
 protected:
  void SetUp() override { server->addStandardResources(); }
  std::shared_ptr<client::RestClient> fencedClient() {
    client::RestConfig cfg;
    cfg.qps = -1;
    cfg.fence = fence;
    return client::RestClient::createWithTransport(cfg, server, clock);
  }
  FakeClock clock;
  std::shared_ptr<testing::FakeApiServer> server = std::make_shared<testing::FakeApiServer>(clock);
  std::shared_ptr<client::WriteFence> fence = std::make_shared<client::WriteFence>(clock);
};

api::core::v1::ConfigMap configMap(const std::string& name) {
  api::core::v1::ConfigMap cm;
  cm.metadata.name = name;
  cm.metadata.namespace_ = "default";
  return cm;
}

TEST_F(WriteFenceTest, ClosedRefusesWritesWithoutSendingThemButNotReads) {
  auto c = fencedClient();

  auto refused = client::create(*c, "default", configMap("a"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kCancelled);
  EXPECT_NE(refused.status().message().find("not renewed within the renew deadline"), std::string::npos)
      << refused.status().message();
  EXPECT_TRUE(server->writes().empty());
  EXPECT_TRUE(client::list<api::core::v1::ConfigMap>(*c, "default").ok());

  fence->openUntil(clock.now() + 10s);
  EXPECT_TRUE(client::create(*c, "default", configMap("b")).ok());
  clock.advance(9s);
  EXPECT_TRUE(client::create(*c, "default", configMap("c")).ok());
  clock.advance(1s);  // exactly at the end: closed
  EXPECT_FALSE(client::create(*c, "default", configMap("d")).ok());
  EXPECT_EQ(server->writes().size(), 2u);
  fence->openUntil(clock.now() + 1s);
  fence->close();
  EXPECT_FALSE(client::create(*c, "default", configMap("e")).ok());
}

leaderelection::Config electorConfig(std::shared_ptr<client::WriteFence> fence) {
  leaderelection::Config cfg;
  cfg.identity = "me";
  cfg.leaseDuration = 15s;
  cfg.renewDeadline = 10s;
  cfg.retryPeriod = 2s;
  cfg.fence = std::move(fence);
  cfg.onStartedLeading = [](std::stop_token stop) {
    while (!stop.stop_requested()) std::this_thread::sleep_for(1ms);
  };
  return cfg;
}

// Renewals succeed, then every Lease read fails: at each attempt the fence is open exactly while less than the
// renew deadline has passed since the last successful renewal began; once leading stops it is closed.
TEST_F(WriteFenceTest, ElectorKeepsItOpenUntilTheLastRenewalPlusTheRenewDeadline) {
  struct Attempt {
    Clock::TimePoint at;
    bool open;
  };
  std::vector<Attempt> attempts;
  int reads = 0;
  server->prependReactor("get", "leases", [&](const testing::Action&) -> std::optional<client::Transport::Reply> {
    attempts.push_back({clock.now(), fence->open()});
    if (++reads <= 5) return std::nullopt;  // the store answers: renewals succeed
    return testing::FakeApiServer::errorReply(500, "InternalError", "etcd is down");
  });
  auto cfg = electorConfig(fence);
  bool stoppedWhileOpen = true;
  cfg.onStoppedLeading = [&] { stoppedWhileOpen = fence->open(); };
  leaderelection::LeaderElector elector(server->client("leader-election"), cfg, clock);
  std::stop_source stop;
  elector.run(stop.get_token());
  EXPECT_FALSE(stoppedWhileOpen);
  EXPECT_FALSE(fence->open());
  ASSERT_GT(attempts.size(), 8u);
  // Attempt 6 is the first failure; the last success began at attempt 5.
  const Clock::TimePoint lastGoodStart = attempts[4].at;
  for (size_t i = 1; i < attempts.size(); ++i) {
    const bool want = i < 5 || attempts[i].at < lastGoodStart + cfg.renewDeadline;
    EXPECT_EQ(attempts[i].open, want) << "attempt " << i + 1;
  }
  EXPECT_GE(attempts.back().at - lastGoodStart, 10s);
}

// A leader that finds another holder's fresh record (it was frozen past its lease) stops leading at that read,
// not a renew deadline later, and its fence is closed.
TEST_F(WriteFenceTest, ElectorThatSeesAnotherHolderStopsAtOnce) {
  int reads = 0;
  std::optional<Clock::TimePoint> takenOver;
  server->prependReactor("get", "leases", [&](const testing::Action&) -> std::optional<client::Transport::Reply> {
    if (++reads == 4) {  // the standby took over meanwhile
      auto lease = server->get<api::coordination::v1::Lease>("kube-system", "kube-controller-manager");
      lease->spec.holderIdentity = "standby";
      lease->spec.renewTime = api::microTimeNow(clock);
      server->add(client::pathFor<api::coordination::v1::Lease>("kube-system"), nlohmann::json::parse(toJson(*lease)));
      takenOver = clock.now();
    }
    return std::nullopt;
  });
  auto cfg = electorConfig(fence);
  std::optional<Clock::TimePoint> stopped;
  cfg.onStoppedLeading = [&] { stopped = clock.now(); };
  leaderelection::LeaderElector elector(server->client("leader-election"), cfg, clock);
  std::stop_source stop;
  elector.run(stop.get_token());
  ASSERT_TRUE(takenOver && stopped);
  EXPECT_LT(*stopped - *takenOver, 1s);
  EXPECT_FALSE(fence->open());
  EXPECT_EQ(elector.observedHolder(), "standby");
}

}  // namespace
}  // namespace kcm
