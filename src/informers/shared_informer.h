#pragma once
// SharedInformer<T>: a reflector (LIST then WATCH, as an explicit state machine) feeding a Store<T> and
// dispatching add/update/delete to handlers, each on its own thread so a slow handler never blocks the watch.
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
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "client/typed_client.h"
#include "informers/store.h"

namespace kcm::informers {

template <class T>
struct ListerWatcher {
  // Lists one page, handing each decoded item to onItem; returns the page's resourceVersion/continue.
  std::function<Result<client::ListInfo>(const client::ListOptions&, const std::function<void(T&&)>& onItem)> list;
  std::function<Status(const client::ListOptions&, const std::function<bool(client::WatchEvent<T>&)>&,
                       std::stop_token)>
      watch;
  std::string description;  // for logs: "pods", "apps/v1, Resource=deployments (metadata)"
};

template <class T>
ListerWatcher<T> typedListerWatcher(std::shared_ptr<client::RestClient> c, const std::string& ns = "") {
  ListerWatcher<T> lw;
  lw.description = api::ResourceTraits<T>::kResource;
  lw.list = [c, ns](const client::ListOptions& o, const std::function<void(T&&)>& onItem) {
    return client::listPageStreaming<T>(*c, ns, o, onItem);
  };
  lw.watch = [c, ns](const client::ListOptions& o, const std::function<bool(client::WatchEvent<T>&)>& f,
                     std::stop_token stop) { return client::watch<T>(*c, ns, o, f, stop); };
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

struct InformerOptions {
  Clock::Duration resyncPeriod{0};
  Clock* clock = &RealClock::get();
  int64_t pageSize = 500;
};

class InformerBase {
 public:
  virtual ~InformerBase() = default;
  virtual void run(std::stop_token stop) = 0;
  virtual bool hasSynced() const = 0;
  // Blocks until synced or stop; returns hasSynced().
  bool waitForCacheSync(std::stop_token stop) const;
};

template <class T>
class SharedInformer : public InformerBase {
 public:
  using Ptr = std::shared_ptr<const T>;
  using Transform = std::function<void(T&)>;

  SharedInformer(ListerWatcher<T> lw, InformerOptions opts = {})
      : lw_(std::move(lw)), opts_(opts), clock_(*opts.clock),
        backoff_(std::chrono::milliseconds(800), std::chrono::seconds(30), std::chrono::minutes(2), clock_) {
    transform_ = [](T& o) { o.metadata.managedFields.clear(); };
  }
  ~SharedInformer() override {
    for (auto& l : listeners_) l->stop();
  }

  Store<T>& store() { return store_; }
  const Store<T>& store() const { return store_; }
  void setTransform(Transform t) { transform_ = std::move(t); }

  // Registers a handler. When the informer already has objects, they are delivered as adds first.
  void addEventHandler(EventHandler<T> h, Clock::Duration resync = Clock::Duration::max()) {
    auto l = std::make_unique<Listener>(std::move(h), resync == Clock::Duration::max() ? opts_.resyncPeriod : resync,
                                        clock_);
    std::lock_guard g(listenersMu_);
    for (const auto& o : store_.list()) l->push({Kind::kAdd, nullptr, o, false});
    listeners_.push_back(std::move(l));
  }

  bool hasSynced() const override { return synced_.load(); }
  std::string lastSyncResourceVersion() const {
    std::lock_guard l(rvMu_);
    return rv_;
  }
  uint64_t listCount() const { return lists_.load(); }
  uint64_t watchCount() const { return watches_.load(); }

  void run(std::stop_token stop) override {
    std::jthread resync([this](std::stop_token st) { resyncLoop(st); });
    std::stop_callback stopResync(stop, [&] { resync.request_stop(); });
    enum class State { kList, kWatch, kBackoff } state = State::kList, afterBackoff = State::kList;
    std::string listRv = "0";
    std::mt19937_64 rng(std::random_device{}());
    while (!stop.stop_requested()) {
      switch (state) {
        case State::kList: {
          Status s = listAndReplace(listRv, stop);
          if (stop.stop_requested()) return;
          if (s.ok()) {
            state = State::kWatch;
          } else {
            if (listRv == "0" && (s.code() == StatusCode::kGone || s.code() == StatusCode::kTimeout))
              listRv = "";  // the watch cache cannot serve "0": read from etcd
            std::fprintf(stderr, "reflector %s: failed to list: %s\n", lw_.description.c_str(), s.toString().c_str());
            state = State::kBackoff;
            afterBackoff = State::kList;
          }
          break;
        }
        case State::kWatch: {
          client::ListOptions o;
          o.resourceVersion = lastSyncResourceVersion();
          o.allowWatchBookmarks = true;
          o.timeoutSeconds = 300 + static_cast<int64_t>(rng() % 300);  // [5, 10) minutes
          bool gotEvent = false, gone = false;
          auto started = clock_.now();
          ++watches_;
          Status s = lw_.watch(
              o,
              [&](client::WatchEvent<T>& ev) {
                gotEvent = true;
                if (ev.type == "ERROR") {
                  gone = ev.status.code == 410 || ev.status.reason == "Expired" || ev.status.reason == "Gone";
                  if (!gone)
                    std::fprintf(stderr, "reflector %s: watch error event: %s\n", lw_.description.c_str(),
                                 ev.status.message.c_str());
                  return false;
                }
                apply(ev);
                return !stop.stop_requested();
              },
              stop);
          if (stop.stop_requested()) return;
          if (gone || s.code() == StatusCode::kGone) {
            // Too old resourceVersion: relist from etcd.
            listRv = "";
            state = State::kList;
          } else if (!s.ok() || (!gotEvent && clock_.now() - started < std::chrono::seconds(1))) {
            // Connection trouble or a suspiciously short watch: back off, then resume from the same version.
            if (s.ok()) s = Status(StatusCode::kUnavailable, "very short watch: watch closed before any event");
            std::fprintf(stderr, "reflector %s: watch ended: %s\n", lw_.description.c_str(), s.toString().c_str());
            state = State::kBackoff;
            afterBackoff = State::kWatch;
          }
          break;  // normal end (timeout): watch again from the last resourceVersion
        }
        case State::kBackoff:
          if (!clock_.sleepFor(backoff_.next(), stop)) return;
          state = afterBackoff;
          break;
      }
    }
  }

 private:
  enum class Kind { kAdd, kUpdate, kDelete };
  struct Notification {
    Kind kind;
    Ptr oldObj, newObj;
    bool finalStateUnknown;
  };

  // One handler, its queue and its thread (client-go's processorListener).
  class Listener {
   public:
    Listener(EventHandler<T> h, Clock::Duration resync, Clock& clock)
        : nextResync_(clock.now() + resync), h_(std::move(h)), resync_(resync),
          thread_([this](std::stop_token st) { loop(st); }) {}
    void push(Notification n) {
      {
        std::lock_guard l(mu_);
        q_.push_back(std::move(n));
      }
      cv_.notify_one();
    }
    void stop() {
      thread_.request_stop();
      cv_.notify_all();
    }
    Clock::Duration resync() const { return resync_; }
    Clock::TimePoint nextResync_;

   private:
    void loop(std::stop_token st) {
      while (true) {
        Notification n;
        {
          std::unique_lock l(mu_);
          cv_.wait(l, st, [&] { return !q_.empty(); });
          if (q_.empty()) return;
          n = std::move(q_.front());
          q_.pop_front();
        }
        if (n.kind == Kind::kAdd && h_.onAdd) h_.onAdd(n.newObj);
        if (n.kind == Kind::kUpdate && h_.onUpdate) h_.onUpdate(n.oldObj, n.newObj);
        if (n.kind == Kind::kDelete && h_.onDelete) h_.onDelete(n.oldObj, n.finalStateUnknown);
      }
    }
    EventHandler<T> h_;
    Clock::Duration resync_;
    std::mutex mu_;
    std::condition_variable_any cv_;
    std::deque<Notification> q_;
    std::jthread thread_;
  };

  void notify(const Notification& n) {
    std::lock_guard g(listenersMu_);
    for (auto& l : listeners_) l->push(n);
  }

  void setRv(const std::string& rv) {
    std::lock_guard l(rvMu_);
    rv_ = rv;
  }

  Ptr prepare(T&& obj) {
    if (transform_) transform_(obj);
    return std::make_shared<const T>(std::move(obj));
  }

  void apply(client::WatchEvent<T>& ev) {
    if (ev.type == "BOOKMARK") {
      setRv(ev.object.metadata.resourceVersion);
      return;
    }
    const std::string rv = ev.object.metadata.resourceVersion;
    const std::string key = metaNamespaceKey(ev.object);
    if (ev.type == "ADDED" || ev.type == "MODIFIED") {
      Ptr obj = prepare(std::move(ev.object));
      Ptr old = store_.upsert(key, obj);
      notify(old ? Notification{Kind::kUpdate, old, obj, false} : Notification{Kind::kAdd, nullptr, obj, false});
    } else if (ev.type == "DELETED") {
      Ptr obj = prepare(std::move(ev.object));
      Ptr old = store_.erase(key);
      notify({Kind::kDelete, old ? old : obj, nullptr, false});
    }
    setRv(rv);
  }

  Status listAndReplace(const std::string& rv, std::stop_token stop) {
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
      if (page->continueToken.empty() || stop.stop_requested()) break;
      o.continueToken = page->continueToken;
      o.resourceVersion.clear();
    }
    // Replace at once: deletes for what vanished (tombstones), then adds/updates.
    for (const auto& key : store_.keys())
      if (!freshKeys.count(key))
        if (Ptr old = store_.erase(key)) notify({Kind::kDelete, old, nullptr, true});
    for (auto& [key, obj] : fresh) {
      Ptr old = store_.upsert(key, obj);
      notify(old ? Notification{Kind::kUpdate, old, obj, false} : Notification{Kind::kAdd, nullptr, obj, false});
    }
    setRv(listRv);
    synced_.store(true);  // idempotent: "synced" is observed once and stays
    return Status::Ok();
  }

  void resyncLoop(std::stop_token st) {
    while (clock_.sleepFor(std::chrono::seconds(1), st)) {
      if (!synced_.load()) continue;
      auto now = clock_.now();
      std::lock_guard g(listenersMu_);
      for (auto& l : listeners_) {
        if (l->resync() <= Clock::Duration::zero() || now < l->nextResync_) continue;
        for (const auto& o : store_.list()) l->push({Kind::kUpdate, o, o, false});
        l->nextResync_ = now + l->resync();
      }
    }
  }

  ListerWatcher<T> lw_;
  InformerOptions opts_;
  Clock& clock_;
  Backoff backoff_;
  Transform transform_;
  Store<T> store_;
  std::atomic<bool> synced_{false};
  mutable std::mutex rvMu_;
  std::string rv_;
  std::mutex listenersMu_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::atomic<uint64_t> lists_{0}, watches_{0};
};

}  // namespace kcm::informers
