#pragma once
// certificatesigningrequest-approving-controller (alias csrapproving; upstream
// pkg/controller/certificates/approver/sarapprove.go): approves kubelet client CSRs (signer
// kubernetes.io/kube-apiserver-client-kubelet, O=system:nodes, CN=system:node:<name>, client usages, no SANs) when
// a SubjectAccessReview allows the requester to create certificatesigningrequests/selfnodeclient (the requester is
// the node named in CN) or certificatesigningrequests/nodeclient. Approved condition reason AutoApproved, written
// through the approval subresource; a recognized but not allowed request is retried quietly.
#include <memory>
#include <string>
#include <vector>

#include "client/rest_client.h"
#include "controllers/certificates/certificate_controller.h"
#include "controllers/certificates/csr.h"

namespace kcm::controllers::certificates {

class CSRApprovingController {
 public:
  CSRApprovingController(std::shared_ptr<client::RestClient> client,
                         informers::SharedInformer<api::certificates::v1::CertificateSigningRequest>& csrs,
                         Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop) { controller_.run(workers, stop); }
  runtime::SyncResult handle(api::certificates::v1::CertificateSigningRequest csr);

 private:
  struct Recognizer {
    bool (*recognize)(const api::certificates::v1::CertificateSigningRequest&, const ParsedCSR&);
    std::string subresource;
    std::string successMessage;
  };
  Result<bool> authorize(const api::certificates::v1::CertificateSigningRequest& csr, const std::string& subresource);
  std::shared_ptr<client::RestClient> client_;
  std::vector<Recognizer> recognizers_;
  CertificateController controller_;
};

bool isNodeClientCert(const api::certificates::v1::CertificateSigningRequest& csr, const ParsedCSR& req);
bool isSelfNodeClientCert(const api::certificates::v1::CertificateSigningRequest& csr, const ParsedCSR& req);

}  // namespace kcm::controllers::certificates
