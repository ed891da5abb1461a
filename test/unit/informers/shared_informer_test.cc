// Reflector/informer behaviour against a scripted lister-watcher (no server): relist on 410 with tombstones,
// resume after a dropped watch, bookmarks, synced-once, backoff.
#include "informers/shared_informer.h"

#include <gtest/gtest.h>

#include <deque>

#include "api/gen/core_v1_codec.h"
#include "api/gen/core_v1_json.h"

namespace kcm::informers {
namespace {

using api::core::v1::ConfigMap;
using namespace std::chrono;

ConfigMap cm(const std::string& name, const std::string& rv) {
  ConfigMap c;
  c.metadata.name = name;
  c.metadata.namespace_ = "ns";
  c.metadata.resourceVersion = rv;
  c.metadata.managedFields.emplace_back().manager = "kubectl";
  return c;
}

template <class T>
struct ListPage {
  std::vector<T> items;
  std::string resourceVersion;
  std::string continueToken;
};

struct WatchScript {
  std::vector<client::WatchEvent<ConfigMap>> events;
  Status end;
};

client::WatchEvent<ConfigMap> ev(const std::string& type, ConfigMap obj) {
  client::WatchEvent<ConfigMap> e;
  e.type = type;
  e.object = std::move(obj);
  return e;
}

class Scripted {
 public:
  std::deque<ListPage<ConfigMap>> lists;
  std::deque<WatchScript> watches;
  std::vector<std::string> listRvs, watchRvs;
  std::vector<client::ListOptions> watchOptions;
  bool watchList = false;  // scripted as a server that can stream lists
  std::mutex mu;

