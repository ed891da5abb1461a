#include "client/events.h"

#include "base/log.h"
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
    : client_(std::move(client)),
      host_(std::move(host)),
      clock_(clock),
      logged_(kLruEntries),
      similar_(kLruEntries),
      spam_(kLruEntries) {}

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

// client-go's EventCorrelator (tools/record/events_cache.go), in its order: EventAggregate, then eventObserve, then
// the spam filter on the observed event; then recordToSink writes it (a PATCH of the earlier Event when one is
// remembered under the same key, else a create), retrying transport errors up to 12 times, 10 s apart.
void EventBroadcaster::write(const Pending& p) {
  const std::string ns = p.obj.namespace_.empty() ? "default" : p.obj.namespace_;
  const std::string source = p.component + "\x1f" + host_ + "\x1f";
  const std::string object = objectKey(p.obj);

  // EventAggregatorByReasonFunc: same source, object, type, reason, reporting controller and instance; the local
  // key is the message. At the 10th distinct message within 10 minutes of the previous one, the event becomes one
  // "combined" Event kept under the aggregate key (so later ones update it), and one message leaves the set.
  const std::string aggregateKey =
      source + object + "\x1f" + p.type + "\x1f" + p.reason + "\x1f" + p.component + "\x1f" + host_;
  Similar& sim = similar_[aggregateKey];
  const auto now = clock_.now();
  if (sim.messages.empty() || now - sim.last > kAggregateWindow) sim.messages.clear();
  sim.messages.insert(p.message);
  sim.last = now;
  const bool combined = static_cast<int>(sim.messages.size()) >= kAggregateThreshold;
  std::string message = p.message, key;
  if (combined) {
    sim.messages.erase(sim.messages.begin());  // client-go: PopAny
    message = "(combined from similar events): " + p.message;
    key = "aggregate\x1f" + aggregateKey;
  } else {  // getEventKey
    key = source + object + "\x1f" + p.obj.fieldPath + "\x1f" + p.type + "\x1f" + p.reason + "\x1f" + p.message;
  }

  // eventObserve: a remembered Event under this key is updated (count + 1, its name and first timestamp).
  const std::string ts = api::Time::now().rfc3339();
  Logged obs;
  bool existing = false;
  if (const Logged* seen = logged_.find(key)) {
    obs = *seen;
    existing = true;
  } else {
    obs = Logged{p.obj.name + "." + hexNanos(), ns, 0, ts};
  }
  obs.count += 1;
  logged_[key] = obs;

  // The spam filter: per source, object and type (not reason), burst 25, one more every 5 minutes.
  auto& limiter = spam_[source + object + "\x1f" + p.type];
  if (!limiter) limiter = std::make_unique<RateLimiter>(kSpamQps, kSpamBurst, clock_);
  if (!limiter->tryAccept()) return;

  api::core::v1::Event ev;
  ev.metadata.name = obs.name;
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
  if (!combined) {  // the aggregator's combined Event carries no reporting controller or instance
    ev.reportingComponent = p.component;
    ev.reportingInstance = host_;
  }
  ev.firstTimestamp = *api::Time::parse(obs.firstTimestamp);
  ev.lastTimestamp = *api::Time::parse(ts);
  ev.count = obs.count;

  std::string patchBody;
  if (existing) {
    std::string m;
    api::JsonWriter w(m);
    w.value(message);
    patchBody = R"({"count":)" + std::to_string(obs.count) + R"(,"lastTimestamp":")" + ts + R"(","message":)" + m + "}";
  }
  for (int attempt = 0; attempt < 12; ++attempt) {
    Status st;
    if (existing) {
      auto r = patch<api::core::v1::Event>(*client_, ns, obs.name, PatchType::kStrategicMerge, patchBody);
      if (r.ok()) return;
      st = r.status();
      if (st.code() == StatusCode::kNotFound) existing = false;  // expired or deleted: written anew below
    }
    if (!existing) {
      auto r = create(*client_, ns, ev);
      if (r.ok()) {
        if (Logged* seen = logged_.find(key)) seen->name = r->metadata.name;
        return;
      }
      st = r.status();
    }
    StatusCode c = st.code();
    if (c == StatusCode::kAlreadyExists || c == StatusCode::kInvalid || c == StatusCode::kForbidden ||
        c == StatusCode::kNotFound) {  // namespace terminating, RBAC, ...: not retryable
      KLOG_ERROR("\"Server rejected event (will not retry!)\" err=" + log::quote(st.message()) +
                 " event=" + log::quote(ns + "/" + ev.metadata.name));
      return;
    }
    KLOG_ERROR("\"Unable to write event (may retry after sleeping)\" err=" + log::quote(st.message()) +
               " event=" + log::quote(ns + "/" + ev.metadata.name));
    if (stop_.stop_requested() || !clock_.sleepFor(std::chrono::seconds(10), stop_.get_token()))
      return;
  }
}

}  // namespace kcm::client
