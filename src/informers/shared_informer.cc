#include "informers/shared_informer.h"

#include <thread>

#include "base/duration.h"
#include "base/log.h"
#include "base/metrics.h"

namespace kcm::informers {

Clock::Duration Backoff::next() {
  auto now = clock_.now();
  if (step_ == Clock::Duration::zero() || (lastBackoff_ != Clock::TimePoint{} && now - lastBackoff_ > resetAfter_))
    step_ = initial_;
  else
    step_ = std::min(max_, step_ * 2);
  lastBackoff_ = now;
  std::uniform_real_distribution<double> jitter(0.0, 1.0);
  return step_ + std::chrono::duration_cast<Clock::Duration>(step_ * jitter(rng_));
}

void InformerBase::run(std::stop_token stop) {
  start(stop);
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock l(m);
  cv.wait(l, stop, [] { return false; });
}

namespace {
std::atomic<bool> gWatchListClient{true};  // client-go's WatchListClient default at the pin
}  // namespace

bool watchListClientEnabled() { return gWatchListClient.load(); }
void setWatchListClientEnabled(bool on) { gWatchListClient.store(on); }

bool InformerBase::waitForCacheSync(std::stop_token stop) const {
  while (!hasSynced() && !stop.stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return hasSynced();
}

Clock::Duration resyncPeriod(Clock::Duration minResync) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> factor(1.0, 2.0);
  return std::chrono::duration_cast<Clock::Duration>(minResync * factor(rng));
}

ListerWatcher<api::meta::v1::PartialObjectMetadata> dynamicListerWatcher(std::shared_ptr<client::RestClient> c,
                                                                         const client::GroupVersionResource& gvr,
                                                                         const std::string& ns) {
  using PM = api::meta::v1::PartialObjectMetadata;
  ListerWatcher<PM> lw;
  lw.description = gvr.toString() + " (dynamic)";
  lw.watchListSemantics = c->supportsWatchList();
  lw.typeName = "*unstructured.Unstructured";
  lw.list = [c, gvr, ns](const client::ListOptions& o, const std::function<void(PM&&)>& onItem) -> Result<client::ListInfo> {
    client::Request req;
    req.path = client::resourcePath(gvr.group, gvr.version, gvr.resource, ns);
    client::appendListQuery(o, req.query);
    auto r = c->send(req);
    if (!r.ok()) return r.status();
    return client::decodeListStreaming<PM>(r->body, onItem);
  };
  lw.watchAsync = [c, gvr, ns](const client::ListOptions& o, client::OnLine onLine,
                                std::function<void(Status)> onDone, std::stop_token stop) {
    client::Request req;
    req.path = client::resourcePath(gvr.group, gvr.version, gvr.resource, ns);
    return client::watchRequestAsync(*c, std::move(req), o, std::move(onLine), std::move(onDone), stop);
  };
  return lw;
}

ListerWatcher<api::meta::v1::PartialObjectMetadata> metadataListerWatcher(std::shared_ptr<client::RestClient> c,
                                                                          const client::GroupVersionResource& gvr,
                                                                          const std::string& ns) {
  using PM = api::meta::v1::PartialObjectMetadata;
  ListerWatcher<PM> lw;
  lw.description = gvr.toString() + " (metadata)";
  lw.watchListSemantics = c->supportsWatchList();
  lw.list = [c, gvr, ns](const client::ListOptions& o, const std::function<void(PM&&)>& onItem) {
    return client::listMetadataPageStreaming(*c, gvr, ns, o, onItem);
  };
  lw.watchAsync = [c, gvr, ns](const client::ListOptions& o, client::OnLine onLine,
                                std::function<void(Status)> onDone, std::stop_token stop) {
    client::Request req;
    req.path = client::resourcePath(gvr.group, gvr.version, gvr.resource, ns);
    req.accept = client::kAcceptPartialObjectMetadata;
    return client::watchRequestAsync(*c, std::move(req), o, std::move(onLine), std::move(onDone), stop);
  };
  return lw;
}

void logReflectorStarted(const std::string& type, Clock::Duration resync, const std::string& reflector) {
  KLOG_V(3, "\"Starting reflector\" type=" + log::quote(type) + " resyncPeriod=" +
                log::quote(goDuration(std::chrono::duration_cast<std::chrono::nanoseconds>(resync))) +
                " reflector=" + log::quote(reflector));
}

void logListing(const std::string& type, const std::string& reflector) {
  KLOG_V(3, "\"Listing and watching\" type=" + log::quote(type) + " reflector=" + log::quote(reflector));
}

void logCachesPopulated(const std::string& type, const std::string& reflector) {
  KLOG_V(2, "\"Caches populated\" type=" + log::quote(type) + " reflector=" + log::quote(reflector));
}

void logListFailed(const std::string& type, const std::string& reflector, const Status& s) {
  // client-go hands list errors to HandleError: logged by the "UnhandledError" logger.
  KLOG_ERROR("\"Failed to watch\" err=" + log::quote("failed to list " + type + ": " + s.message()) +
             " logger=\"UnhandledError\" reflector=" + log::quote(reflector) + " type=" + log::quote(type));
}

void logWatchClosed(const std::string& type, const std::string& reflector, uint64_t items) {
  KLOG_V(4, "\"Watch close\" reflector=" + log::quote(reflector) + " type=" + log::quote(type) +
                " totalItems=" + std::to_string(items));
}

void logWatchEndedWithError(const std::string& type, const std::string& reflector, const std::string& err) {
  KLOG_INFO("\"Warning: watch ended with error\" reflector=" + log::quote(reflector) + " type=" + log::quote(type) +
            " err=" + log::quote(err));
}

InformerMetrics::InformerMetrics(std::string name, std::string group, std::string version, std::string resource)
    : labels_{{"group", std::move(group)},
              {"name", std::move(name)},
              {"resource", std::move(resource)},
              {"version", std::move(version)}} {
  storeRv_ = &metrics::Registry::global().gauge(
      "informer_store_resource_version", "The 15 least significant digits of the resource version of the store.",
      labels_);
}

void InformerMetrics::started() {
  auto& reg = metrics::Registry::global();
  queued_.store(&reg.gauge("informer_queued_items", "Number of items currently queued in the FIFO.", labels_));
  static const std::vector<double> kBuckets = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  latency_.store(&reg.histogram("informer_processing_latency_seconds",
                                "Time taken to process events after popping from the queue.", kBuckets, labels_));
}

void InformerMetrics::setQueued(size_t n) {
  if (auto* g = queued_.load()) g->set(static_cast<double>(n));
}

void InformerMetrics::observeProcessing(Clock::Duration d) {
  if (auto* h = latency_.load()) h->observe(std::chrono::duration<double>(d).count());
}

void InformerMetrics::setStoreResourceVersion(const std::string& rv) {
  // client-go keeps the last 15 characters and parses them as a decimal integer; anything else is not recorded.
  std::string_view tail(rv);
  if (tail.empty()) return;
  if (tail.size() > 15) tail = tail.substr(tail.size() - 15);
  int64_t v = 0;
  for (char c : tail) {
    if (c < '0' || c > '9') return;
    v = v * 10 + (c - '0');
  }
  storeRv_->set(static_cast<double>(v));
}

}  // namespace kcm::informers
