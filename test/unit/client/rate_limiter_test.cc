#include "client/rate_limiter.h"

#include <gtest/gtest.h>

namespace kcm::client {
namespace {

using namespace std::chrono;

TEST(RateLimiter, BurstIsFreeThenOneTokenPerInterval) {
  FakeClock clock;
  RateLimiter rl(10, 3, clock);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(rl.reserve(), Clock::Duration::zero()) << i;
  EXPECT_EQ(duration_cast<milliseconds>(rl.reserve()).count(), 100);
  EXPECT_EQ(duration_cast<milliseconds>(rl.reserve()).count(), 200);
  clock.advance(milliseconds(200));
  EXPECT_EQ(duration_cast<milliseconds>(rl.reserve()).count(), 100);
}

TEST(RateLimiter, HoldsQpsWithinFivePercentOverManyRequests) {
  FakeClock clock;
  const double qps = 20;
  RateLimiter rl(qps, 30, clock);  // kcm's defaults
  auto start = clock.now();
  const int n = 1000;
  for (int i = 0; i < n; ++i) ASSERT_TRUE(rl.accept());  // FakeClock::sleepFor advances time
  double secs = duration<double>(clock.now() - start).count();
  double observed = (n - 30) / secs;  // the burst is free
  EXPECT_NEAR(observed, qps, qps * 0.05) << secs;
}

TEST(RateLimiter, RefillsUpToBurstOnly) {
  FakeClock clock;
  RateLimiter rl(5, 2, clock);
  clock.advance(seconds(100));
  EXPECT_EQ(rl.reserve(), Clock::Duration::zero());
  EXPECT_EQ(rl.reserve(), Clock::Duration::zero());
  EXPECT_GT(rl.reserve(), Clock::Duration::zero());
}

TEST(RateLimiter, NonPositiveQpsDisablesLimiting) {
  FakeClock clock;
  RateLimiter rl(-1, 1, clock);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(rl.reserve(), Clock::Duration::zero());
}

TEST(RateLimiter, StopsWaitingWhenStopped) {
  RateLimiter rl(0.001, 1);
  EXPECT_TRUE(rl.accept());
  std::stop_source stop;
  stop.request_stop();
  EXPECT_FALSE(rl.accept(stop.get_token()));
}

}  // namespace
}  // namespace kcm::client
