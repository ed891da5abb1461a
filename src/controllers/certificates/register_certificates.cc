// Init functions of the certificates family and the legacy service-account token cleaner (upstream
// cmd/kube-controller-manager/app/certificates.go and core.go).
#include "controllers/certificates/register_certificates.h"

#include "api/gen/certificates_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "controllers/certificates/approver.h"
#include "controllers/certificates/cleaner.h"
#include "controllers/certificates/ctb_publisher.h"
#include "controllers/certificates/signer.h"
#include "controllers/context.h"
#include "controllers/controller.h"
#include "controllers/serviceaccount/legacy_serviceaccount_token_cleaner.h"

namespace kcm::controllers {
namespace {

using api::certificates::v1::CertificateSigningRequest;
using certificates::CSRSigningController;

struct SignerFiles {
  std::string cert, key;
  bool any() const { return !cert.empty() || !key.empty(); }
};

// The four signers, each built if it has files; one controller for the manager.
struct CSRSigners {
  std::vector<std::shared_ptr<CSRSigningController>> signers;
  void run(std::stop_token stop) {
    for (auto& s : signers) s->run(5, stop);
  }
};

Result<std::unique_ptr<Controller>> startCSRSigningController(ControllerContext& ctx) {
  const auto& certificatesigningrequestSigningController = ctx.options->certificatesigningrequestSigningController;
  const bool missingSingleSigningFile = certificatesigningrequestSigningController.clusterSigningCertFile.empty() || certificatesigningrequestSigningController.clusterSigningKeyFile.empty();
  const SignerFiles specific[] = {
      {certificatesigningrequestSigningController.clusterSigningKubeletServingCertFile, certificatesigningrequestSigningController.clusterSigningKubeletServingKeyFile},
      {certificatesigningrequestSigningController.clusterSigningKubeletClientCertFile, certificatesigningrequestSigningController.clusterSigningKubeletClientKeyFile},
      {certificatesigningrequestSigningController.clusterSigningKubeApiserverClientCertFile, certificatesigningrequestSigningController.clusterSigningKubeApiserverClientKeyFile},
      {certificatesigningrequestSigningController.clusterSigningLegacyUnknownCertFile, certificatesigningrequestSigningController.clusterSigningLegacyUnknownKeyFile},
  };
  bool anySpecificFilesSet = false;
  for (const auto& f : specific) anySpecificFilesSet = anySpecificFilesSet || f.any();
  if (missingSingleSigningFile && !anySpecificFilesSet)
    return Status(StatusCode::kCancelled, "no csr cert/key was specified");
  if (!missingSingleSigningFile && anySpecificFilesSet)
    return Status(StatusCode::kInvalidArgument, "cannot specify default and per controller certs at the same time");
  auto c = ctx.clientBuilder->client("certificate-controller");
  if (!c.ok()) return c.status();
  auto& csrs = ctx.informerFactory->forType<CertificateSigningRequest>();
  const auto ttl = std::chrono::duration_cast<std::chrono::seconds>(certificatesigningrequestSigningController.clusterSigningDuration);
  struct Signer {
    const char* controllerName;
    const char* signerName;
  };
  const Signer kinds[] = {
      {"csrsigning-kubelet-serving", certificates::kKubeletServingSignerName},
      {"csrsigning-kubelet-client", certificates::kKubeAPIServerClientKubeletSignerName},
      {"csrsigning-kube-apiserver-client", certificates::kKubeAPIServerClientSignerName},
      {"csrsigning-legacy-unknown", certificates::kLegacyUnknownSignerName},
  };
  auto signers = std::make_shared<CSRSigners>();
  for (int i = 0; i < 4; ++i) {
    SignerFiles f = anySpecificFilesSet ? specific[i] : SignerFiles{certificatesigningrequestSigningController.clusterSigningCertFile, certificatesigningrequestSigningController.clusterSigningKeyFile};
    if (!f.any()) {
      KLOG_INFO("\"Skipping CSR signer controller because specific files were specified for other signers and not "
                "this one\" controller=" + log::quote(kinds[i].signerName));
      continue;
    }
    auto s = CSRSigningController::create(kinds[i].controllerName, kinds[i].signerName, *c, csrs, f.cert, f.key, ttl);
    if (!s.ok())
      return Status(s.status().code(), std::string("failed to init ") + kinds[i].signerName +
                                           " certificate controller: " + s.status().message());
    signers->signers.push_back(*s);
  }
  return newControllerLoop(signers, [](auto& s, std::stop_token stop) { s.run(stop); });
}

Result<std::unique_ptr<Controller>> startCSRApprovingController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("certificate-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<certificates::CSRApprovingController>(
      *c, ctx.informerFactory->forType<CertificateSigningRequest>());
  return newControllerLoop(ctrl, [](auto& a, std::stop_token stop) { a.run(5, stop); });
}

Result<std::unique_ptr<Controller>> startCSRCleanerController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("certificate-controller");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<certificates::CSRCleanerController>(
      *c, ctx.informerFactory->forType<CertificateSigningRequest>());
  return newControllerLoop(ctrl, [](auto& a, std::stop_token stop) { a.run(stop); });
}

