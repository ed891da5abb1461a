#include "informers/factory.h"

namespace kcm::informers {

SharedInformer<api::meta::v1::PartialObjectMetadata>& SharedInformerFactory::partialInformer(
    const std::string& key, const std::function<ListerWatcher<api::meta::v1::PartialObjectMetadata>()>& makeLw) {
  std::lock_guard l(mu_);
  auto& slot = metadata_[key];
  if (!slot) {
    InformerOptions o;
    o.resyncPeriod = resync_;
    o.clock = &clock_;
    slot = std::make_unique<SharedInformer<api::meta::v1::PartialObjectMetadata>>(makeLw(), o);
  }
  if (observer_) observer_(*slot);
  return static_cast<SharedInformer<api::meta::v1::PartialObjectMetadata>&>(*slot);
}

SharedInformer<api::meta::v1::PartialObjectMetadata>& SharedInformerFactory::forMetadata(
    const client::GroupVersionResource& gvr) {
  return partialInformer(gvr.toString(), [&] { return metadataListerWatcher(metadataClient_, gvr); });
}

SharedInformer<api::meta::v1::PartialObjectMetadata>& SharedInformerFactory::forDynamic(
    const client::GroupVersionResource& gvr) {
  return partialInformer("dynamic:" + gvr.toString(), [&] { return dynamicListerWatcher(metadataClient_, gvr); });
}

void SharedInformerFactory::start(std::stop_token stop) {
  std::lock_guard l(mu_);
  // Stops with the caller's token or at shutdown(); an informer has no thread, so starting is cheap.
  if (!stopLink_) stopLink_ = std::make_unique<std::stop_callback<std::function<void()>>>(
      stop, std::function<void()>([this] { stop_.request_stop(); }));
  auto launch = [&](InformerBase* inf) {
    if (!started_.insert(inf).second) return;
    inf->start(stop_.get_token());
  };
  for (auto& [k, inf] : typed_) launch(inf.get());
  for (auto& [k, inf] : metadata_) launch(inf.get());
}

bool SharedInformerFactory::waitForCacheSync(std::stop_token stop) {
  std::vector<InformerBase*> started;
  {
    std::lock_guard l(mu_);
    started.assign(started_.begin(), started_.end());
  }
  for (auto* inf : started)
    if (!inf->waitForCacheSync(stop)) return false;
  return true;
}

void SharedInformerFactory::shutdown() {
  stop_.request_stop();
  std::vector<InformerBase*> all;
  {
    std::lock_guard l(mu_);
    stopLink_.reset();
    for (auto& [k, inf] : typed_) all.push_back(inf.get());
    for (auto& [k, inf] : metadata_) all.push_back(inf.get());
  }
  // Outside the lock: a handler being waited for may call back into the factory.
  for (auto* inf : all) inf->stopAndDrain();
}

}  // namespace kcm::informers
