#pragma once
// SharedInformer<T>: a reflector (LIST then WATCH, as an explicit state machine) feeding a Store<T> and
// dispatching add/update/delete to handlers, each on its own strand so a slow handler never blocks the watch.
// No thread of its own: reflector steps run on a strand of the process executor, the watch stream on the I/O
// loop, backoff and resync on the clock's timer (with a FakeClock, time must be advanced for them to fire).
//
// Reflector states: kList -> kWatch -> (kWatch | kBackoff | kList). Behaviour follows client-go's reflector:
//  - LIST pages of 500; the first from the watch cache (resourceVersion "0"), a relist after 410 Gone from etcd
//    (resourceVersion ""), falling back to "" if the server refuses "0".
//  - WATCH from the last seen resourceVersion with allowWatchBookmarks and a random timeout in [5, 10) min;
//    bookmarks advance the resourceVersion; a dropped connection resumes the watch without relisting;
//    410 Gone / "too old resource version" relists; a watch that ends within 1 s with no event is an error.
//  - Errors back off 800 ms doubling to 30 s with jitter, reset after 2 min of health.
//  - A relist replaces the store at once: vanished objects are delivered as deletes with finalStateUnknown
//    (the tombstone case), "synced" is signalled exactly once.
//  - Streaming lists (the WatchListClient feature, on at the pin): instead of a LIST, a WATCH with
//    sendInitialEvents=true, resourceVersionMatch=NotOlderThan from the last synced resourceVersion ("" at first)
//    streams the current objects into a temporary store until the BOOKMARK annotated
//    k8s.io/initial-events-end=true; that replaces the store as a list would, and the same watch goes on. 410 Gone
//    or a too large version restarts it from ""; a retriable error (429, connection) backs off and retries it;
//    any other error (a server without WatchList answers 422) falls back to a LIST at once. Only lister-watchers
//    of real clients stream (client-go's fake clients cannot either).
// Objects pass through a transform before caching (default: drop managedFields, as upstream kcm does).
// Thread-safe. Include from .cc files only (pulls in the codec).
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/executor.h"
#include "base/log.h"
#include "base/status.h"
#include "client/typed_client.h"
#include "informers/store.h"

namespace kcm::metrics {
class Gauge;
class Histogram;
}  // namespace kcm::metrics

namespace kcm::informers {

template <class T>
struct ListerWatcher {
  // Lists one page, handing each decoded item to onItem; returns the page's resourceVersion/continue.
  std::function<Result<client::ListInfo>(const client::ListOptions&, const std::function<void(T&&)>& onItem)> list;
  // A blocking watch (scripted lister-watchers in tests): run as a pool task.
  std::function<Status(const client::ListOptions&, const std::function<bool(client::WatchEvent<T>&)>&,
                       std::stop_token)>
      watch;
  // The watch as a stream on the I/O loop (what real clients use): raw event lines to onLine (loop thread),
  // the outcome to onDone; destroying the handle cancels.
  std::function<Result<std::unique_ptr<client::StreamHandle>>(const client::ListOptions&, client::OnLine,
                                                               std::function<void(Status)>, std::stop_token)>
      watchAsync;
  std::string description;  // for logs: "pods", "apps/v1, Resource=deployments (metadata)"
  // The watch can stream the initial state (sendInitialEvents): real clients yes, in-memory fakes no.
  bool watchListSemantics = false;
  std::string typeName = "*v1.PartialObjectMetadata";  // the Go type upstream's reflector would hold: "*v1.Pod"
};

template <class T>
ListerWatcher<T> typedListerWatcher(std::shared_ptr<client::RestClient> c, const std::string& ns = "") {
  ListerWatcher<T> lw;
  lw.description = api::ResourceTraits<T>::kResource;
  lw.watchListSemantics = c->supportsWatchList();
  lw.typeName = std::string("*") + api::ResourceTraits<T>::kVersion + "." + api::ResourceTraits<T>::kKind;
  lw.list = [c, ns](const client::ListOptions& o, const std::function<void(T&&)>& onItem) {
    return client::listPageStreaming<T>(*c, ns, o, onItem);
  };
  lw.watchAsync = [c, ns](const client::ListOptions& o, client::OnLine onLine, std::function<void(Status)> onDone,
                          std::stop_token stop) {
    client::Request req;
    req.path = client::pathFor<T>(ns);
    req.accept = client::typedAccept(*c);
    return client::watchRequestAsync(*c, std::move(req), o, std::move(onLine), std::move(onDone), stop);
  };
  return lw;
}

// Full objects of a run-time resource as DynamicObject (typed metadata, the rest kept verbatim).
ListerWatcher<api::meta::v1::PartialObjectMetadata> dynamicListerWatcher(std::shared_ptr<client::RestClient> c,
                                                                         const client::GroupVersionResource& gvr,
                                                                         const std::string& ns = "");

// kcm's ResyncPeriod: --min-resync-period x random[1, 2), drawn once per informer factory.
Clock::Duration resyncPeriod(Clock::Duration minResync);

ListerWatcher<api::meta::v1::PartialObjectMetadata> metadataListerWatcher(std::shared_ptr<client::RestClient> c,
                                                                          const client::GroupVersionResource& gvr,
                                                                          const std::string& ns = "");

template <class T>
struct EventHandler {
  using Ptr = std::shared_ptr<const T>;
  std::function<void(const Ptr&)> onAdd;
  std::function<void(const Ptr& oldObj, const Ptr& newObj)> onUpdate;
  // finalStateUnknown: the delete was missed and found at a relist (client-go's DeletedFinalStateUnknown);
  // the object is the last state the cache had.
  std::function<void(const Ptr&, bool finalStateUnknown)> onDelete;
};

// Exponential backoff with jitter and reset after a healthy period (client-go's backoff manager).
class Backoff {
 public:
  Backoff(Clock::Duration initial, Clock::Duration max, Clock::Duration resetAfter, Clock& clock, uint64_t seed = 0)
      : initial_(initial), max_(max), resetAfter_(resetAfter), clock_(clock), rng_(seed ? seed : std::random_device{}()) {}
  // The next wait: doubles from `initial` up to `max`, plus up to 100% jitter.
  Clock::Duration next();
  // The un-jittered step the next call starts from (tests).
  Clock::Duration current() const { return step_; }

