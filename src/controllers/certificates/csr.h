#pragma once
// CertificateSigningRequest helpers shared by the certificates controllers (upstream
// pkg/controller/certificates/certificate_controller_utils.go and pkg/apis/certificates/helpers.go): approval
// conditions, the PKCS#10 request parsed into what the signer and approver look at, and the kubelet signers'
// request validation.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "api/gen/certificates_v1.h"
#include "base/status.h"

typedef struct X509_req_st X509_REQ;

namespace kcm::controllers::certificates {

using api::certificates::v1::CertificateSigningRequest;

inline constexpr const char* kKubeAPIServerClientSignerName = "kubernetes.io/kube-apiserver-client";
inline constexpr const char* kKubeAPIServerClientKubeletSignerName = "kubernetes.io/kube-apiserver-client-kubelet";
inline constexpr const char* kKubeletServingSignerName = "kubernetes.io/kubelet-serving";
inline constexpr const char* kLegacyUnknownSignerName = "kubernetes.io/legacy-unknown";

// GetCertApprovalCondition: whether an Approved / a Denied condition is present (any status).
struct Approval {
  bool approved = false, denied = false;
};
Approval getCertApprovalCondition(const api::certificates::v1::CertificateSigningRequestStatus& s);
// IsCertificateRequestApproved: Approved and not Denied.
bool isCertificateRequestApproved(const CertificateSigningRequest& csr);
// HasTrueCondition: a condition of that type with status True or empty.
bool hasTrueCondition(const CertificateSigningRequest& csr, const std::string& type);

// One subject attribute as it appears in the request (type as its dotted OID).
struct NameAttribute {
  std::string oid, value;
};

// x509.CertificateRequest: the subject as Go's pkix.Name fills it (repeated attributes kept in order; the last
// CN and serialNumber win), the subjectAltNames of the extensionRequest, and the request itself.
struct ParsedCSR {
  std::shared_ptr<X509_REQ> req;
  std::vector<std::string> country, organization, organizationalUnit, locality, province, streetAddress,
      postalCode;
  std::string commonName, serialNumber;
  std::vector<std::string> dnsNames, emailAddresses, uris;
  std::vector<std::string> ipAddresses;  // raw 4 or 16 bytes each
};

// ParseCSR: the first PEM block must be a "CERTIFICATE REQUEST" holding one PKCS#10 request.
Result<ParsedCSR> parseCSR(const std::string& pem);

// ValidateKubeletServingCSR / ValidateKubeletClientCSR: nullopt-like Status::Ok when the request fits the
// signer, else the reason (upstream's texts).
Status validateKubeletServingCSR(const ParsedCSR& req, const std::set<std::string>& usages);
Status validateKubeletClientCSR(const ParsedCSR& req, const std::set<std::string>& usages);

inline std::set<std::string> usagesToSet(const std::vector<std::string>& usages) {
  return {usages.begin(), usages.end()};
}

}  // namespace kcm::controllers::certificates
