#pragma once
// token-cleaner-controller (alias tokencleaner; upstream pkg/controller/bootstrap/tokencleaner.go): deletes
// bootstrap token Secrets in kube-system once their `expiration` has passed (UID precondition; NotFound and
// Conflict are fine), and comes back to a token that has not expired yet at its expiration. One worker.
#include <memory>
#include <string>

#include "api/gen/core_v1.h"
#include "base/clock.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::bootstrap {

class TokenCleaner {
 public:
  TokenCleaner(std::shared_ptr<client::RestClient> client, informers::SharedInformer<api::core::v1::Secret>& secrets,
               Clock& clock = RealClock::get(), std::string tokenSecretNamespace = "kube-system");
  void run(std::stop_token stop);
  runtime::SyncResult syncFunc(const std::string& key);

 private:
  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<api::core::v1::Secret>& secrets_;
  Clock& clock_;
  std::string tokenSecretNamespace_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::bootstrap