 private:
  Clock::Duration initial_, max_, resetAfter_;
  Clock& clock_;
  std::mt19937_64 rng_;
  Clock::Duration step_{0};
  Clock::TimePoint lastBackoff_{};
};

// component-base's informer_* metrics (queued_items, processing_latency_seconds, store_resource_version) for one
// informer of a named factory (upstream names only kcm's shared factory: "kube-controller-manager"). Our reflector
// applies each event to the store and hands it to the handlers' strands at once, so "queued" counts what a list
// brought and is not applied yet (0 between steps) and "processing" is that application.
class InformerMetrics {
 public:
  // resource: client-go's generated label, lowercase Kind + "s" ("endpointss", "ingressclasss").
  InformerMetrics(std::string name, std::string group, std::string version, std::string resource);
  void started();  // the FIFO's metrics exist from Run on, the store's from construction
  void setQueued(size_t n);
  void observeProcessing(Clock::Duration d);
  // The 15 least significant digits of rv, when it is a number.
  void setStoreResourceVersion(const std::string& rv);

 private:
  std::vector<std::pair<std::string, std::string>> labels_;
  metrics::Gauge* storeRv_;
  std::atomic<metrics::Gauge*> queued_{nullptr};
  std::atomic<metrics::Histogram*> latency_{nullptr};
};

// The reflector's log lines, upstream's messages and keys (client-go's reflector: type is the Go type, "*v1.Pod";
// reflector names the informer, here by its resource).
void logReflectorStarted(const std::string& type, Clock::Duration resync, const std::string& reflector);
void logListing(const std::string& type, const std::string& reflector);
void logCachesPopulated(const std::string& type, const std::string& reflector);
void logListFailed(const std::string& type, const std::string& reflector, const Status& s);
void logWatchClosed(const std::string& type, const std::string& reflector, uint64_t items);
void logWatchEndedWithError(const std::string& type, const std::string& reflector, const std::string& err);

// client-go's WatchListClient feature (kcm: --feature-gates=WatchListClient=false turns it off): informers
// created afterwards take their initial state from a streaming watch rather than a LIST.
bool watchListClientEnabled();
void setWatchListClientEnabled(bool on);

struct InformerOptions {
  Clock::Duration resyncPeriod{0};
  Clock* clock = &RealClock::get();
  int64_t pageSize = 500;
  bool watchList = watchListClientEnabled();  // used when the lister-watcher has watchListSemantics
  std::shared_ptr<InformerMetrics> metrics;  // null: none (metadata, dynamic and unnamed factories' informers)
};

class InformerBase {
 public:
  virtual ~InformerBase() = default;
  // Starts the reflector; returns at once. It stops when `stop` is requested or the informer is destroyed.
  virtual void start(std::stop_token stop) = 0;
  // start(), then blocks until stop (tests).
  void run(std::stop_token stop);
  virtual bool hasSynced() const = 0;
  // Stops the reflector and drops notifications not yet handed to handlers; waits for handlers running now.
  // Afterwards no handler of this informer runs again: what a shutdown does before the controllers go.
  virtual void stopAndDrain() = 0;
  // Blocks until synced or stop; returns hasSynced().
  bool waitForCacheSync(std::stop_token stop) const;
  // "pods", "apps/v1, Resource=deployments (metadata)": what health checks and logs name.
  virtual std::string description() const = 0;
  // Why the last list failed ("" once one succeeded): the reason a health check reports.
  std::string lastListError() const {
    std::lock_guard l(errMu_);
    return lastListError_;
  }

 protected:
  void setLastListError(std::string e) {
    std::lock_guard l(errMu_);
    lastListError_ = std::move(e);
  }

 private:
  mutable std::mutex errMu_;
  std::string lastListError_;
};

// What addEventHandler returns. Destroying it (or reset()) removes the handler: queued notifications for it are
// dropped and a call of it running now is waited for, so nothing of the handler runs afterwards. Declare a
// controller's registrations as its last members, so they go before anything its handlers touch. Harmless
// once the informer itself is gone.
class [[nodiscard]] Registration {
 public:
  Registration() = default;
  explicit Registration(std::function<void()> remove) : remove_(std::move(remove)) {}
  Registration(Registration&& o) noexcept : remove_(std::exchange(o.remove_, nullptr)) {}
  Registration& operator=(Registration&& o) noexcept {
    if (this != &o) {
      reset();
      remove_ = std::exchange(o.remove_, nullptr);
    }
    return *this;
  }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  ~Registration() { reset(); }
  void reset() {
    if (auto r = std::exchange(remove_, nullptr)) r();
  }

 private:
  std::function<void()> remove_;
};

template <class T>
class SharedInformer : public InformerBase {
 public:
  using Ptr = std::shared_ptr<const T>;
  using Transform = std::function<void(T&)>;

  SharedInformer(ListerWatcher<T> lw, InformerOptions opts = {})
      : lw_(std::move(lw)), opts_(opts), clock_(*opts.clock),
        backoff_(std::chrono::milliseconds(800), std::chrono::seconds(30), std::chrono::minutes(2), clock_),
        rng_(std::random_device{}()) {
    transform_ = [](T& o) { o.metadata.managedFields.clear(); };
  }
  ~SharedInformer() override {
    alive_.reset();  // registrations outliving the informer no longer reach it
    onStop_.reset();
    stopAndDrain();
    std::lock_guard g(listenersMu_);
    listeners_.clear();
  }

  void stopAndDrain() override {
    stopNow();
    {
      std::unique_lock l(mu_);
      blockingDone_.wait(l, [&] { return blockingWatches_ == 0; });
    }
    strand_.drain();  // no reflector step runs or notifies from here on
    std::lock_guard g(listenersMu_);
    for (auto& l : listeners_) l->drain();
  }

  Store<T>& store() { return store_; }
  const Store<T>& store() const { return store_; }
  void setTransform(Transform t) { transform_ = std::move(t); }

  // Registers a handler. When the informer already has objects, they are delivered as adds first. The handler
  // stays until the returned Registration is destroyed.
  Registration addEventHandler(EventHandler<T> h, Clock::Duration resync = Clock::Duration::max()) {
    auto l = std::make_unique<Listener>(std::move(h), resync == Clock::Duration::max() ? opts_.resyncPeriod : resync,
                                        clock_);
    Listener* raw = l.get();
    {
      std::lock_guard g(listenersMu_);
      for (const auto& o : store_.list()) l->push({Kind::kAdd, nullptr, o, false});
      listeners_.push_back(std::move(l));
    }
    armResync();
    return Registration([alive = std::weak_ptr<int>(alive_), this, raw] {
      if (alive.lock()) removeListener(raw);
    });
  }

