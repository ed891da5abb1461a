#pragma once
// namespace-controller (upstream pkg/controller/namespace): namespaces with a deletionTimestamp are queued (5 s
// after each add/update, resynced every --namespace-sync-period) and emptied by the NamespacedResourcesDeleter on
// --concurrent-namespace-syncs workers; content still terminating is looked at again after half its estimated
// time. Rate limits: per-namespace 5 ms..60 s backoff max'ed with 10 qps / 100 burst.
#include <memory>
#include <string>

#include "api/gen/core_v1.h"
#include "controllers/namespace/namespaced_resources_deleter.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers {

class NamespaceController {
 public:
  NamespaceController(std::unique_ptr<NamespacedResourcesDeleter> deleter,
                      informers::SharedInformer<api::core::v1::Namespace>& namespaces, Clock::Duration resyncPeriod);
  void run(int workers, std::stop_token stop);
  runtime::SyncResult syncNamespaceFromKey(const std::string& key);

 private:
  void enqueueNamespace(const api::core::v1::Namespace& ns);
  std::unique_ptr<NamespacedResourcesDeleter> deleter_;
  informers::SharedInformer<api::core::v1::Namespace>& namespaces_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers
