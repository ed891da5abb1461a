#include "controllers/certificates/signer.h"

#include <openssl/bio.h>
#include <openssl/pem.h>

#include "api/gen/certificates_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"

namespace kcm::controllers::certificates {

using api::certificates::v1::CertificateSigningRequest;

namespace {

Status validAPIServerClientUsages(const std::vector<std::string>& usages) {
  bool hasClientAuth = false;
  for (const auto& u : usages) {
    if (u == "digital signature" || u == "key encipherment") continue;
    if (u == "client auth") {
      hasClientAuth = true;
      continue;
    }
    return Status(StatusCode::kInvalidArgument, "invalid usage for client certificate: " + u);
  }
  if (!hasClientAuth) return Status(StatusCode::kInvalidArgument, "missing required usage for client certificate: client auth");
  return Status::Ok();
}

bool knownSigner(const std::string& s) {
  return s == kKubeletServingSignerName || s == kKubeAPIServerClientKubeletSignerName ||
         s == kKubeAPIServerClientSignerName || s == kLegacyUnknownSignerName;
}

}  // namespace

std::string pemCertificate(const std::string& der) {
  std::unique_ptr<BIO, decltype(&BIO_free)> b(BIO_new(BIO_s_mem()), BIO_free);
  PEM_write_bio(b.get(), "CERTIFICATE", "", reinterpret_cast<const unsigned char*>(der.data()),
                static_cast<long>(der.size()));
  char* p = nullptr;
  long n = BIO_get_mem_data(b.get(), &p);
  return std::string(p, static_cast<size_t>(n));
}

Result<std::shared_ptr<CSRSigningController>> CSRSigningController::create(
    const std::string& controllerName, const std::string& signerName, std::shared_ptr<client::RestClient> client,
    informers::SharedInformer<CertificateSigningRequest>& csrs, const std::string& caFile,
    const std::string& caKeyFile, std::chrono::seconds certTTL, Clock& clock) {
  if (!knownSigner(signerName))
    return Status(StatusCode::kInvalidArgument, "unrecognized signerName: \"" + signerName + "\"");
  auto ca = CAProvider::create(caFile, caKeyFile);
  if (!ca.ok()) return ca.status();
  std::shared_ptr<CSRSigningController> c(new CSRSigningController());
  c->signerName_ = signerName;
  c->client_ = std::move(client);
  c->ca_ = *ca;
  c->certTTL_ = certTTL;
  c->clock_ = &clock;
  CSRSigningController* self = c.get();
  c->controller_ = std::make_unique<CertificateController>(
      controllerName, csrs, [self](CertificateSigningRequest csr) { return self->handle(std::move(csr)); }, clock);
  return c;
}

std::chrono::seconds CSRSigningController::duration(std::optional<int32_t> expirationSeconds) const {
  if (!expirationSeconds) return certTTL_;
  constexpr std::chrono::seconds kMin = std::chrono::minutes(10);
  const std::chrono::seconds requested(*expirationSeconds);
  if (requested > certTTL_) return certTTL_;
  if (requested < kMin) return kMin;
  return requested;
}

// getCSRVerificationFuncForSignerName: recognized when the request names this signer; an error when it breaks the
// signer's rules.
Status CSRSigningController::isRequestForSigner(const ParsedCSR& req, const std::vector<std::string>& usages,
                                                bool& recognized) const {
  recognized = true;
  if (signerName_ == kKubeletServingSignerName) return validateKubeletServingCSR(req, usagesToSet(usages));
  if (signerName_ == kKubeAPIServerClientKubeletSignerName) return validateKubeletClientCSR(req, usagesToSet(usages));
  if (signerName_ == kKubeAPIServerClientSignerName) return validAPIServerClientUsages(usages);
  return Status::Ok();  // legacy-unknown takes anything
}

runtime::SyncResult CSRSigningController::handle(CertificateSigningRequest csr) {
  if (!isCertificateRequestApproved(csr) || hasTrueCondition(csr, "Failed")) return runtime::SyncResult::ok();
  if (csr.spec.signerName != signerName_) return runtime::SyncResult::ok();
  auto req = parseCSR(csr.spec.request);
  if (!req.ok())
    return runtime::SyncResult::error(Status(StatusCode::kInvalidArgument, "unable to parse csr \"" + csr.metadata.name +
                                                                               "\": " + req.status().message()));
  bool recognized = false;
  if (Status v = isRequestForSigner(*req, api::toStdStrings(csr.spec.usages), recognized); !v.ok()) {
    auto& c = csr.status.conditions.emplace_back();
    c.type = "Failed";
    c.status = "True";
    c.reason = "SignerValidationFailure";
    c.message = v.message();
    c.lastUpdateTime = api::Time::fromUnix(
        std::chrono::duration_cast<std::chrono::seconds>(clock_->wallNow().time_since_epoch()).count());
    auto r = client::updateStatus(*client_, csr);
    if (!r.ok())
      return runtime::SyncResult::error(
          Status(r.status().code(), "error adding failure condition for csr: " + r.status().message()));
    return runtime::SyncResult::ok();
  }
  if (!recognized) return runtime::SyncResult::ok();
  auto ca = ca_->currentCA();
  if (!ca.ok()) return runtime::SyncResult::error(Status(ca.status().code(), "error auto signing csr: " + ca.status().message()));
  PermissiveSigningPolicy policy;
  policy.ttl = duration(csr.spec.expirationSeconds);
  policy.usages = api::toStdStrings(csr.spec.usages);
  policy.backdate = std::chrono::minutes(5);  // below the shortest TTL a request may ask for (10 min)
  policy.shortTTL = std::chrono::hours(8);    // 5 minutes of backdating is about 1% of 8 hours
  policy.now = clock_->wallNow();
  auto der = (*ca)->sign(*req, policy);
  if (!der.ok())
    return runtime::SyncResult::error(Status(der.status().code(), "error auto signing csr: " + der.status().message()));
  csr.status.certificate = pemCertificate(*der);
  auto r = client::updateStatus(*client_, csr);
  if (!r.ok())
    return runtime::SyncResult::error(Status(r.status().code(), "error updating signature for csr: " + r.status().message()));
  return runtime::SyncResult::ok();
}

}  // namespace kcm::controllers::certificates
