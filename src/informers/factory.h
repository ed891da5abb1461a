#pragma once
// SharedInformerFactory: one informer per resource type, shared by every controller (typed informers by C++
// type, metadata informers by GroupVersionResource). start() runs every informer not yet started on its own
// thread; waitForCacheSync() blocks until all started informers synced or stop. Thread-safe.
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>
#include <typeindex>
#include <vector>

#include "informers/shared_informer.h"

namespace kcm::informers {

class SharedInformerFactory {
 public:
  SharedInformerFactory(std::shared_ptr<client::RestClient> client, Clock::Duration defaultResync,
                        Clock& clock = RealClock::get())
      : client_(std::move(client)), resync_(defaultResync), clock_(clock) {}
  ~SharedInformerFactory() { shutdown(); }

  template <class T>
  SharedInformer<T>& forType() {
    std::lock_guard l(mu_);
    auto& slot = typed_[std::type_index(typeid(T))];
    if (!slot) {
      InformerOptions o;
      o.resyncPeriod = resync_;
      o.clock = &clock_;
      slot = std::make_unique<SharedInformer<T>>(typedListerWatcher<T>(client_), o);
    }
    return static_cast<SharedInformer<T>&>(*slot);
  }

  // Metadata-only objects of any resource (garbage collector, quota): far less memory than full objects.
  SharedInformer<api::meta::v1::PartialObjectMetadata>& forMetadata(const client::GroupVersionResource& gvr);
  // Full objects of a resource found at run time, as DynamicObject (namespace controller, CRDs).
  SharedInformer<api::meta::v1::PartialObjectMetadata>& forDynamic(const client::GroupVersionResource& gvr);

  void start(std::stop_token stop);
  bool waitForCacheSync(std::stop_token stop);
  void shutdown();

 private:
  SharedInformer<api::meta::v1::PartialObjectMetadata>& partialInformer(
      const std::string& key, const std::function<ListerWatcher<api::meta::v1::PartialObjectMetadata>()>& makeLw);

  std::shared_ptr<client::RestClient> client_;
  Clock::Duration resync_;
  Clock& clock_;
  std::mutex mu_;
  std::map<std::type_index, std::unique_ptr<InformerBase>> typed_;
  std::map<std::string, std::unique_ptr<InformerBase>> metadata_;
  std::map<InformerBase*, std::jthread> running_;
  std::stop_source stop_;
};

}  // namespace kcm::informers