  bool hasSynced() const override { return synced_.load(); }
  std::string description() const override { return lw_.description; }
  std::string lastSyncResourceVersion() const {
    std::lock_guard l(rvMu_);
    return rv_;
  }
  uint64_t listCount() const { return lists_.load(); }
  uint64_t watchListCount() const { return watchLists_.load(); }  // streaming lists started
  uint64_t watchCount() const { return watches_.load(); }

  void start(std::stop_token stop) override {
    {
      std::lock_guard l(mu_);
      if (started_) return;
      started_ = true;
    }
    onStop_ = std::make_unique<std::stop_callback<std::function<void()>>>(stop, std::function<void()>([this] { stopNow(); }));
    if (opts_.metrics) opts_.metrics->started();
    logReflectorStarted(lw_.typeName, opts_.resyncPeriod, lw_.description);
    strand_.post([this] { doList(); });
    armResync();
  }

 private:
  enum class Kind { kAdd, kUpdate, kDelete };
  struct Notification {
    Kind kind;
    Ptr oldObj, newObj;
    bool finalStateUnknown;
  };

  // One handler and its strand (client-go's processorListener, without a goroutine of its own).
  class Listener {
   public:
    Listener(EventHandler<T> h, Clock::Duration resync, Clock& clock)
        : nextResync_(clock.now() + resync), h_(std::make_shared<EventHandler<T>>(std::move(h))), resync_(resync) {}
    void push(Notification n) {
      strand_.post([h = h_, off = off_, n = std::move(n)] {
        if (off->load()) return;
        if (n.kind == Kind::kAdd && h->onAdd) h->onAdd(n.newObj);
        if (n.kind == Kind::kUpdate && h->onUpdate) h->onUpdate(n.oldObj, n.newObj);
        if (n.kind == Kind::kDelete && h->onDelete) h->onDelete(n.oldObj, n.finalStateUnknown);
      });
    }
    Clock::Duration resync() const { return resync_; }
    void drain() { strand_.drain(); }
    // Queued notifications are dropped from now on (a removed handler).
    void turnOff() { off_->store(true); }
    Clock::TimePoint nextResync_;

   private:
    std::shared_ptr<EventHandler<T>> h_;
    std::shared_ptr<std::atomic<bool>> off_ = std::make_shared<std::atomic<bool>>(false);
    Clock::Duration resync_;
    Strand strand_;  // last: drained (waits for a running handler) before the handler goes
  };

  void removeListener(Listener* target) {
    std::unique_ptr<Listener> gone;
    {
      std::lock_guard g(listenersMu_);
      for (auto it = listeners_.begin(); it != listeners_.end(); ++it)
        if (it->get() == target) {
          gone = std::move(*it);
          listeners_.erase(it);
          break;
        }
    }
    if (!gone) return;
    gone->turnOff();
    gone->drain();  // waits for a call running now; queued ones return at once
  }

  void notify(const Notification& n) {
    std::lock_guard g(listenersMu_);
    for (auto& l : listeners_) l->push(n);
  }

  void setRv(const std::string& rv) {
    if (opts_.metrics) opts_.metrics->setStoreResourceVersion(rv);
    std::lock_guard l(rvMu_);
    rv_ = rv;
  }

  Ptr prepare(T&& obj) {
    if (transform_) transform_(obj);
    return std::make_shared<const T>(std::move(obj));
  }

  bool stopped() const {
    std::lock_guard l(mu_);
    return stopped_;
  }

  // Stops the reflector: no new step starts; the stream and the backoff timer are cancelled.
  void stopNow() {
    std::unique_ptr<client::StreamHandle> h;
    Clock::TimerId t1, t2;
    {
      std::lock_guard l(mu_);
      stopped_ = true;
      h = std::move(stream_);
      t1 = backoffTimer_;
      t2 = resyncTimer_;
      backoffTimer_ = resyncTimer_ = 0;
    }
    blockingStop_.request_stop();
    if (t1) clock_.cancel(t1);
    if (t2) clock_.cancel(t2);
    h.reset();
  }

  // ---- reflector steps, all on strand_ ----

  void doList() {
    if (stopped()) return;
    if (opts_.watchList && lw_.watchListSemantics) return startWatchList();
    doPlainList();
  }

