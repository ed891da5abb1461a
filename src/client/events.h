#pragma once
// core/v1 Events the way client-go's tools/record writes them for kube-controller-manager:
//  - EventBroadcaster owns one background writer thread and a bounded queue (1000; excess dropped, never
//    blocking the controller that records).
//  - EventRecorder (one per controller, source.component = the controller's name) records events.
//  - The correlator collapses repeats: the same event again bumps `count` and `lastTimestamp` with a PATCH on
//    the existing Event instead of creating another; from the 10th distinct message for the same object and
//    reason (each within 10 minutes of the last) on, they update one combined Event ("(combined from similar
//    events): <latest message>"); a per-object-and-type spam filter (burst 25, one token per 5 minutes) drops
//    floods.
// Thread-safe: record from any thread.
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>

#include "api/support/types.h"
#include "base/clock.h"
#include "base/lru.h"
#include "client/rate_limiter.h"
#include "client/rest_client.h"

namespace kcm::client {

struct ObjectReference {
  std::string kind, apiVersion, namespace_, name, uid, resourceVersion, fieldPath;
};

inline constexpr const char* kEventTypeNormal = "Normal";
inline constexpr const char* kEventTypeWarning = "Warning";

class EventBroadcaster;

class EventRecorder {
 public:
  void event(const ObjectReference& obj, const std::string& type, const std::string& reason,
             const std::string& message) const;
  const std::string& component() const { return component_; }

 private:
  friend class EventBroadcaster;
  EventRecorder(EventBroadcaster* b, std::string component) : b_(b), component_(std::move(component)) {}
  EventBroadcaster* b_;
  std::string component_;
};

class EventBroadcaster {
 public:
  // host: source.host / reportingInstance (the process's hostname).
  EventBroadcaster(std::shared_ptr<RestClient> client, std::string host, Clock& clock = RealClock::get());
  ~EventBroadcaster();  // flushes what is queued (bounded), then stops
  EventBroadcaster(const EventBroadcaster&) = delete;
  EventBroadcaster& operator=(const EventBroadcaster&) = delete;

  std::shared_ptr<EventRecorder> newRecorder(const std::string& component);
  // Waits until every queued event has been written (tests, shutdown).
  void flush();
  uint64_t dropped() const;

 private:
  friend class EventRecorder;
  struct Pending {
    ObjectReference obj;
    std::string type, reason, message, component;
    api::MicroTime at;
  };
  struct Logged {  // what the correlator remembers of an event it wrote
    std::string name, ns;
    int32_t count = 0;
    std::string firstTimestamp;
  };
  struct Similar {  // client-go aggregateRecord
    std::set<std::string> messages;
    Clock::TimePoint last;
  };
  void enqueue(Pending p);
  void drain();  // a pool task: writes queued events until none are left
  void write(const Pending& p);

  std::shared_ptr<RestClient> client_;
  std::string host_;
  Clock& clock_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Pending> queue_;
  size_t inFlight_ = 0;
  uint64_t dropped_ = 0;
  // Correlator state; touched only by the writer thread. Each cache an LRU of 4096 entries like client-go's
  // (maxLruCacheEntries): the logger, the aggregator and the spam filter.
  LruMap<Logged> logged_;
  LruMap<Similar> similar_;
  LruMap<std::unique_ptr<RateLimiter>> spam_;
  bool draining_ = false;  // a drain task is posted or running (one at a time: the correlator is not locked)
  std::stop_source stop_;
};

}  // namespace kcm::client
