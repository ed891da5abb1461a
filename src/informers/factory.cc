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
  return static_cast<SharedInformer<api::meta::v1::PartialObjectMetadata>&>(*slot);
}

SharedInformer<api::meta::v1::PartialObjectMetadata>& SharedInformerFactory::forMetadata(
    const client::GroupVersionResource& gvr) {
  return partialInformer(gvr.toString(), [&] { return metadataListerWatcher(client_, gvr); });
}

SharedInformer<api::meta::v1::PartialObjectMetadata>& SharedInformerFactory::forDynamic(
    const client::GroupVersionResource& gvr) {
  return partialInformer("dynamic:" + gvr.toString(), [&] { return dynamicListerWatcher(client_, gvr); });
}

void SharedInformerFactory::start(std::stop_token stop) {
  std::lock_guard l(mu_);
  auto launch = [&](InformerBase* inf) {
    if (running_.count(inf)) return;
    running_.emplace(inf, std::jthread([inf, stop, own = stop_.get_token()](std::stop_token st) {
                       std::stop_source combined;
                       std::stop_callback a(stop, [&] { combined.request_stop(); });
                       std::stop_callback b(own, [&] { combined.request_stop(); });
                       std::stop_callback c(st, [&] { combined.request_stop(); });
                       inf->run(combined.get_token());
                     }));
  };
  for (auto& [k, inf] : typed_) launch(inf.get());
  for (auto& [k, inf] : metadata_) launch(inf.get());
}

bool SharedInformerFactory::waitForCacheSync(std::stop_token stop) {
  std::vector<InformerBase*> started;
  {
    std::lock_guard l(mu_);
    for (auto& [inf, t] : running_) started.push_back(inf);
  }
  for (auto* inf : started)
    if (!inf->waitForCacheSync(stop)) return false;
  return true;
}

void SharedInformerFactory::shutdown() {
  stop_.request_stop();
  std::map<InformerBase*, std::jthread> threads;
  {
    std::lock_guard l(mu_);
    threads.swap(running_);
  }
  threads.clear();  // joins
}

}  // namespace kcm::informers