  void doPlainList() {
    if (stopped()) return;
    logListing(lw_.typeName, lw_.description);
    Status s = listAndReplace(listRv_);
    if (stopped()) return;
    if (s.ok()) logCachesPopulated(lw_.typeName, lw_.description);
    KLOG_V(4, "\"Listed\" reflector=\"" + lw_.description + "\" items=" + std::to_string(store_.size()) +
                  " resourceVersion=\"" + lastSyncResourceVersion() + "\" ok=" + (s.ok() ? "true" : "false"));
    setLastListError(s.ok() ? "" : s.message());
    if (s.ok()) return startWatch();
    if (s.code() == StatusCode::kGone || (listRv_ == "0" && s.code() == StatusCode::kTimeout))
      listRv_ = "";  // the watch cache cannot serve that version: read from etcd
    logListFailed(lw_.typeName, lw_.description, s);
    backoffThen([this] { doList(); });
  }

  void backoffThen(std::function<void()> step) {
    std::lock_guard l(mu_);
    if (stopped_) return;
    backoffTimer_ = clock_.scheduleAfter(backoff_.next(), [this, step = std::move(step)] {
      {
        std::lock_guard g(mu_);
        backoffTimer_ = 0;
      }
      strand_.post(step);
    });
  }

  void startWatch() {
    if (stopped()) return;
    client::ListOptions o;
    o.resourceVersion = lastSyncResourceVersion();
    o.allowWatchBookmarks = true;
    o.timeoutSeconds = 300 + static_cast<int64_t>(rng_() % 300);  // [5, 10) minutes
    openWatch(std::move(o));
  }

  // The streaming list: a watch whose initial events fill wlItems_ until the initial-events-end bookmark.
  void startWatchList() {
    if (stopped()) return;
    logListing(lw_.typeName, lw_.description);
    ++watchLists_;
    wlActive_ = true;
    wlItems_.clear();
    wlIndex_.clear();
    client::ListOptions o;
    o.resourceVersion = rvUnavailable_ ? "" : lastSyncResourceVersion();
    o.resourceVersionMatch = "NotOlderThan";
    o.sendInitialEvents = true;
    o.allowWatchBookmarks = true;
    o.timeoutSeconds = 300 + static_cast<int64_t>(rng_() % 300);
    openWatch(std::move(o));
  }

  void openWatch(client::ListOptions o) {
    uint64_t gen = ++watchGen_;
    KLOG_V(4, "\"Watching\" reflector=\"" + lw_.description + "\" resourceVersion=\"" + o.resourceVersion + "\"");
    watchGotEvent_ = watchGone_ = false;
    watchEvents_ = 0;
    watchStarted_ = clock_.now();
    ++watches_;
    if (lw_.watchAsync) {
      auto h = lw_.watchAsync(
          o,
          [this, gen](std::string_view line) {
            strand_.post([this, gen, l = std::string(line)] { onWatchLine(gen, l); });
            return true;
          },
          [this, gen](Status s) { strand_.post([this, gen, s = std::move(s)] { onWatchEnded(gen, s); }); },
          blockingStop_.get_token());
      if (!h.ok()) return onWatchEnded(gen, h.status());
      std::lock_guard l(mu_);
      if (stopped_) return;  // the handle is destroyed below, outside the lock
      stream_ = std::move(*h);
      return;
    }
    // Blocking watch (scripted): on a pool thread, events handed to the strand in order.
    {
      std::lock_guard l(mu_);
      ++blockingWatches_;
    }
    Executor::global().post([this, gen, o] {
      Status s = lw_.watch(
          o,
          [this, gen](client::WatchEvent<T>& ev) {
            strand_.post([this, gen, e = std::move(ev)]() mutable { onWatchEvent(gen, e); });
            return !blockingStop_.stop_requested();
          },
          blockingStop_.get_token());
      strand_.post([this, gen, s] { onWatchEnded(gen, s); });
      std::lock_guard l(mu_);
      if (--blockingWatches_ == 0) blockingDone_.notify_all();
    });
  }

  void onWatchLine(uint64_t gen, const std::string& line) {
    if (gen != watchGen_ || stopped()) return;
    client::WatchEvent<T> ev;
    if (Status d = client::decodeWatchEvent(line, ev); !d.ok()) return endWatch(gen, d);
    onWatchEvent(gen, ev);
  }

