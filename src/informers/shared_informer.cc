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

bool InformerBase::waitForCacheSync(std::stop_token stop) const {
  while (!hasSynced() && !stop.stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return hasSynced();
}

ListerWatcher<api::meta::v1::PartialObjectMetadata> metadataListerWatcher(std::shared_ptr<client::RestClient> c,
                                                                          const client::GroupVersionResource& gvr,
                                                                          const std::string& ns) {
  using PM = api::meta::v1::PartialObjectMetadata;
  ListerWatcher<PM> lw;
  lw.description = gvr.toString() + " (metadata)";
  lw.list = [c, gvr, ns](const client::ListOptions& o) -> Result<ListPage<PM>> {
    auto page = client::listMetadataPage(*c, gvr, ns, o);
    if (!page.ok()) return page.status();
    return ListPage<PM>{std::move(page->items), page->metadata.resourceVersion, page->metadata.continue_};
  };
  lw.watch = [c, gvr, ns](const client::ListOptions& o, const std::function<bool(client::WatchEvent<PM>&)>& f,
                          std::stop_token stop) { return client::watchMetadata(*c, gvr, ns, o, f, stop); };
  return lw;
}

}  // namespace kcm::informers
