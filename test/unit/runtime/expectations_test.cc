#include "runtime/expectations.h"

#include <gtest/gtest.h>

namespace kcm::runtime {
namespace {

TEST(ControllerExpectations, SatisfiedWhenObservedOrExpired) {
  FakeClock clock;
  ControllerExpectations e(clock);
  EXPECT_TRUE(e.satisfiedExpectations("ns/rs"));  // no record
  e.expectCreations("ns/rs", 2);
  EXPECT_FALSE(e.satisfiedExpectations("ns/rs"));
  e.creationObserved("ns/rs");
  EXPECT_FALSE(e.satisfiedExpectations("ns/rs"));
  e.creationObserved("ns/rs");
  EXPECT_TRUE(e.satisfiedExpectations("ns/rs"));
  e.expectDeletions("ns/rs", 1);
  EXPECT_FALSE(e.satisfiedExpectations("ns/rs"));
  clock.advance(std::chrono::minutes(5) + std::chrono::seconds(1));
  EXPECT_TRUE(e.satisfiedExpectations("ns/rs"));  // expired: a watch event may have been lost
  e.deleteExpectations("ns/rs");
  EXPECT_FALSE(e.get("ns/rs").exists);
}

TEST(ControllerExpectations, RaiseAndLower) {
  ControllerExpectations e;
  e.setExpectations("k", 1, 1);
  e.raiseExpectations("k", 2, 0);
  EXPECT_EQ(e.get("k").add, 3);
  e.lowerExpectations("k", 3, 1);
  EXPECT_TRUE(e.satisfiedExpectations("k"));
}

TEST(UIDTrackingControllerExpectations, CountsEachUidOnce) {
  UIDTrackingControllerExpectations e;
  e.expectDeletions("k", {"u1", "u2"});
  EXPECT_FALSE(e.satisfiedExpectations("k"));
  e.deletionObserved("k", "u1");
  e.deletionObserved("k", "u1");  // seen twice (update with deletionTimestamp, then delete)
  EXPECT_FALSE(e.satisfiedExpectations("k"));
  e.deletionObserved("k", "other");
  EXPECT_FALSE(e.satisfiedExpectations("k"));
  e.deletionObserved("k", "u2");
  EXPECT_TRUE(e.satisfiedExpectations("k"));
  EXPECT_TRUE(e.getUIDs("k").empty());
}

}  // namespace
}  // namespace kcm::runtime