  void onWatchEvent(uint64_t gen, client::WatchEvent<T>& ev) {
    if (gen != watchGen_ || watchEnded_ == gen || stopped()) return;
    watchGotEvent_ = true;
    ++watchEvents_;
    if (ev.type == "ERROR") {
      watchGone_ = ev.status.code == 410 || ev.status.reason == "Expired" || ev.status.reason == "Gone";
      if (watchGone_) return endWatch(gen, Status::Ok());
      // Any other error the server sent in the stream ends it as that error (429: back off and watch again;
      // otherwise relist, as client-go's reflector does once its internal-error retry window, 0 in kcm, is spent).
      const bool throttled = ev.status.code == 429 || ev.status.reason == "TooManyRequests";
      return endWatch(gen, Status(throttled ? StatusCode::kTooManyRequests : StatusCode::kInternal,
                                  ev.status.message.empty() ? ev.status.reason : ev.status.message));
    }
    apply(ev);
  }

  // Ends the current stream from our side (decode error, ERROR event), then decides as if it ended.
  void endWatch(uint64_t gen, Status s) {
    std::unique_ptr<client::StreamHandle> h;
    {
      std::lock_guard l(mu_);
      h = std::move(stream_);
    }
    h.reset();
    onWatchEnded(gen, s);
  }

  void onWatchEnded(uint64_t gen, Status s) {
    if (gen != watchGen_ || watchEnded_ == gen || stopped()) return;
    watchEnded_ = gen;
    {
      std::unique_ptr<client::StreamHandle> h;
      {
        std::lock_guard l(mu_);
        h = std::move(stream_);
      }
    }
    if (wlActive_) return onWatchListEnded(std::move(s));
    if (watchGone_ || s.code() == StatusCode::kGone) {
      listRv_ = "";  // too old resourceVersion: relist from etcd
      return doList();
    }
    const bool veryShort = s.ok() && !watchGotEvent_ && clock_.now() - watchStarted_ < std::chrono::seconds(1);
    if (!s.ok() || veryShort) {
      if (veryShort) s = Status(StatusCode::kUnavailable, "very short watch: watch closed before any event");
      logWatchEndedWithError(lw_.typeName, lw_.description, s.message());
      if (!veryShort && watchResumable(s)) return backoffThen([this] { startWatch(); });
      // client-go's reflector lists again (from the last resourceVersion, so the watch cache serves it) and
      // Replace hands every object to the handlers as an update: controllers waiting out an error backoff sync
      // at once when the server is back.
      return backoffThen([this] {
        listRv_ = lastSyncResourceVersion().empty() ? "0" : lastSyncResourceVersion();
        doList();
      });
    }
    logWatchClosed(lw_.typeName, lw_.description, watchEvents_);
    startWatch();  // normal end (timeout): watch again from the last resourceVersion
  }

  // A streaming list ended before its initial-events-end bookmark.
  void onWatchListEnded(Status s) {
    wlActive_ = false;
    wlItems_.clear();
    wlIndex_.clear();
    const bool veryShort = s.ok() && !watchGotEvent_ && clock_.now() - watchStarted_ < std::chrono::seconds(1);
    // Expired, or too large a version (client-go's isTooLargeResourceVersionError: a Timeout saying so): stream a
    // fresh snapshot at once. Any other timeout is retried after a backoff below.
    const bool tooLarge = s.code() == StatusCode::kTimeout &&
                          s.message().find("Too large resource version") != std::string::npos;
    if (watchGone_ || s.code() == StatusCode::kGone || tooLarge) {
      rvUnavailable_ = true;
      return doList();
    }
    if (s.ok() && !veryShort) return doList();  // closed by the server midway: stream again
    if (veryShort) s = Status(StatusCode::kUnavailable, "very short watch: watch closed before any event");
    setLastListError(s.message());
    if (!veryShort && watchResumable(s)) {
      KLOG_V(2, "\"watch-list failed - backing off\" reflector=\"" + lw_.description + "\" type=\"" + lw_.typeName +
                    "\" err=" + log::quote(s.message()));
      return backoffThen([this] { doList(); });
    }
    KLOG_V(4, "\"Data couldn't be fetched in watchlist mode. Falling back to regular list.\" reflector=\"" +
                  lw_.description + "\" err=" + log::quote(s.message()));
    doPlainList();
  }

  // The initial-events-end bookmark: what streamed in replaces the store; the watch goes on from here.
  void finishWatchList(const std::string& rv) {
    wlActive_ = false;
    std::vector<std::pair<std::string, Ptr>> fresh;
    fresh.reserve(wlIndex_.size());
    for (auto& kv : wlItems_)
      if (kv.second) fresh.push_back(std::move(kv));
    wlItems_.clear();
    wlIndex_.clear();
    rvUnavailable_ = false;
    replaceAll(std::move(fresh), rv);
    setLastListError("");
    logCachesPopulated(lw_.typeName, lw_.description);
    KLOG_V(4, "\"Listed\" reflector=\"" + lw_.description + "\" items=" + std::to_string(store_.size()) +
                  " resourceVersion=\"" + rv + "\" ok=true watchList=true");
  }

