#pragma once
// SharedInformerFactory: one informer per resource type, shared by every controller (typed informers by C++
// type, metadata informers by GroupVersionResource). start() starts every informer not yet started (they run on
// the executor, the I/O loop and the timer: no thread each); waitForCacheSync() blocks until all started
// informers synced or stop. Thread-safe.
#include <cctype>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stop_token>
#include <thread>
#include <typeindex>
#include <vector>

#include "informers/shared_informer.h"

namespace kcm::informers {

class SharedInformerFactory {
 public:
  // metadataClient: for metadata-only and dynamic informers (upstream gives them a client of their own,
  // "metadata-informers", so the garbage collector's many monitors do not queue behind the typed informers'
  // rate limiter); null = `client`.
  SharedInformerFactory(std::shared_ptr<client::RestClient> client, Clock::Duration defaultResync,
                        Clock& clock = RealClock::get(), std::shared_ptr<client::RestClient> metadataClient = nullptr)
      : client_(std::move(client)), metadataClient_(metadataClient ? std::move(metadataClient) : client_),
        resync_(defaultResync), clock_(clock) {}
  ~SharedInformerFactory() {
    shutdown();
    decltype(typed_) typed;
    decltype(metadata_) metadata;
    {
      std::lock_guard l(mu_);
      typed.swap(typed_);
      metadata.swap(metadata_);
    }
    // Destroyed outside the lock: informers drain their handler strands, whose handlers may call back into us.
  }

  template <class T>
  SharedInformer<T>& forType() {
    std::lock_guard l(mu_);
    auto& slot = typed_[std::type_index(typeid(T))];
    if (!slot) {
      InformerOptions o;
      o.resyncPeriod = resync_;
      o.clock = &clock_;
      if (!informerName_.empty()) {
        std::string resource = api::ResourceTraits<T>::kKind;
        for (char& c : resource) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        o.metrics = std::make_shared<InformerMetrics>(informerName_, api::ResourceTraits<T>::kGroup,
                                                      api::ResourceTraits<T>::kVersion, resource + "s");
      }
      slot = std::make_unique<SharedInformer<T>>(typedListerWatcher<T>(client_), o);
    }
    if (observer_) observer_(*slot);
    return static_cast<SharedInformer<T>&>(*slot);
  }

  // Typed informers created from now on publish the informer_* metrics under this name (upstream's
  // informers.WithInformerName; kcm names its shared factory "kube-controller-manager"). Empty: none.
  void setInformerName(std::string name) {
    std::lock_guard l(mu_);
    informerName_ = std::move(name);
  }

  // Metadata-only objects of any resource (garbage collector, quota): far less memory than full objects.
  SharedInformer<api::meta::v1::PartialObjectMetadata>& forMetadata(const client::GroupVersionResource& gvr);
  // Full objects of a resource found at run time, as DynamicObject (namespace controller, CRDs).
  SharedInformer<api::meta::v1::PartialObjectMetadata>& forDynamic(const client::GroupVersionResource& gvr);

  // Called (under the factory's lock: keep it short) with every informer handed out from now on; the manager
  // uses it to learn which informers each controller's init asked for. Empty: none.
  void setAccessObserver(std::function<void(InformerBase&)> f) {
    std::lock_guard l(mu_);
    observer_ = std::move(f);
  }

  void start(std::stop_token stop);
  bool waitForCacheSync(std::stop_token stop);
  // Stops every informer and drains its handlers: afterwards no handler runs, so the controllers can go first.
  void shutdown();

 private:
  SharedInformer<api::meta::v1::PartialObjectMetadata>& partialInformer(
      const std::string& key, const std::function<ListerWatcher<api::meta::v1::PartialObjectMetadata>()>& makeLw);

  std::shared_ptr<client::RestClient> client_, metadataClient_;
  Clock::Duration resync_;
  Clock& clock_;
  std::mutex mu_;
  std::map<std::type_index, std::unique_ptr<InformerBase>> typed_;
  std::map<std::string, std::unique_ptr<InformerBase>> metadata_;
  std::set<InformerBase*> started_;
  std::function<void(InformerBase&)> observer_;
  std::string informerName_;
  std::stop_source stop_;
  std::unique_ptr<std::stop_callback<std::function<void()>>> stopLink_;
};

}  // namespace kcm::informers
