#include "controllers/certificates/certificate_controller.h"

#include "base/log.h"
#include "runtime/workqueue.h"

namespace kcm::controllers::certificates {

using api::certificates::v1::CertificateSigningRequest;

namespace {

std::unique_ptr<runtime::ItemRateLimiter> certificateRateLimiter(Clock& clock) {
  std::vector<std::unique_ptr<runtime::ItemRateLimiter>> ls;
  ls.push_back(std::make_unique<runtime::ItemExponentialFailureRateLimiter>(std::chrono::milliseconds(200),
                                                                            std::chrono::seconds(1000)));
  ls.push_back(std::make_unique<runtime::BucketRateLimiter>(10, 100, clock));
  return std::make_unique<runtime::MaxOfRateLimiter>(std::move(ls));
}

}  // namespace

CertificateController::CertificateController(std::string name,
                                             informers::SharedInformer<CertificateSigningRequest>& csrs,
                                             Handler handler, Clock& clock)
    : name_(std::move(name)), csrs_(csrs), handler_(std::move(handler)),
      base_("certificate", [this](const std::string& key) { return syncFunc(key); }, clock, -1,
            certificateRateLimiter(clock)) {
  informers::EventHandler<CertificateSigningRequest> h;
  h.onAdd = [this](const auto& c) { base_.enqueueObject(*c); };
  h.onUpdate = [this](const auto&, const auto& c) { base_.enqueueObject(*c); };
  h.onDelete = [this](const auto& c, bool) { base_.enqueueObject(*c); };
  registrations_.push_back(csrs_.addEventHandler(h));
}

void CertificateController::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting certificate controller\" name=" + log::quote(name_));
  base_.start(workers, stop, {[this] { return csrs_.hasSynced(); }});
}

runtime::SyncResult CertificateController::syncFunc(const std::string& key) {
  auto csr = csrs_.store().get(key);
  if (!csr) {
    KLOG_V(3, "\"csr has been deleted\" csr=" + log::quote(key));
    return runtime::SyncResult::ok();
  }
  if (!csr->status.certificate.empty()) return runtime::SyncResult::ok();  // already signed
  return handler_(*csr);
}

}  // namespace kcm::controllers::certificates
