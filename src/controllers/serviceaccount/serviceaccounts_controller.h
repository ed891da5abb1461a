#pragma once
// serviceaccount-controller (upstream pkg/controller/serviceaccount/serviceaccounts_controller.go): ensures the
// `default` ServiceAccount exists in every active namespace, and re-creates it when deleted.
// Keys are namespace names. Workers: --concurrent-serviceaccount-syncs.
#include <memory>
#include <string>
#include <thread>

#include "api/gen/core_v1.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers {

class ServiceAccountsController {
 public:
  ServiceAccountsController(std::shared_ptr<client::RestClient> client,
                            informers::SharedInformer<api::core::v1::ServiceAccount>& saInformer,
                            informers::SharedInformer<api::core::v1::Namespace>& nsInformer);
  // Starts `workers` threads (non-blocking); they stop with `stop`.
  void run(int workers, std::stop_token stop);
  runtime::SyncResult syncNamespace(const std::string& key);

 private:
  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<api::core::v1::ServiceAccount>& sa_;
  informers::SharedInformer<api::core::v1::Namespace>& ns_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers
