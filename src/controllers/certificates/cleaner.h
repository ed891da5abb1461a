#pragma once
// certificatesigningrequest-cleaner-controller (alias csrcleaner; upstream
// pkg/controller/certificates/cleaner/cleaner.go): every hour deletes CSRs that are issued and approved over 1 h
// ago, denied or failed over 1 h ago, pending (no condition) over 24 h, approved but unissued over 24 h, or whose
// certificate has expired. podcertificaterequest-cleaner-controller (pcrcleaner.go): every 5 minutes deletes
// PodCertificateRequests created over 15 minutes ago (UID precondition).
// Upstream starts both polls without waiting for the informer, so their first pass usually sees an empty cache;
// here the first pass waits for the cache (docs/differential.md).
#include <chrono>
#include <memory>

#include "api/gen/certificates_v1.h"
#include "base/clock.h"
#include "base/executor.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"

namespace kcm::controllers::certificates {

class CSRCleanerController {
 public:
  static constexpr std::chrono::hours kPollingInterval{1};
  static constexpr std::chrono::hours kApprovedExpiration{1};
  static constexpr std::chrono::hours kDeniedExpiration{1};
  static constexpr std::chrono::hours kPendingExpiration{24};

  CSRCleanerController(std::shared_ptr<client::RestClient> client,
                       informers::SharedInformer<api::certificates::v1::CertificateSigningRequest>& csrs,
                       Clock& clock = RealClock::get());
  void run(std::stop_token stop);
  void worker();  // one pass over every CSR
  // Whether `csr` is due for deletion now (and which rule said so, logged).
  bool shouldDelete(const api::certificates::v1::CertificateSigningRequest& csr) const;

 private:
  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<api::certificates::v1::CertificateSigningRequest>& csrs_;
  Clock& clock_;
  Periodic periodic_;  // last: stopped before the rest goes
};

class PCRCleanerController {
 public:
  PCRCleanerController(std::shared_ptr<client::RestClient> client,
                       informers::SharedInformer<api::certificates::v1::PodCertificateRequest>& pcrs,
                       Clock& clock = RealClock::get(), Clock::Duration threshold = std::chrono::minutes(15),
                       Clock::Duration pollingInterval = std::chrono::minutes(5));
  void run(std::stop_token stop);
  void worker();

 private:
  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<api::certificates::v1::PodCertificateRequest>& pcrs_;
  Clock& clock_;
  Clock::Duration threshold_, pollingInterval_;
  Periodic periodic_;
};

// The NotAfter of the first certificate of a PEM bundle; nullopt when there is none.
std::optional<std::chrono::system_clock::time_point> certificateNotAfter(const std::string& pem);

}  // namespace kcm::controllers::certificates
