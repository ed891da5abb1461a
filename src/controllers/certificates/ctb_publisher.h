#pragma once
// kube-apiserver-serving-clustertrustbundle-publisher-controller (upstream
// pkg/controller/certificates/clustertrustbundlepublisher, gate ClusterTrustBundle, GA and on at the pin):
// publishes the kube-apiserver serving CA (--root-ca-file, else the kubeconfig's CA) as the certificates.k8s.io/v1
// ClusterTrustBundle "kubernetes.io:kube-apiserver-serving:<first 12 bytes of sha256(bundle), hex>" for signer
// kubernetes.io/kube-apiserver-serving, restores it when edited or deleted, and deletes the signer's other
// bundles. Its own informer, filtered on spec.signerName; one key, one worker; metrics
// clustertrustbundle_publisher_sync_total / _sync_duration_seconds by code.
#include <memory>
#include <string>
#include <vector>

#include "api/gen/certificates_v1.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::certificates {

class ClusterTrustBundlePublisher {
 public:
  ClusterTrustBundlePublisher(std::string signerName, std::string caBundle, std::shared_ptr<client::RestClient> client,
                              Clock& clock = RealClock::get());
  void run(std::stop_token stop);
  runtime::SyncResult syncClusterTrustBundle();
  informers::SharedInformer<api::certificates::v1::ClusterTrustBundle>& informer() { return informer_; }

 private:
  std::string signerName_, caBundle_;
  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<api::certificates::v1::ClusterTrustBundle> informer_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

// constructBundleName: "<signer with / as :>:<hex of the first 12 bytes of sha256(bundle)>".
std::string constructBundleName(const std::string& signerName, const std::string& bundle);

}  // namespace kcm::controllers::certificates
