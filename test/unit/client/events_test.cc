// The event correlator as client-go's tools/record (events_cache.go) runs it, on the fake apiserver: repeats
// patch the earlier Event, the 10th distinct message for one object and reason becomes a single combined Event
// that later ones update, and the spam filter caps one object's events. Cases after events_cache_test.go.
#include "client/events.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "api/gen/core_v1.h"
#include "fake/fake_apiserver.h"

namespace kcm::client {
namespace {

using api::core::v1::Event;

class EventCorrelation : public ::testing::Test {
 protected:
  void SetUp() override { server->addStandardResources(); }
  ObjectReference deployment() const {
    return ObjectReference{"Deployment", "apps/v1", "ns", "web", "uid-1", "", ""};
  }
  std::vector<Event> events() const { return server->list<Event>("ns"); }
  std::vector<Event> combined() const {
    std::vector<Event> out;
    for (const Event& e : events())
      if (e.message.rfind("(combined from similar events): ", 0) == 0) out.push_back(e);
    return out;
  }
  size_t writes(const std::string& verb) const { return server->actionsFor(verb, "events").size(); }

  FakeClock clock;
  std::shared_ptr<testing::FakeApiServer> server = std::make_shared<testing::FakeApiServer>();
  EventBroadcaster broadcaster{server->client(), "", clock};
  std::shared_ptr<EventRecorder> recorder = broadcaster.newRecorder("deployment-controller");
};

TEST_F(EventCorrelation, TheSameEventAgainPatchesTheCountOfTheFirst) {
  recorder->event(deployment(), kEventTypeNormal, "ScalingReplicaSet", "Scaled up replica set web-1 from 0 to 3");
  recorder->event(deployment(), kEventTypeNormal, "ScalingReplicaSet", "Scaled up replica set web-1 from 0 to 3");
  broadcaster.flush();
  auto evs = events();
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].count, 2);
  EXPECT_EQ(evs[0].reportingComponent, "deployment-controller");
  EXPECT_EQ(writes("create"), 1u);
  EXPECT_EQ(writes("patch"), 1u);
}

TEST_F(EventCorrelation, TheTenthDistinctMessageStartsOneCombinedEventThatLaterOnesUpdate) {
  for (int i = 0; i < 12; ++i)
    recorder->event(deployment(), kEventTypeNormal, "ScalingReplicaSet", "Scaled to " + std::to_string(i));
  broadcaster.flush();
  // Nine plain Events, then one combined Event written once and patched twice (count 3), with the latest message.
  EXPECT_EQ(events().size(), 10u);
  auto c = combined();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].message, "(combined from similar events): Scaled to 11");
  EXPECT_EQ(c[0].count, 3);
  EXPECT_EQ(c[0].source.component, "deployment-controller");
  EXPECT_EQ(c[0].reportingComponent, "");  // client-go's aggregate Event has no reporting controller
  EXPECT_EQ(c[0].reportingInstance, "");
  EXPECT_EQ(writes("create"), 10u);
  EXPECT_EQ(writes("patch"), 2u);
}

TEST_F(EventCorrelation, OtherReasonsAndObjectsAreAggregatedApart) {
  ObjectReference other = deployment();
  other.name = "api";
  other.uid = "uid-2";
  for (int i = 0; i < 9; ++i) {
    recorder->event(deployment(), kEventTypeNormal, "ScalingReplicaSet", "m" + std::to_string(i));
    recorder->event(deployment(), kEventTypeNormal, "Other", "m" + std::to_string(i));
    recorder->event(other, kEventTypeNormal, "ScalingReplicaSet", "m" + std::to_string(i));
  }
  broadcaster.flush();
  EXPECT_EQ(events().size(), 27u);
  EXPECT_TRUE(combined().empty());
}

TEST_F(EventCorrelation, TheSetOfMessagesStartsAfreshTenMinutesAfterTheLastOne) {
  for (int i = 0; i < 9; ++i)
    recorder->event(deployment(), kEventTypeNormal, "ScalingReplicaSet", "a" + std::to_string(i));
  broadcaster.flush();
  clock.advance(std::chrono::minutes(10) + std::chrono::seconds(1));
  recorder->event(deployment(), kEventTypeNormal, "ScalingReplicaSet", "b");
  broadcaster.flush();
  EXPECT_TRUE(combined().empty());
  EXPECT_EQ(events().size(), 10u);
}

TEST_F(EventCorrelation, TheSpamFilterPassesTwentyFiveEventsOfOneObjectAndType) {
  for (int i = 0; i < 30; ++i)
    recorder->event(deployment(), kEventTypeWarning, "Reason" + std::to_string(i), "message");
  recorder->event(deployment(), kEventTypeNormal, "Fine", "a Normal event is another bucket");
  broadcaster.flush();
  EXPECT_EQ(events().size(), 26u);
  clock.advance(std::chrono::minutes(5));  // one token back
  recorder->event(deployment(), kEventTypeWarning, "Later", "message");
  broadcaster.flush();
  EXPECT_EQ(events().size(), 27u);
}

// client-go keeps each of the correlator's caches to 4096 entries (maxLruCacheEntries): an object whose events are
// the least recent is forgotten, its spam filter included, so state does not grow with every object ever seen.
TEST_F(EventCorrelation, AnObjectLeastRecentlySeenAmong4096IsForgottenSpamFilterIncluded) {
  for (int i = 0; i < 26; ++i)
    recorder->event(deployment(), kEventTypeWarning, "Reason" + std::to_string(i), "message");
  broadcaster.flush();
  ASSERT_EQ(events().size(), 25u);  // the 26th was dropped by the spam filter
  for (int i = 0; i < 4096; ++i) {
    ObjectReference other = deployment();
    other.name = "other-" + std::to_string(i);
    other.uid = "uid-other-" + std::to_string(i);
    recorder->event(other, kEventTypeWarning, "Reason", "message");
    if (i % 500 == 499) broadcaster.flush();  // the queue holds 1000
  }
  broadcaster.flush();
  ASSERT_EQ(events().size(), 25u + 4096u);
  recorder->event(deployment(), kEventTypeWarning, "Again", "message");
  broadcaster.flush();
  EXPECT_EQ(events().size(), 25u + 4096u + 1u);  // a fresh spam filter: accepted
}

}  // namespace
}  // namespace kcm::client