  void applyWatchList(client::WatchEvent<T>& ev) {
    const auto& md = ev.object.metadata;
    if (ev.type == "BOOKMARK") {
      auto it = md.annotations.find("k8s.io/initial-events-end");
      if (it != md.annotations.end() && it->second == "true") finishWatchList(md.resourceVersion);
      return;
    }
    std::string key = metaNamespaceKey(ev.object);
    auto at = wlIndex_.find(key);
    if (ev.type == "DELETED") {
      if (at != wlIndex_.end()) {
        wlItems_[at->second].second.reset();
        wlIndex_.erase(at);
      }
      return;
    }
    if (ev.type != "ADDED" && ev.type != "MODIFIED") return;
    Ptr obj = prepare(std::move(ev.object));
    if (at != wlIndex_.end()) {
      wlItems_[at->second].second = std::move(obj);
      return;
    }
    wlIndex_.emplace(key, wlItems_.size());
    wlItems_.emplace_back(std::move(key), std::move(obj));
  }

  // Which ended watches are resumed from the last resourceVersion rather than relisted. client-go retries the
  // watch on 429 and on a refused connection, and treats a stream that simply ended as a normal close. Our
  // transport reports a refused, reset or timed-out connection as Unavailable/Timeout (a 503/504 answer too);
  // those resume. An error the server answered or sent in the stream (500, 403, ...) and a very short watch
  // relist, as client-go does.
  static bool watchResumable(const Status& s) {
    switch (s.code()) {
      case StatusCode::kTooManyRequests:
      case StatusCode::kUnavailable:
      case StatusCode::kTimeout:
      case StatusCode::kCancelled: return true;
      default: return false;
    }
  }

  void apply(client::WatchEvent<T>& ev) {
    if (wlActive_) return applyWatchList(ev);
    if (ev.type == "BOOKMARK") {
      setRv(ev.object.metadata.resourceVersion);
      return;
    }
    const std::string rv = ev.object.metadata.resourceVersion;
    const std::string key = metaNamespaceKey(ev.object);
    const auto began = clock_.now();
    // The store's resourceVersion moves with the object, before any handler hears of it (client-go sets both
    // under the store's lock): a sync that a handler starts must find the cache at least at this version, or the
    // stale-cache guard (runtime/consistency.h) fails it and the key waits out a rate-limited retry.
    if (ev.type == "ADDED" || ev.type == "MODIFIED") {
      Ptr obj = prepare(std::move(ev.object));
      Ptr old = store_.upsert(key, obj);
      setRv(rv);
      notify(old ? Notification{Kind::kUpdate, old, obj, false} : Notification{Kind::kAdd, nullptr, obj, false});
    } else if (ev.type == "DELETED") {
      Ptr obj = prepare(std::move(ev.object));
      Ptr old = store_.erase(key);
      setRv(rv);
      notify({Kind::kDelete, old ? old : obj, nullptr, false});
    } else {
      setRv(rv);
    }
    if (opts_.metrics) opts_.metrics->observeProcessing(clock_.now() - began);
  }

  Status listAndReplace(const std::string& rv) {
    ++lists_;
    client::ListOptions o;
    o.resourceVersion = rv;
    o.limit = opts_.pageSize;
    std::vector<std::pair<std::string, Ptr>> fresh;  // list order, like client-go's Replace
    std::unordered_set<std::string> freshKeys;
    std::string listRv;
    while (true) {
      auto page = lw_.list(o, [&](T&& item) {
        std::string key = metaNamespaceKey(item);
        freshKeys.insert(key);
        fresh.emplace_back(std::move(key), prepare(std::move(item)));
      });
      if (!page.ok()) return page.status();
      listRv = page->resourceVersion;
      if (page->continueToken.empty() || stopped()) break;
      o.continueToken = page->continueToken;
      o.resourceVersion.clear();
    }
    replaceAll(std::move(fresh), listRv, &freshKeys);
    return Status::Ok();
  }

