#pragma once
// bootstrap-signer-controller (alias bootstrapsigner; upstream pkg/controller/bootstrap/bootstrapsigner.go): keeps
// the kube-public/cluster-info ConfigMap signed by every bootstrap token that may sign (usage-bootstrap-signing,
// not expired): one `jws-kubeconfig-<token-id>` key per token holding the detached JWS (HS256) of its `kubeconfig`,
// and no signature of a token that is gone. Any change of the ConfigMap or of a token Secret in kube-system queues
// the one key; one worker; a failed update is logged, not retried (the next event brings it back), as upstream.
#include <memory>
#include <string>

#include "api/gen/core_v1.h"
#include "base/clock.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::bootstrap {

struct SignerOptions {
  std::string configMapNamespace = "kube-public";
  std::string configMapName = "cluster-info";
  std::string tokenSecretNamespace = "kube-system";
};

class Signer {
 public:
  Signer(std::shared_ptr<client::RestClient> client, informers::SharedInformer<api::core::v1::Secret>& secrets,
         informers::SharedInformer<api::core::v1::ConfigMap>& configMaps, SignerOptions options = {},
         Clock& clock = RealClock::get());
  void run(std::stop_token stop);
  // signConfigMap: the whole sync (there is one key).
  runtime::SyncResult signConfigMap();

 private:
  std::map<std::string, std::string> getTokens() const;

  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<api::core::v1::Secret>& secrets_;
  informers::SharedInformer<api::core::v1::ConfigMap>& configMaps_;
  SignerOptions options_;
  Clock& clock_;
  std::string configMapKey_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::bootstrap