  ListerWatcher<ConfigMap> lw() {
    ListerWatcher<ConfigMap> l;
    l.description = "configmaps (scripted)";
    l.watchListSemantics = watchList;
    l.list = [this](const client::ListOptions& o,
                    const std::function<void(ConfigMap&&)>& onItem) -> Result<client::ListInfo> {
      std::lock_guard g(mu);
      listRvs.push_back(o.resourceVersion);
      if (lists.empty()) return Status(StatusCode::kUnavailable, "no more lists scripted");
      auto p = lists.front();
      lists.pop_front();
      for (auto& item : p.items) onItem(std::move(item));
      return client::ListInfo{p.resourceVersion, p.continueToken};
    };
    l.watch = [this](const client::ListOptions& o, const std::function<bool(client::WatchEvent<ConfigMap>&)>& f,
                     std::stop_token stop) {
      WatchScript s;
      {
        std::lock_guard g(mu);
        watchRvs.push_back(o.resourceVersion);
        watchOptions.push_back(o);
        if (watches.empty()) {
          s.end = Status(StatusCode::kCancelled, "idle");
        } else {
          s = watches.front();
          watches.pop_front();
        }
      }
      if (s.end.code() == StatusCode::kCancelled && s.events.empty()) {
        while (!stop.stop_requested()) std::this_thread::sleep_for(milliseconds(5));
        return s.end;
      }
      for (auto& e : s.events)
        if (!f(e)) break;
      return s.end;
    };
    return l;
  }
};

struct Recorder {
  std::mutex mu;
  std::vector<std::string> log;
  EventHandler<ConfigMap> handler() {
    EventHandler<ConfigMap> h;
    h.onAdd = [this](const auto& o) { push("add " + o->metadata.name + "@" + o->metadata.resourceVersion); };
    h.onUpdate = [this](const auto&, const auto& n) { push("update " + n->metadata.name + "@" + n->metadata.resourceVersion); };
    h.onDelete = [this](const auto& o, bool unknown) { push(std::string(unknown ? "tombstone " : "delete ") + o->metadata.name); };
    return h;
  }
  void push(std::string s) {
    std::lock_guard l(mu);
    log.push_back(std::move(s));
  }
  std::vector<std::string> snapshot() {
    std::lock_guard l(mu);
    return log;
  }
};

// Polls p for up to 2 s of real time; with a clock, also moves fake time on (backoff and resync are timer
// entries that fire only as the clock advances).
template <class P>
bool eventually(P p, FakeClock* clock = nullptr) {
  for (int i = 0; i < 400; ++i) {
    if (p()) return true;
    std::this_thread::sleep_for(milliseconds(5));
    if (clock) clock->advance(milliseconds(500));
  }
  return p();
}

TEST(SharedInformer, RelistsOnGoneAndDeliversTombstonesForVanishedObjects) {
  FakeClock clock;
  Scripted s;
  s.lists.push_back({{cm("a", "1"), cm("b", "2")}, "2", ""});
  client::WatchEvent<ConfigMap> gone;
  gone.type = "ERROR";
  gone.status.code = 410;
  gone.status.reason = "Expired";
  s.watches.push_back({{ev("MODIFIED", cm("a", "3")), gone}, Status::Ok()});
  s.lists.push_back({{cm("a", "3"), cm("c", "4")}, "4", ""});
  InformerOptions o;
  o.clock = &clock;
  SharedInformer<ConfigMap> inf(s.lw(), o);
  Recorder r;
  auto registration = inf.addEventHandler(r.handler());
  std::jthread t([&](std::stop_token st) { inf.run(st); });
  ASSERT_TRUE(eventually([&] { return r.snapshot().size() >= 6; }, &clock));
  t.request_stop();
  t.join();
  EXPECT_EQ(r.snapshot(), (std::vector<std::string>{"add a@1", "add b@2", "update a@3", "tombstone b", "update a@3",
                                                    "add c@4"}));
  EXPECT_EQ(s.listRvs, (std::vector<std::string>{"0", ""}));  // relist after 410 reads from etcd
  EXPECT_EQ(inf.store().size(), 2u);
  EXPECT_TRUE(inf.store().get("ns", "c"));
  EXPECT_FALSE(inf.store().get("ns/b"));
  EXPECT_TRUE(inf.store().get("ns/a")->metadata.managedFields.empty());  // transform strips managedFields
  EXPECT_EQ(inf.listCount(), 2u);
}

// A scripted informer on a fake clock, run on a thread of its own from start() until stop().
struct RunningInformer {
  explicit RunningInformer(Scripted& s) : inf(s.lw(), options()) {}
  InformerOptions options() {
    InformerOptions o;
    o.clock = &clock;
    return o;
  }
  void start() {
    t = std::jthread([this](std::stop_token st) { inf.run(st); });
  }
  void stop() {
    t.request_stop();
    if (t.joinable()) t.join();
  }
  FakeClock clock;
  SharedInformer<ConfigMap> inf;
  std::jthread t;
};

// client-go's reflector: a watch the server refuses with an error other than 429 (here a 500) ends ListAndWatch;
// the next round lists again from the last resourceVersion, and Replace hands every object to the handlers as an
// update, so a controller waiting out an error backoff syncs as soon as the server answers again.
TEST(SharedInformer, WatchRefusedWithAServerErrorRelistsAndUpdatesEveryObject) {
  Scripted s;
  s.lists.push_back({{cm("a", "1")}, "1", ""});
  s.watches.push_back({{}, Status(StatusCode::kInternal, "Internal error occurred: etcd leader changed")});
  s.lists.push_back({{cm("a", "1")}, "1", ""});
  RunningInformer run(s);
  Recorder r;
  auto registration = run.inf.addEventHandler(r.handler());
  run.start();
  ASSERT_TRUE(eventually([&] { return r.snapshot().size() >= 2; }, &run.clock));
  run.stop();
  EXPECT_EQ(r.snapshot(), (std::vector<std::string>{"add a@1", "update a@1"}));
  EXPECT_EQ(s.listRvs, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(run.inf.listCount(), 2u);
}

// An ERROR event other than 410 in the stream (client-go: not retried within kcm's internal-error window of 0)
// relists too; a 429 answer only backs off and watches again from where it was.
TEST(SharedInformer, ErrorEventRelistsButTooManyRequestsResumesTheWatch) {
  Scripted s;
  s.lists.push_back({{cm("a", "1")}, "1", ""});
  client::WatchEvent<ConfigMap> internal;
  internal.type = "ERROR";
  internal.status.code = 500;
  internal.status.reason = "InternalError";
  internal.status.message = "an error on the server";
  s.watches.push_back({{ev("MODIFIED", cm("a", "2")), internal}, Status::Ok()});
  s.lists.push_back({{cm("a", "2")}, "2", ""});
  s.watches.push_back({{ev("MODIFIED", cm("a", "3"))}, Status(StatusCode::kTooManyRequests, "too many requests")});
  RunningInformer run(s);
  run.start();
  ASSERT_TRUE(eventually([&] {
    std::lock_guard g(s.mu);
    return s.watchRvs.size() >= 3;
  }, &run.clock));
  run.stop();
  EXPECT_EQ(s.listRvs, (std::vector<std::string>{"0", "2"}));  // one relist, after the ERROR event
  EXPECT_EQ(s.watchRvs[0], "1");
  EXPECT_EQ(s.watchRvs[1], "2");
  EXPECT_EQ(s.watchRvs[2], "3");  // after the 429: the watch resumed, no list
  EXPECT_EQ(run.inf.listCount(), 2u);
}

TEST(SharedInformer, ResumesFromLastResourceVersionAfterADroppedWatch) {
  FakeClock clock;
  Scripted s;
  s.lists.push_back({{cm("a", "5")}, "5", ""});
  s.watches.push_back({{ev("ADDED", cm("b", "6"))}, Status(StatusCode::kUnavailable, "connection reset")});
  s.watches.push_back({{ev("ADDED", cm("c", "7"))}, Status(StatusCode::kCancelled, "")});
  InformerOptions o;
  o.clock = &clock;
  SharedInformer<ConfigMap> inf(s.lw(), o);
  std::jthread t([&](std::stop_token st) { inf.run(st); });
  ASSERT_TRUE(eventually([&] { return inf.store().size() == 3; }, &clock));
  t.request_stop();
  t.join();
  EXPECT_EQ(inf.listCount(), 1u);  // no relist
  ASSERT_GE(s.watchRvs.size(), 2u);
  EXPECT_EQ(s.watchRvs[0], "5");
  EXPECT_EQ(s.watchRvs[1], "6");
}

// A fake clock whose now(), read off the test's thread, takes 5 ms: the reflector reads the clock after telling
// the handlers of an event (the processing-latency metric), so a handler that ran then and found the store's
// resourceVersion short of its event's would catch the store's version being moved after the handlers heard.
class SlowNowClock : public Clock {
 public:
  explicit SlowNowClock(std::thread::id test) : test_(test) {}
  TimePoint now() const override {
    if (std::this_thread::get_id() != test_) std::this_thread::sleep_for(milliseconds(5));
    return fake_.now();
  }
  std::chrono::system_clock::time_point wallNow() const override { return fake_.wallNow(); }
  bool sleepFor(Duration d, std::stop_token stop) override { return fake_.sleepFor(d, stop); }
  TimerId schedule(TimePoint due, std::function<void()> fn) override { return fake_.schedule(due, std::move(fn)); }
  bool cancel(TimerId id) override { return fake_.cancel(id); }

 private:
  std::thread::id test_;
  mutable FakeClock fake_;
};

// client-go moves the store's resourceVersion with the object, before the handlers hear of it: a sync a handler
// starts (the ReplicaSet controller's stale-cache guard reads lastSyncResourceVersion) must never find the cache
// older than the event that started it. Each watch event is checked from inside its own handler call.
TEST(SharedInformer, HandlersSeeTheStoreAtTheirEventsResourceVersion) {
  SlowNowClock clock(std::this_thread::get_id());
  Scripted s;
  s.lists.push_back({{cm("a", "5")}, "5", ""});
  std::vector<client::WatchEvent<ConfigMap>> events;
  for (int i = 0; i < 40; ++i)
    events.push_back(ev(i % 2 ? "MODIFIED" : "ADDED", cm("o" + std::to_string(i / 2), std::to_string(6 + i))));
  events.push_back(ev("DELETED", cm("o0", "46")));
  s.watches.push_back({events, Status(StatusCode::kCancelled, "")});
  InformerOptions o;
  o.clock = &clock;
  o.metrics = std::make_shared<InformerMetrics>("handlers-see-store-rv", "", "v1", "configmaps");
  SharedInformer<ConfigMap> inf(s.lw(), o);
  std::mutex mu;
  std::vector<std::string> behind;  // "event rv > store rv", as a handler found them
  std::atomic<int> seen{0};
  auto check = [&](const std::string& eventRv) {
    if (eventRv == "5") {  // the list's item: the store takes the list's version once it holds the whole list
      ++seen;
      return;
    }
    const std::string storeRv = inf.lastSyncResourceVersion();
    if (std::stoll(storeRv.empty() ? "0" : storeRv) < std::stoll(eventRv)) {
      std::lock_guard l(mu);
      behind.push_back(eventRv + ">" + storeRv);
    }
    ++seen;
  };
  EventHandler<ConfigMap> h;
  h.onAdd = [&](const auto& obj) { check(obj->metadata.resourceVersion); };
  h.onUpdate = [&](const auto&, const auto& obj) { check(obj->metadata.resourceVersion); };
  h.onDelete = [&](const auto&, bool) { check("46"); };
  auto registration = inf.addEventHandler(h);
  std::jthread t([&](std::stop_token st) { inf.run(st); });
  ASSERT_TRUE(eventually([&] { return seen.load() == 42; })) << seen.load();
  t.request_stop();
  t.join();
  std::lock_guard l(mu);
  EXPECT_TRUE(behind.empty()) << behind.size() << " handler calls found the store behind, the first " << behind.front();
}

TEST(SharedInformer, BookmarksAdvanceTheResourceVersion) {
  FakeClock clock;
  Scripted s;
  s.lists.push_back({{cm("a", "5")}, "5", ""});
  s.watches.push_back({{ev("BOOKMARK", cm("", "10"))}, Status::Ok()});  // server closes after a bookmark
  InformerOptions o;
  o.clock = &clock;
  SharedInformer<ConfigMap> inf(s.lw(), o);
  Recorder r;
  auto registration = inf.addEventHandler(r.handler());
  std::jthread t([&](std::stop_token st) { inf.run(st); });
  ASSERT_TRUE(eventually([&] {
    std::lock_guard g(s.mu);
    return s.watchRvs.size() >= 2;
  }, &clock));
  t.request_stop();
  t.join();
  EXPECT_EQ(s.watchRvs[1], "10");
  EXPECT_EQ(inf.store().size(), 1u);  // a bookmark is not an object
  EXPECT_EQ(r.snapshot(), (std::vector<std::string>{"add a@5"}));
}

// The initial-events-end bookmark of a streaming list.
client::WatchEvent<ConfigMap> initialEventsEnd(const std::string& rv) {
  ConfigMap b = cm("", rv);
  b.metadata.annotations["k8s.io/initial-events-end"] = "true";
  return ev("BOOKMARK", std::move(b));
}

// WatchListClient: the initial state streams in through a watch (sendInitialEvents, NotOlderThan, from "" at
// first) into a temporary store; the annotated bookmark replaces the cache with it (a modification within the
// stream counts once, as its last state), and the same watch goes on delivering changes. No LIST at all.
TEST(SharedInformer, WatchListStreamsTheInitialStateThenKeepsWatching) {
  Scripted s;
  s.watchList = true;
  ConfigMap plainBookmark = cm("", "2");
  s.watches.push_back({{ev("ADDED", cm("a", "1")), ev("ADDED", cm("b", "2")), ev("BOOKMARK", plainBookmark),
                        ev("MODIFIED", cm("a", "3")), ev("ADDED", cm("c", "3")), ev("DELETED", cm("c", "3")),
                        initialEventsEnd("3"), ev("MODIFIED", cm("b", "4"))},
                       Status(StatusCode::kCancelled, "")});
  RunningInformer run(s);
  Recorder r;
  auto registration = run.inf.addEventHandler(r.handler());
  run.start();
  ASSERT_TRUE(eventually([&] { return r.snapshot().size() >= 3; }, &run.clock));
  run.stop();
  EXPECT_EQ(r.snapshot(), (std::vector<std::string>{"add a@3", "add b@2", "update b@4"}));
  EXPECT_TRUE(run.inf.hasSynced());
  EXPECT_EQ(run.inf.listCount(), 0u);
  EXPECT_EQ(run.inf.watchListCount(), 1u);
  EXPECT_TRUE(s.listRvs.empty());
  ASSERT_FALSE(s.watchOptions.empty());
  const auto& o = s.watchOptions[0];
  EXPECT_TRUE(o.sendInitialEvents);
  EXPECT_TRUE(o.allowWatchBookmarks);
  EXPECT_EQ(o.resourceVersionMatch, "NotOlderThan");
  EXPECT_EQ(o.resourceVersion, "");
  EXPECT_EQ(run.inf.lastSyncResourceVersion(), "4");
  EXPECT_TRUE(run.inf.store().get("ns/a")->metadata.managedFields.empty());  // transformed while streaming
}

// A server that cannot stream lists (WatchList off: 422) or fails otherwise before the bookmark: a plain LIST at
// once, then the usual watch; when the stream itself finds its version expired (410) it starts again from "",
// and the snapshot replaces the cache (tombstones for what went).
TEST(SharedInformer, WatchListFallsBackToAListAndRestartsFromScratchWhenExpired) {
  Scripted s;
  s.watchList = true;
  s.watches.push_back({{}, Status(StatusCode::kInvalid, "sendInitialEvents: Forbidden")});
  s.lists.push_back({{cm("a", "1"), cm("b", "2")}, "2", ""});
  client::WatchEvent<ConfigMap> gone;
  gone.type = "ERROR";
  gone.status.code = 410;
  gone.status.reason = "Expired";
  s.watches.push_back({{gone}, Status::Ok()});                                // the watch after the list
  s.watches.push_back({{ev("ADDED", cm("a", "5")), gone}, Status::Ok()});     // streaming: expired midway
  s.watches.push_back({{ev("ADDED", cm("a", "6")), initialEventsEnd("6")}, Status(StatusCode::kCancelled, "")});
  RunningInformer run(s);
  Recorder r;
  auto registration = run.inf.addEventHandler(r.handler());
  run.start();
  ASSERT_TRUE(eventually([&] { return r.snapshot().size() >= 4; }, &run.clock));
  run.stop();
  EXPECT_EQ(r.snapshot(), (std::vector<std::string>{"add a@1", "add b@2", "tombstone b", "update a@6"}));
  EXPECT_EQ(s.listRvs, (std::vector<std::string>{"0"}));
  ASSERT_EQ(s.watchOptions.size(), 4u);
  EXPECT_TRUE(s.watchOptions[0].sendInitialEvents);
  EXPECT_FALSE(s.watchOptions[1].sendInitialEvents);
  EXPECT_EQ(s.watchOptions[1].resourceVersion, "2");
  EXPECT_TRUE(s.watchOptions[2].sendInitialEvents);
  EXPECT_EQ(s.watchOptions[2].resourceVersion, "2");  // a watch's 410: stream from the last version (cache)
  EXPECT_EQ(s.watchOptions[3].resourceVersion, "");   // the stream's own 410: from scratch
  EXPECT_EQ(run.inf.listCount(), 1u);
  EXPECT_EQ(run.inf.watchListCount(), 3u);
}

// A stream that times out before its bookmark is tried again only after a backoff (a server answering 504 at once
// every time is not hammered); "Too large resource version", the apiserver's Timeout for a version it has not
// reached yet, restarts the stream at once from "", as client-go's isTooLargeResourceVersionError does.
TEST(SharedInformer, WatchListTimeoutBacksOffButTooLargeVersionRestartsAtOnce) {
  Scripted s;
  s.watchList = true;
  s.watches.push_back({{}, Status(StatusCode::kTimeout, "Too large resource version: 9, current: 5")});
  s.watches.push_back({{}, Status(StatusCode::kTimeout, "the server was unable to return a response in time")});
  s.watches.push_back({{ev("ADDED", cm("a", "6")), initialEventsEnd("6")}, Status(StatusCode::kCancelled, "")});
  RunningInformer run(s);
  run.start();
  auto attempts = [&] {
    std::lock_guard g(s.mu);
    return s.watchOptions.size();
  };
  ASSERT_TRUE(eventually([&] { return attempts() == 2; }));  // the second at once, no clock moved
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(attempts(), 2u);  // the third waits for the backoff
  ASSERT_TRUE(eventually([&] { return run.inf.hasSynced(); }, &run.clock));
  run.stop();
  EXPECT_EQ(attempts(), 3u);
  EXPECT_EQ(s.watchOptions[1].resourceVersion, "");
  EXPECT_EQ(run.inf.listCount(), 0u);
}

// --feature-gates=WatchListClient=false (InformerOptions.watchList): a LIST as before, even where the server
// could stream.
TEST(SharedInformer, WatchListClientOffLists) {
  Scripted s;
  s.watchList = true;
  s.lists.push_back({{cm("a", "1")}, "1", ""});
  FakeClock clock;
  InformerOptions o;
  o.clock = &clock;
  o.watchList = false;
  SharedInformer<ConfigMap> inf(s.lw(), o);
  std::jthread t([&](std::stop_token st) { inf.run(st); });
  ASSERT_TRUE(eventually([&] { return inf.hasSynced(); }, &clock));
  t.request_stop();
  t.join();
  EXPECT_EQ(inf.listCount(), 1u);
  EXPECT_EQ(inf.watchListCount(), 0u);
}

TEST(SharedInformer, ListFailureBacksOffAndSyncsOnce) {
  FakeClock clock;
  Scripted s;  // first list fails (nothing scripted), then we script one
  InformerOptions o;
  o.clock = &clock;
  SharedInformer<ConfigMap> inf(s.lw(), o);
  std::jthread t([&](std::stop_token st) { inf.run(st); });
  ASSERT_TRUE(eventually([&] {
    std::lock_guard g(s.mu);
    return s.listRvs.size() >= 2;
  }, &clock));
  EXPECT_FALSE(inf.hasSynced());
  {
    std::lock_guard g(s.mu);
    s.lists.push_back({{cm("a", "1")}, "1", ""});
  }
  ASSERT_TRUE(eventually([&] { return inf.hasSynced(); }, &clock));
  t.request_stop();
  t.join();
  EXPECT_TRUE(inf.hasSynced());
}

TEST(SharedInformer, LateHandlerGetsExistingObjectsAsAdds) {
  FakeClock clock;
  Scripted s;
  s.lists.push_back({{cm("a", "1"), cm("b", "2")}, "2", ""});
  InformerOptions o;
  o.clock = &clock;
  SharedInformer<ConfigMap> inf(s.lw(), o);
  std::jthread t([&](std::stop_token st) { inf.run(st); });
  ASSERT_TRUE(eventually([&] { return inf.hasSynced(); }, &clock));
  Recorder r;
  auto registration = inf.addEventHandler(r.handler());
  ASSERT_TRUE(eventually([&] { return r.snapshot().size() == 2; }, &clock));
  t.request_stop();
}

TEST(Backoff, DoublesFrom800msTo30sWithJitterAndResets) {
  FakeClock clock;
  Backoff b(milliseconds(800), seconds(30), minutes(2), clock, 42);
  std::vector<long> steps;
  for (int i = 0; i < 8; ++i) {
    auto d = b.next();
    steps.push_back(duration_cast<milliseconds>(b.current()).count());
    EXPECT_GE(d, b.current());
    EXPECT_LE(d, 2 * b.current());
    clock.advance(seconds(1));
  }
  EXPECT_EQ(steps, (std::vector<long>{800, 1600, 3200, 6400, 12800, 25600, 30000, 30000}));
  clock.advance(minutes(3));
  b.next();
  EXPECT_EQ(duration_cast<milliseconds>(b.current()).count(), 800);
}

TEST(Store, IndexesByNamespaceAndCustomIndexers) {
  Store<ConfigMap> st;
  st.addIndexer("byLabel", [](const ConfigMap& c) {
    auto it = c.metadata.labels.find("app");
    return it == c.metadata.labels.end() ? std::vector<std::string>{} : std::vector<std::string>{it->second};
  });
  auto a = cm("a", "1");
  a.metadata.labels["app"] = "x";
  auto b = cm("b", "1");
  b.metadata.namespace_ = "other";
  b.metadata.labels["app"] = "x";
  st.upsert("ns/a", std::make_shared<const ConfigMap>(a));
  st.upsert("other/b", std::make_shared<const ConfigMap>(b));
  EXPECT_EQ(st.byIndex(kNamespaceIndex, "ns").size(), 1u);
  EXPECT_EQ(st.byIndex("byLabel", "x").size(), 2u);
  a.metadata.labels["app"] = "y";
  st.upsert("ns/a", std::make_shared<const ConfigMap>(a));
  EXPECT_EQ(st.byIndex("byLabel", "x").size(), 1u);
  EXPECT_EQ(st.byIndex("byLabel", "y").size(), 1u);
  st.erase("other/b");
  EXPECT_TRUE(st.byIndex("byLabel", "x").empty());
  EXPECT_EQ(splitMetaNamespaceKey("ns/a"), (std::pair<std::string, std::string>{"ns", "a"}));
  EXPECT_EQ(splitMetaNamespaceKey("node-1"), (std::pair<std::string, std::string>{"", "node-1"}));
}

}  // namespace
}  // namespace kcm::informers
