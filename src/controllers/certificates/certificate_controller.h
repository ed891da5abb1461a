#pragma once
// CertificateController (upstream pkg/controller/certificates/certificate_controller.go): the loop the CSR signers
// and the approver share. Every CSR event enqueues its name; a sync hands a copy of a CSR that has no certificate
// yet to the handler. Queue "certificate": per key 200 ms doubling to 1000 s, max'ed with 10 qps / 100 burst.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api/gen/certificates_v1.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::certificates {

class CertificateController {
 public:
  using Handler = std::function<runtime::SyncResult(api::certificates::v1::CertificateSigningRequest)>;
  CertificateController(std::string name, informers::SharedInformer<api::certificates::v1::CertificateSigningRequest>& csrs,
                        Handler handler, Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  runtime::SyncResult syncFunc(const std::string& key);
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  informers::SharedInformer<api::certificates::v1::CertificateSigningRequest>& csrs_;
  Handler handler_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::certificates
