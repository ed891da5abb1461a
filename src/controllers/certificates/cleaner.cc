#include "controllers/certificates/cleaner.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <ctime>

#include "api/gen/certificates_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"

namespace kcm::controllers::certificates {

using api::certificates::v1::CertificateSigningRequest;
using api::certificates::v1::PodCertificateRequest;
using SysClock = std::chrono::system_clock;

std::optional<SysClock::time_point> certificateNotAfter(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> b(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  X509* x = PEM_read_bio_X509(b.get(), nullptr, nullptr, nullptr);
  if (!x) {
    ERR_clear_error();
    return std::nullopt;
  }
  std::tm tm{};
  bool ok = ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) == 1;
  X509_free(x);
  if (!ok) return std::nullopt;
  return SysClock::from_time_t(timegm(&tm));
}

CSRCleanerController::CSRCleanerController(std::shared_ptr<client::RestClient> client,
                                           informers::SharedInformer<CertificateSigningRequest>& csrs, Clock& clock)
    : client_(std::move(client)), csrs_(csrs), clock_(clock) {}

void CSRCleanerController::run(std::stop_token stop) {
  KLOG_INFO("\"Starting CSR cleaner controller\"");
  periodic_.start(clock_, kPollingInterval, stop, [this] { worker(); }, [this] { return csrs_.hasSynced(); });
}

void CSRCleanerController::worker() {
  for (const auto& csr : csrs_.store().list()) {
    if (!shouldDelete(*csr)) continue;
    Status st = client::remove<CertificateSigningRequest>(*client_, "", csr->metadata.name);
    if (!st.ok())
      KLOG_ERROR("\"Error while attempting to clean CSR\" err=" +
                 log::quote("unable to delete CSR \"" + csr->metadata.name + "\": " + st.message()) +
                 " csr=" + log::quote(csr->metadata.name));
  }
}

bool CSRCleanerController::shouldDelete(const CertificateSigningRequest& csr) const {
  const SysClock::time_point now = clock_.wallNow();
  auto olderThan = [&](const api::Time& t, std::chrono::hours d) {
    return !t.isZero() && now - SysClock::from_time_t(t.unixSeconds) > d;
  };
  const std::string& name = csr.metadata.name;
  const bool issued = !csr.status.certificate.empty();
  const auto& conds = csr.status.conditions;
  auto say = [&](const std::string& msg, const char* key = nullptr, std::chrono::hours d = {}) {
    std::string line = "\"" + msg + "\" csr=" + log::quote(name);
    if (key) line += std::string(" ") + key + "=\"" + std::to_string(d.count()) + "h0m0s\"";
    KLOG_INFO(line);
    return true;
  };
  // In upstream's order: issued past deadline, denied, failed, pending, issued and expired, approved unissued.
  if (issued)
    for (const auto& c : conds)
      if (c.type == "Approved" && olderThan(c.lastUpdateTime, kApprovedExpiration))
        return say("Cleaning CSR as it is more than approvedExpiration duration old and approved.", "approvedExpiration",
                   kApprovedExpiration);
  for (const auto& c : conds)
    if (c.type == "Denied" && olderThan(c.lastUpdateTime, kDeniedExpiration))
      return say("Cleaning CSR as it is more than deniedExpiration duration old and denied.", "deniedExpiration",
                 kDeniedExpiration);
  for (const auto& c : conds)
    if (c.type == "Failed" && olderThan(c.lastUpdateTime, kDeniedExpiration))
      return say("Cleaning CSR as it is more than deniedExpiration duration old and failed.", "deniedExpiration",
                 kDeniedExpiration);
  if (conds.empty() && olderThan(csr.metadata.creationTimestamp, kPendingExpiration))
    return say("Cleaning CSR as it is more than pendingExpiration duration old and unhandled.", "pendingExpiration",
               kPendingExpiration);
  if (issued)
    for (const auto& c : conds)
      if (c.type == "Approved") {
        auto notAfter = certificateNotAfter(csr.status.certificate);
        if (notAfter && now > *notAfter) return say("Cleaning CSR as the associated certificate is expired.");
      }
  if (!issued)
    for (const auto& c : conds)
      if (c.type == "Approved" && olderThan(c.lastUpdateTime, kPendingExpiration))
        return say("Cleaning CSR as it is approved but unissued for more than pendingExpiration duration.",
                   "pendingExpiration", kPendingExpiration);
  return false;
}

PCRCleanerController::PCRCleanerController(std::shared_ptr<client::RestClient> client,
                                           informers::SharedInformer<PodCertificateRequest>& pcrs, Clock& clock,
                                           Clock::Duration threshold, Clock::Duration pollingInterval)
    : client_(std::move(client)), pcrs_(pcrs), clock_(clock), threshold_(threshold), pollingInterval_(pollingInterval) {}

void PCRCleanerController::run(std::stop_token stop) {
  KLOG_INFO("\"Starting PodCertificateRequest cleaner controller\"");
  periodic_.start(clock_, pollingInterval_, stop, [this] { worker(); }, [this] { return pcrs_.hasSynced(); });
}

void PCRCleanerController::worker() {
  const SysClock::time_point now = clock_.wallNow();
  for (const auto& pcr : pcrs_.store().list()) {
    const auto& md = pcr->metadata;
    if (md.creationTimestamp.isZero()) continue;
    if (now < SysClock::from_time_t(md.creationTimestamp.unixSeconds) + threshold_) continue;
    client::DeleteOptions o;
    o.preconditionUID = md.uid;
    Status st = client::remove<PodCertificateRequest>(*client_, md.namespace_, md.name, o);
    if (!st.ok() && st.code() != StatusCode::kNotFound)
      KLOG_ERROR("\"Error while attempting to clean PodCertificateRequest\" err=" +
                 log::quote("unable to delete PodCertificateRequest \"" + md.namespace_ + "/" + md.name + "\": " +
                            st.message()) +
                 " pcr=" + log::quote(md.namespace_ + "/" + md.name));
  }
}

}  // namespace kcm::controllers::certificates
