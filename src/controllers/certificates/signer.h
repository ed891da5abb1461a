#pragma once
// certificatesigningrequest-signing-controller (alias csrsigning; upstream pkg/controller/certificates/signer): one
// CSRSigningController per built-in signer (kubernetes.io/kubelet-serving, kube-apiserver-client-kubelet,
// kube-apiserver-client, legacy-unknown), each with its CA files. An approved, not failed CSR for its signer is
// validated against the signer's rules (a violation adds Failed/SignerValidationFailure) and signed for
// min(spec.expirationSeconds (at least 10 min), --cluster-signing-duration), backdated 5 minutes.
#include <chrono>
#include <memory>
#include <string>

#include "client/rest_client.h"
#include "controllers/certificates/authority.h"
#include "controllers/certificates/certificate_controller.h"

namespace kcm::controllers::certificates {

class CSRSigningController {
 public:
  // controllerName e.g. "csrsigning-kubelet-serving"; the CA pair is read now (an error names the file).
  static Result<std::shared_ptr<CSRSigningController>> create(
      const std::string& controllerName, const std::string& signerName, std::shared_ptr<client::RestClient> client,
      informers::SharedInformer<api::certificates::v1::CertificateSigningRequest>& csrs, const std::string& caFile,
      const std::string& caKeyFile, std::chrono::seconds certTTL, Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop) { controller_->run(workers, stop); }
  runtime::SyncResult handle(api::certificates::v1::CertificateSigningRequest csr);
  // duration: the certificate lifetime for a request's spec.expirationSeconds.
  std::chrono::seconds duration(std::optional<int32_t> expirationSeconds) const;
  CertificateController& controller() { return *controller_; }

 private:
  CSRSigningController() = default;
  Status isRequestForSigner(const ParsedCSR& req, const std::vector<std::string>& usages, bool& recognized) const;
  std::string signerName_;
  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<CAProvider> ca_;
  std::chrono::seconds certTTL_{0};
  Clock* clock_ = nullptr;
  std::unique_ptr<CertificateController> controller_;
};

// The PEM "CERTIFICATE" block of a DER certificate.
std::string pemCertificate(const std::string& der);

}  // namespace kcm::controllers::certificates
