#pragma once
// validatingadmissionpolicy-status-controller (upstream pkg/controller/validatingadmissionpolicystatus at the pin;
// on by default, no gate): every ValidatingAdmissionPolicy added or updated whose metadata.generation is ahead of
// status.observedGeneration is type-checked (typechecking.h) and its status applied, server-side, by field
// manager "validatingadmissionpolicy-status" with force: observedGeneration and typeChecking.expressionWarnings
// (typeChecking {} when there is nothing to warn about). Queue "validatingadmissionpolicy-status",
// --concurrent-validating-admission-policy-status-syncs workers; client validatingadmissionpolicy-status-controller.
#include <memory>
#include <string>
#include <vector>

#include "api/gen/admissionregistration_v1.h"
#include "client/rest_client.h"
#include "controllers/validatingadmissionpolicystatus/typechecking.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::validatingadmissionpolicystatus {

inline constexpr const char* kControllerName = "validatingadmissionpolicy-status";

class Controller {
 public:
  Controller(std::shared_ptr<client::RestClient> client, informers::SharedInformer<ValidatingAdmissionPolicy>& policies,
             std::shared_ptr<TypeChecker> typeChecker, Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  runtime::SyncResult sync(const std::string& key);
  // The status apply body reconcile sends for a policy and its warnings.
  static std::string statusApplyBody(const ValidatingAdmissionPolicy& policy,
                                     const std::vector<ExpressionWarning>& warnings);
  runtime::WorkQueue& queue() { return queue_.queue(); }

 private:
  Status reconcile(const ValidatingAdmissionPolicy& policy);

  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<ValidatingAdmissionPolicy>& policies_;
  std::shared_ptr<TypeChecker> typeChecker_;
  runtime::ControllerBase queue_;
  std::vector<informers::Registration> registrations_;
};

}  // namespace kcm::controllers::validatingadmissionpolicystatus
