#include "client/events.h"

#include "base/executor.h"

#include <cstdio>

#include "api/gen/core_v1_json.h"
#include "api/support/json_writer.h"
#include "client/typed_client.h"

namespace kcm::client {
namespace {

constexpr size_t kQueueLimit = 1000;
constexpr size_t kLruEntries = 4096;
constexpr int kAggregateThreshold = 10;                       // client-go defaultAggregateMaxEvents
constexpr auto kAggregateWindow = std::chrono::minutes(10);   // defaultAggregateIntervalInSeconds
constexpr double kSpamQps = 1.0 / 300;                        // defaultSpamQPS: one every 5 minutes
constexpr int kSpamBurst = 25;                                // defaultSpamBurst

std::string objectKey(const ObjectReference& o) {
  return o.kind + "\x1f" + o.namespace_ + "\x1f" + o.name + "\x1f" + o.uid + "\x1f" + o.apiVersion;
}

std::string hexNanos() {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                std::chrono::system_clock::now().time_since_epoch()).count();
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(ns));
  return buf;
}

}  // namespace

void EventRecorder::event(const ObjectReference& obj, const std::string& type, const std::string& reason,
                          const std::string& message) const {
  b_->enqueue({obj, type, reason, message, component_, api::MicroTime::now()});
}

EventBroadcaster::EventBroadcaster(std::shared_ptr<RestClient> client, std::string host, Clock& clock)
    : client_(std::move(client)), host_(std::move(host)), clock_(clock) {}

EventBroadcaster::~EventBroadcaster() {
  stop_.request_stop();
  std::unique_lock l(mu_);
  queue_.clear();
  cv_.wait(l, [&] { return !draining_; });
}

std::shared_ptr<EventRecorder> EventBroadcaster::newRecorder(const std::string& component) {
  return std::shared_ptr<EventRecorder>(new EventRecorder(this, component));
}

void EventBroadcaster::enqueue(Pending p) {
  {
    std::lock_guard l(mu_);
    if (queue_.size() >= kQueueLimit) {
      ++dropped_;
      return;
    }
    queue_.push_back(std::move(p));
    if (draining_) return;
    draining_ = true;
  }
  Executor::global().post([this] { drain(); });
}

uint64_t EventBroadcaster::dropped() const {
  std::lock_guard l(mu_);
  return dropped_;
}

void EventBroadcaster::flush() {
  std::unique_lock l(mu_);
  cv_.wait(l, [&] { return queue_.empty() && inFlight_ == 0; });
}

void EventBroadcaster::drain() {
  while (true) {
    Pending p;
    {
      std::unique_lock l(mu_);
      if (queue_.empty() || stop_.stop_requested()) {
        draining_ = false;
        cv_.notify_all();
        return;
      }
      p = std::move(queue_.front());
      queue_.pop_front();
      ++inFlight_;
    }
    write(p);
    {
      std::lock_guard l(mu_);
      --inFlight_;
    }
    cv_.notify_all();
  }
}

void EventBroadcaster::write(const Pending& p) {
  const std::string ns = p.obj.namespace_.empty() ? "default" : p.obj.namespace_;
  const std::string objKey = objectKey(p.obj);

  // Spam filter per source + object.
  auto& limiter = spam_[p.component + "\x1f" + objKey];
  if (!limiter) limiter = std::make_unique<RateLimiter>(kSpamQps, kSpamBurst, clock_);
  if (!limiter->tryAccept()) return;

  // Aggregation: many different messages for the same object/reason become one combined event.
  std::string message = p.message;
  const std::string aggKey = p.component + "\x1f" + objKey + "\x1f" + p.type + "\x1f" + p.reason;
  Similar& sim = similar_[aggKey];
  auto now = clock_.now();
  if (sim.messages.empty() || now - sim.since > kAggregateWindow) {
    sim.messages.clear();
    sim.since = now;
  }
  sim.messages[p.message] = true;
  if (static_cast<int>(sim.messages.size()) >= kAggregateThreshold)
    message = "(combined from similar events): " + p.message;

  const std::string key = aggKey + "\x1f" + message;
  const std::string ts = api::Time::now().rfc3339();
  auto it = logged_.find(key);
  if (it != logged_.end()) {
    Logged& l = it->second;
    const int32_t count = l.count + 1;
    std::string body = R"({"count":)" + std::to_string(count) + R"(,"lastTimestamp":")" + ts + R"(","message":)";
    {
      std::string m;
      api::JsonWriter w(m);
      w.value(message);
      body += m + "}";
    }
    auto r = patch<api::core::v1::Event>(*client_, l.ns, l.name, PatchType::kStrategicMerge, body);
    if (r.ok()) {
      l.count = count;
      return;
    }
    if (r.status().code() != StatusCode::kNotFound) {
      std::fprintf(stderr, "Unable to update event %s/%s: %s\n", l.ns.c_str(), l.name.c_str(),
                   r.status().toString().c_str());
      return;
    }
    // The Event expired or was deleted: write it anew.
    logged_.erase(it);
    loggedOrder_.remove(key);
  }

  api::core::v1::Event ev;
  ev.metadata.name = p.obj.name + "." + hexNanos();
  ev.metadata.namespace_ = ns;
  ev.involvedObject.kind = p.obj.kind;
  ev.involvedObject.apiVersion = p.obj.apiVersion;
  ev.involvedObject.namespace_ = p.obj.namespace_;
  ev.involvedObject.name = p.obj.name;
  ev.involvedObject.uid = p.obj.uid;
  ev.involvedObject.resourceVersion = p.obj.resourceVersion;
  ev.involvedObject.fieldPath = p.obj.fieldPath;
  ev.reason = p.reason;
  ev.message = message;
  ev.type = p.type;
  ev.source.component = p.component;
  ev.source.host = host_;
  ev.reportingComponent = p.component;
  ev.reportingInstance = host_;
  ev.firstTimestamp = *api::Time::parse(ts);
  ev.lastTimestamp = ev.firstTimestamp;
  ev.count = 1;
  // client-go retries a failed write up to 12 times, 10 s apart; a controller never waits on it.
  for (int attempt = 0; attempt < 12; ++attempt) {
    auto r = create(*client_, ns, ev);
    if (r.ok()) {
      logged_[key] = Logged{r->metadata.name, ns, 1, ts};
      loggedOrder_.push_back(key);
      if (loggedOrder_.size() > kLruEntries) {
        logged_.erase(loggedOrder_.front());
        loggedOrder_.pop_front();
      }
      return;
    }
    StatusCode c = r.status().code();
    if (c == StatusCode::kAlreadyExists || c == StatusCode::kInvalid || c == StatusCode::kForbidden ||
        c == StatusCode::kNotFound) {  // namespace terminating, RBAC, ...: not retryable
      std::fprintf(stderr, "Server rejected event (will not retry): %s\n", r.status().toString().c_str());
      return;
    }
    std::fprintf(stderr, "Unable to write event %s/%s: %s (may retry after sleeping)\n", ns.c_str(),
                 ev.metadata.name.c_str(), r.status().toString().c_str());
    if (stop_.stop_requested() || !clock_.sleepFor(std::chrono::seconds(10), stop_.get_token()))
      return;
  }
}

}  // namespace kcm::client