Result<std::unique_ptr<Controller>> startPodCertificateRequestCleanerController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("podcertificaterequestcleaner");
  if (!c.ok()) return c.status();
  auto ctrl = std::make_shared<certificates::PCRCleanerController>(
      *c, ctx.informerFactory->forType<api::certificates::v1::PodCertificateRequest>());
  return newControllerLoop(ctrl, [](auto& a, std::stop_token stop) { a.run(stop); });
}

Result<std::unique_ptr<Controller>> startLegacySATokenCleaner(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("legacy-service-account-token-cleaner");
  if (!c.ok()) return c.status();
  const auto period = std::chrono::duration_cast<std::chrono::seconds>(
      ctx.options->legacyServiceaccountTokenCleanerController.legacyServiceAccountTokenCleanUpPeriod);
  if (period.count() <= 0)
    return Status(StatusCode::kInvalidArgument, "failed to init the legacy service account token cleaner: invalid "
                                                "CleanUpPeriod: " + std::to_string(period.count()) + "s");
  auto ctrl = std::make_shared<LegacySATokenCleaner>(
      *c, ctx.informerFactory->forType<api::core::v1::ServiceAccount>(),
      ctx.informerFactory->forType<api::core::v1::Secret>(), ctx.informerFactory->forType<api::core::v1::Pod>(),
      period);
  return newControllerLoop(ctrl, [](auto& a, std::stop_token stop) { a.run(stop); });
}

}  // namespace

void registerCertificatesInitFuncs(const std::function<void(const std::string&, InitFunc)>& setInit,
                                   const std::function<Result<std::string>(const ControllerContext&)>& rootCA) {
  setInit("certificatesigningrequest-signing-controller", startCSRSigningController);
  setInit("certificatesigningrequest-approving-controller", startCSRApprovingController);
  setInit("certificatesigningrequest-cleaner-controller", startCSRCleanerController);
  setInit("podcertificaterequest-cleaner-controller", startPodCertificateRequestCleanerController);
  setInit("legacy-serviceaccount-token-cleaner-controller", startLegacySATokenCleaner);
  setInit("kube-apiserver-serving-clustertrustbundle-publisher-controller",
          [rootCA](ControllerContext& ctx) -> Result<std::unique_ptr<Controller>> {
            auto ca = rootCA(ctx);
            if (!ca.ok()) return ca.status();
            if (ca->empty()) return Status(StatusCode::kCancelled, "no kube-apiserver CA is known");
            auto c = ctx.clientBuilder->client("kube-apiserver-serving-clustertrustbundle-publisher");
            if (!c.ok()) return c.status();
            // Discovery: only certificates.k8s.io/v1 is known to this build (GA at the pin).
            auto res = ctx.discovery->serverResources();
            if (!res.ok())
              return Status(res.status().code(), "discovery failed for ClusterTrustBundle: " + res.status().message());
            bool served = false;
            for (const auto& r : *res)
              served = served || (r.groupVersion() == "certificates.k8s.io/v1" && r.resource == "clustertrustbundles");
            if (!served) {
              KLOG_INFO("\"no known scheme version was found for clustertrustbundles, cannot start "
                        "kube-apiserver-serving-clustertrustbundle-publisher-controller\"");
              return Status(StatusCode::kCancelled, "clustertrustbundles are not served");
            }
            auto ctrl = std::make_shared<certificates::ClusterTrustBundlePublisher>(
                "kubernetes.io/kube-apiserver-serving", *ca, *c);
            return newControllerLoop(ctrl, [](auto& p, std::stop_token stop) { p.run(stop); });
          });
}

}  // namespace kcm::controllers
