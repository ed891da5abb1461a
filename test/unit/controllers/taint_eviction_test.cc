// taint-eviction-controller: the timed worker queue's lifecycle (upstream
// pkg/controller/tainteviction/timed_workers.go: work due now starts at once without a timer; a worker is
// removed once its work returns; CancelWork reports only workers that had a timer) and, through the whole
// controller over informers on the in-memory apiserver, that a pod still terminating after its eviction is
// evicted again (with a new event) on a later taint change (taint_eviction.go processPodOnNode). Issue 13 item 11.
#include "controllers/tainteviction/taint_eviction.h"
#include "controllers/tainteviction/timed_workers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "api/gen/core_v1_json.h"
#include "client/events.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers {
namespace {

using api::core::v1::Node;
using api::core::v1::Pod;
using testing::FakeApiServer;
using namespace std::chrono_literals;

template <class P>
bool eventually(P p, std::chrono::milliseconds limit = 3000ms) {
  for (auto waited = 0ms; waited < limit; waited += 5ms) {
    if (p()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return p();
}

// Work that counts its runs and, while held, blocks until released.
struct Work {
  std::mutex mu;
  std::condition_variable cv;
  bool hold = false;
  std::atomic<int> started{0}, finished{0};
  TimedWorkerQueue::WorkFunc fn() {
    return [this](const std::string&, Clock::TimePoint) {
      ++started;
      {
        std::unique_lock l(mu);
        cv.wait(l, [&] { return !hold; });
      }
      ++finished;
      return Status::Ok();
    };
  }
  void holdNext() {
    std::lock_guard l(mu);
    hold = true;
  }
  void release() {
    {
      std::lock_guard l(mu);
      hold = false;
    }
    cv.notify_all();
  }
};

// Declared after the queue: releases held work before the queue's destructor waits for it, whatever failed.
struct ReleaseOnExit {
  Work& w;
  ~ReleaseOnExit() { w.release(); }
};

// A worker whose work has run is gone: the same key can be scheduled again and runs again.
TEST(TimedWorkerQueue, AWorkerIsRemovedOnceItsWorkReturned) {
  FakeClock clock;
  Work w;
  TimedWorkerQueue q(w.fn(), 4, clock);
  const auto t0 = clock.now();
  q.addWork("ns/p", t0, t0 + 1s);
  ASSERT_TRUE(q.getWorker("ns/p"));
  clock.advance(1s);
  ASSERT_TRUE(eventually([&] { return w.finished == 1; }));
  EXPECT_TRUE(eventually([&] { return !q.getWorker("ns/p") && q.scheduled() == 0; }));

  const auto t1 = clock.now();
  q.addWork("ns/p", t1, t1 + 1s);
  EXPECT_TRUE(q.getWorker("ns/p"));
  clock.advance(1s);
  EXPECT_TRUE(eventually([&] { return w.finished == 2; }));
  EXPECT_TRUE(eventually([&] { return !q.cancelWork("ns/p"); }));  // nothing left to cancel
}

// Work due at once starts without waiting for a timer, has no worker to report, and cancelling it reports
// nothing (upstream keeps a nil worker for it); the key stays taken until the work returns.
TEST(TimedWorkerQueue, WorkDueNowStartsAtOnceWithoutATimedWorker) {
  FakeClock clock;
  Work w;
  w.holdNext();
  TimedWorkerQueue q(w.fn(), 4, clock);
  ReleaseOnExit releaser{w};
  const auto t0 = clock.now();
  q.addWork("ns/p", t0, t0);
  ASSERT_TRUE(eventually([&] { return w.started == 1; }));  // no clock.advance needed
  EXPECT_FALSE(q.getWorker("ns/p"));
  q.addWork("ns/p", t0, t0);  // already in progress: skipped
  w.release();
  ASSERT_TRUE(eventually([&] { return w.finished == 1; }));
  EXPECT_EQ(w.started, 1);

  w.holdNext();
  q.addWork("ns/q", t0, t0);
  ASSERT_TRUE(eventually([&] { return w.started == 2; }));
  EXPECT_FALSE(q.cancelWork("ns/q"));  // nothing with a timer to cancel: no event upstream
  w.release();
  EXPECT_TRUE(eventually([&] { return w.finished == 2; }));
}

// A timed worker whose timer fired is still reported (and cancelling it says so) until its work returns.
TEST(TimedWorkerQueue, AFiredTimedWorkerIsReportedUntilItsWorkReturns) {
  FakeClock clock;
  Work w;
  w.holdNext();
  TimedWorkerQueue q(w.fn(), 4, clock);
  ReleaseOnExit releaser{w};
  const auto t0 = clock.now();
  q.addWork("ns/p", t0, t0 + 5s);
  clock.advance(5s);
  ASSERT_TRUE(eventually([&] { return w.started == 1; }));
  auto worker = q.getWorker("ns/p");
  ASSERT_TRUE(worker);
  EXPECT_EQ(worker->createdAt, t0);
  EXPECT_EQ(worker->fireAt, t0 + 5s);
  EXPECT_TRUE(q.cancelWork("ns/p"));
  EXPECT_FALSE(q.getWorker("ns/p"));
  w.release();
  EXPECT_TRUE(eventually([&] { return w.finished == 1; }));
}

// A cancelled timed worker never runs.
TEST(TimedWorkerQueue, CancelledWorkNeverRuns) {
  FakeClock clock;
  Work w;
  TimedWorkerQueue q(w.fn(), 4, clock);
  const auto t0 = clock.now();
  q.addWork("ns/p", t0, t0 + 2s);
  EXPECT_TRUE(q.cancelWork("ns/p"));
  clock.advance(3s);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(w.started, 0);
  EXPECT_FALSE(q.cancelWork("ns/p"));
}

// ---- the controller ----

api::core::v1::Taint noExecute(const std::string& key) {
  api::core::v1::Taint t;
  t.key = key;
  t.effect = "NoExecute";
  return t;
}

Pod podOn(const std::string& name, const std::string& node) {
  Pod p;
  p.metadata.namespace_ = "default";
  p.metadata.name = name;
  p.spec.nodeName = node;
  p.status.phase = "Running";
  return p;
}

class TaintEvictionRun : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    ctrl = std::make_unique<TaintEvictionController>(server->client(), broadcaster.newRecorder("taint-eviction-controller"),
                                                     factory.forType<Pod>(), factory.forType<Node>(),
                                                     "taint-eviction-controller");
  }
  void TearDown() override {
    stop.request_stop();
    factory.shutdown();
    ctrl.reset();
  }
  size_t deletesOf(const std::string& name) {
    size_t n = 0;
    for (const auto& a : server->actionsFor("delete", "pods")) n += a.name == name ? 1 : 0;
    return n;
  }
  // How often "Marking for deletion" was recorded for the pod (the recorder folds repeats into one Event's count).
  int markedForDeletion(const std::string& name) {
    broadcaster.flush();
    int n = 0;
    for (const auto& e : eventSink->list<api::core::v1::Event>())
      if (e.reason == "TaintManagerEviction" && e.message == "Marking for deletion Pod default/" + name)
        n += std::max<int>(static_cast<int>(e.count), 1);
    return n;
  }

  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>();
  std::shared_ptr<FakeApiServer> eventSink = std::make_shared<FakeApiServer>();
  client::EventBroadcaster broadcaster{eventSink->client(), "test"};
  informers::SharedInformerFactory factory{server->client(), 0s};
  std::stop_source stop;
  std::unique_ptr<TaintEvictionController> ctrl;
};

// A pod that tolerates every NoExecute taint for 0 seconds is evicted at once through the toleration path.
// Kept by a finalizer, it stays terminating. When its node gets another NoExecute taint, upstream finds no
// worker for it any more (removed once the eviction returned), schedules a new one, and deletes and records
// "Marking for deletion" again.
TEST_F(TaintEvictionRun, ATerminatingPodIsEvictedAgainOnALaterTaintChange) {
  Node node;
  node.metadata.name = "node1";
  node.spec.taints.push_back(noExecute("a"));
  (void)server->add(node);
  (void)server->add(podOn("probe", "node1"));  // tolerates nothing: its deletion shows the controller is running
  factory.start(stop.get_token());
  ctrl->run(stop.get_token());
  ASSERT_TRUE(eventually([&] { return deletesOf("probe") >= 1 && !server->get<Pod>("default", "probe"); }));

  Pod p = podOn("p", "node1");
  p.metadata.finalizers.push_back("example.com/keep");
  api::core::v1::Toleration t;
  t.operator_ = "Exists";
  t.effect = "NoExecute";
  t.tolerationSeconds = 0;
  p.spec.tolerations.push_back(t);
  (void)server->add(p);
  ASSERT_TRUE(eventually([&] { return deletesOf("p") == 1; }));
  ASSERT_TRUE(eventually([&] { return markedForDeletion("p") == 1; }));
  // The eviction has returned once the deletion is served and the informer has seen it (a taint change while it
  // is still in flight finds the key taken and is dropped, upstream as here).
  ASSERT_TRUE(eventually([&] {
    auto cached = factory.forType<Pod>().store().get("default/p");
    return cached && cached->metadata.deletionTimestamp.has_value();
  }));
  auto stored = server->get<Pod>("default", "p");
  ASSERT_TRUE(stored);
  EXPECT_TRUE(stored->metadata.deletionTimestamp.has_value());
  bool disrupted = false;
  for (const auto& c : stored->status.conditions)
    disrupted = disrupted || (c.type == "DisruptionTarget" && c.reason == "DeletionByTaintManager");
  EXPECT_TRUE(disrupted);

  auto n = server->get<Node>("", "node1");
  ASSERT_TRUE(n);
  n->spec.taints.push_back(noExecute("b"));
  ASSERT_TRUE(client::update(*server->client(), *n).ok());
  EXPECT_TRUE(eventually([&] { return deletesOf("p") == 2; }));
  EXPECT_TRUE(eventually([&] { return markedForDeletion("p") == 2; }));
}

}  // namespace
}  // namespace kcm::controllers