  // Replace at once: deletes for what vanished (tombstones), then adds/updates in the given order.
  void replaceAll(std::vector<std::pair<std::string, Ptr>> fresh, const std::string& listRv,
                  const std::unordered_set<std::string>* keys = nullptr) {
    std::unordered_set<std::string> own;
    if (!keys) {
      own.reserve(fresh.size());
      for (const auto& kv : fresh) own.insert(kv.first);
      keys = &own;
    }
    for (const auto& key : store_.keys())
      if (!keys->count(key))
        if (Ptr old = store_.erase(key)) notify({Kind::kDelete, old, nullptr, true});
    size_t queued = fresh.size();
    if (opts_.metrics) opts_.metrics->setQueued(queued);
    for (auto& [key, obj] : fresh) {
      const auto began = clock_.now();
      Ptr old = store_.upsert(key, obj);
      notify(old ? Notification{Kind::kUpdate, old, obj, false} : Notification{Kind::kAdd, nullptr, obj, false});
      if (opts_.metrics) {
        opts_.metrics->observeProcessing(clock_.now() - began);
        opts_.metrics->setQueued(--queued);
      }
    }
    setRv(listRv);
    synced_.store(true);  // idempotent: "synced" is observed once and stays
  }

  // Resync: one timer entry at the earliest listener's due time; the resync itself runs on the strand, in
  // order with watch events.
  void armResync() {
    Clock::TimePoint due = Clock::TimePoint::max();
    {
      std::lock_guard g(listenersMu_);
      for (auto& l : listeners_)
        if (l->resync() > Clock::Duration::zero()) due = std::min(due, l->nextResync_);
    }
    Clock::TimerId old = 0;
    {
      std::lock_guard l(mu_);
      if (!started_ || stopped_ || due == Clock::TimePoint::max()) return;
      if (resyncTimer_ && resyncDue_ <= due) return;
      old = resyncTimer_;
      uint64_t seq = ++resyncSeq_;
      resyncDue_ = due;
      resyncTimer_ = clock_.schedule(due, [this, seq] {
        {
          std::lock_guard g(mu_);
          if (resyncSeq_ == seq) resyncTimer_ = 0;
        }
        strand_.post([this] { doResync(); });
      });
    }
    if (old) clock_.cancel(old);  // outside mu_: a firing callback takes it
  }

  void doResync() {
    if (stopped()) return;
    {
      auto now = clock_.now();
      std::lock_guard g(listenersMu_);
      for (auto& l : listeners_) {
        if (l->resync() <= Clock::Duration::zero() || now < l->nextResync_) continue;
        if (!synced_.load()) {  // nothing to resync yet: look again in a second
          l->nextResync_ = now + std::chrono::seconds(1);
          continue;
        }
        for (const auto& o : store_.list()) l->push({Kind::kUpdate, o, o, false});
        l->nextResync_ = now + l->resync();
      }
    }
    armResync();
  }

  ListerWatcher<T> lw_;
  InformerOptions opts_;
  Clock& clock_;
  Backoff backoff_;
  std::mt19937_64 rng_;
  Transform transform_;
  Store<T> store_;
  std::atomic<bool> synced_{false};
  mutable std::mutex rvMu_;
  std::string rv_;
  std::mutex listenersMu_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // what registrations check before reaching us
  std::atomic<uint64_t> lists_{0}, watches_{0}, watchLists_{0};
  // Reflector state: touched only on strand_.
  std::string listRv_ = "0";
  // Streaming list: active until the initial-events-end bookmark; what streamed in so far (a deleted entry is
  // null) and where each key sits.
  bool wlActive_ = false, rvUnavailable_ = false;
  std::vector<std::pair<std::string, Ptr>> wlItems_;
  std::unordered_map<std::string, size_t> wlIndex_;
  uint64_t watchGen_ = 0, watchEnded_ = 0;
  bool watchGotEvent_ = false, watchGone_ = false;
  uint64_t watchEvents_ = 0;
  Clock::TimePoint watchStarted_{};
  // Shared with stop and timers.
  mutable std::mutex mu_;
  bool started_ = false, stopped_ = false;
  std::unique_ptr<client::StreamHandle> stream_;
  Clock::TimerId backoffTimer_ = 0, resyncTimer_ = 0;
  Clock::TimePoint resyncDue_{};
  uint64_t resyncSeq_ = 0;
  std::stop_source blockingStop_;
  int blockingWatches_ = 0;
  std::condition_variable blockingDone_;
  std::unique_ptr<std::stop_callback<std::function<void()>>> onStop_;
  Strand strand_;  // last: drained first on destruction
};

}  // namespace kcm::informers
