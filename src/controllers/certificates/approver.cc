#include "controllers/certificates/approver.h"

#include "api/gen/authorization_v1_json.h"
#include "api/gen/certificates_v1_json.h"
#include "client/typed_client.h"

namespace kcm::controllers::certificates {

using api::certificates::v1::CertificateSigningRequest;

bool isNodeClientCert(const CertificateSigningRequest& csr, const ParsedCSR& req) {
  if (csr.spec.signerName != kKubeAPIServerClientKubeletSignerName) return false;
  return validateKubeletClientCSR(req, usagesToSet(api::toStdStrings(csr.spec.usages))).ok();
}

bool isSelfNodeClientCert(const CertificateSigningRequest& csr, const ParsedCSR& req) {
  if (csr.spec.username != req.commonName) return false;
  return isNodeClientCert(csr, req);
}

CSRApprovingController::CSRApprovingController(std::shared_ptr<client::RestClient> client,
                                               informers::SharedInformer<CertificateSigningRequest>& csrs, Clock& clock)
    : client_(std::move(client)),
      recognizers_{
          {isSelfNodeClientCert, "selfnodeclient", "Auto approving self kubelet client certificate after SubjectAccessReview."},
          {isNodeClientCert, "nodeclient", "Auto approving kubelet client certificate after SubjectAccessReview."},
      },
      controller_("csrapproving", csrs, [this](CertificateSigningRequest csr) { return handle(std::move(csr)); },
                  clock) {}

Result<bool> CSRApprovingController::authorize(const CertificateSigningRequest& csr, const std::string& subresource) {
  api::authorization::v1::SubjectAccessReview sar;
  sar.apiVersion = "authorization.k8s.io/v1";
  sar.kind = "SubjectAccessReview";
  sar.spec.user = csr.spec.username;
  sar.spec.uid = csr.spec.uid;
  sar.spec.groups = csr.spec.groups;
  sar.spec.extra = csr.spec.extra;
  auto& ra = sar.spec.resourceAttributes.emplace();
  ra.group = "certificates.k8s.io";
  ra.resource = "certificatesigningrequests";
  ra.verb = "create";
  ra.subresource = subresource;
  ra.version = "*";
  auto r = client::create(*client_, "", sar);
  if (!r.ok()) return r.status();
  return r->status.allowed;
}

runtime::SyncResult CSRApprovingController::handle(CertificateSigningRequest csr) {
  if (!csr.status.certificate.empty()) return runtime::SyncResult::ok();
  Approval a = getCertApprovalCondition(csr.status);
  if (a.approved || a.denied) return runtime::SyncResult::ok();
  auto req = parseCSR(csr.spec.request);
  if (!req.ok())
    return runtime::SyncResult::error(Status(StatusCode::kInvalidArgument, "unable to parse csr \"" + csr.metadata.name +
                                                                               "\": " + req.status().message()));
  std::vector<std::string> tried;
  for (const auto& r : recognizers_) {
    if (!r.recognize(csr, *req)) continue;
    tried.push_back(r.subresource);
    auto approved = authorize(csr, r.subresource);
    if (!approved.ok()) return runtime::SyncResult::error(approved.status());
    if (!*approved) continue;
    auto& c = csr.status.conditions.emplace_back();
    c.type = "Approved";
    c.status = "True";
    c.reason = "AutoApproved";
    c.message = r.successMessage;
    auto u = client::sendObject(*client_, "PUT", client::pathFor<CertificateSigningRequest>("", csr.metadata.name, "approval"),
                                csr, {});
    if (!u.ok())
      return runtime::SyncResult::error(Status(u.status().code(), "error updating approval for csr: " + u.status().message()));
    return runtime::SyncResult::ok();
  }
  if (!tried.empty()) {
    std::string list = "[";
    for (const auto& t : tried) list += (list.size() > 1 ? " " : "") + t;
    return runtime::SyncResult::ignorable(Status(StatusCode::kForbidden,
                                                 "recognized csr \"" + csr.metadata.name + "\" as " + list +
                                                     "] but subject access review was not approved"));
  }
  return runtime::SyncResult::ok();
}

}  // namespace kcm::controllers::certificates
