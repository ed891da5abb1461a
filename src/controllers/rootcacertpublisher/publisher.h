#pragma once
// root-ca-certificate-publisher-controller (upstream pkg/controller/certificates/rootcacertpublisher): keeps the
// ConfigMap `kube-root-ca.crt` (key `ca.crt`, annotation `kubernetes.io/description`) in every active namespace,
// re-creating it when deleted and restoring it when edited. Keys are namespace names; one worker.
#include <memory>
#include <string>
#include <thread>

#include "api/gen/core_v1.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers {

inline constexpr const char* kRootCACertConfigMapName = "kube-root-ca.crt";
inline constexpr const char* kDescriptionAnnotation = "kubernetes.io/description";
extern const char* const kRootCADescription;

class RootCACertPublisher {
 public:
  RootCACertPublisher(std::shared_ptr<client::RestClient> client, std::string rootCA,
                      informers::SharedInformer<api::core::v1::ConfigMap>& cmInformer,
                      informers::SharedInformer<api::core::v1::Namespace>& nsInformer);
  void run(int workers, std::stop_token stop);
  runtime::SyncResult syncNamespace(const std::string& ns);

 private:
  std::shared_ptr<client::RestClient> client_;
  std::string rootCA_;
  informers::SharedInformer<api::core::v1::ConfigMap>& cm_;
  informers::SharedInformer<api::core::v1::Namespace>& ns_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers
