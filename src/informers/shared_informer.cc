#include "informers/shared_informer.h"

#include <thread>

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

}  // namespace kcm::informers
