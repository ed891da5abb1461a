#include "controllers/validatingadmissionpolicystatus/controller.h"

#include <nlohmann/json.hpp>

#include "api/gen/admissionregistration_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"

namespace kcm::controllers::validatingadmissionpolicystatus {

Controller::Controller(std::shared_ptr<client::RestClient> client,
                       informers::SharedInformer<ValidatingAdmissionPolicy>& policies,
                       std::shared_ptr<TypeChecker> typeChecker, Clock& clock)
    : client_(std::move(client)), policies_(policies), typeChecker_(std::move(typeChecker)),
      queue_(kControllerName, [this](const std::string& k) { return sync(k); }, clock) {
  informers::EventHandler<ValidatingAdmissionPolicy> h;
  h.onAdd = [this](const auto& p) { queue_.enqueue(p->metadata.name); };
  h.onUpdate = [this](const auto&, const auto& p) { queue_.enqueue(p->metadata.name); };
  registrations_.push_back(policies_.addEventHandler(h));
}

void Controller::run(int workers, std::stop_token stop) {
  queue_.start(workers, stop, {[this] { return policies_.hasSynced(); }});
}

runtime::SyncResult Controller::sync(const std::string& key) {
  auto policy = policies_.store().get(key);
  if (!policy) return runtime::SyncResult::ok();  // being deleted: nothing to do
  Status s = reconcile(*policy);
  return s.ok() ? runtime::SyncResult::ok() : runtime::SyncResult::error(s);
}

std::string Controller::statusApplyBody(const ValidatingAdmissionPolicy& policy,
                                        const std::vector<ExpressionWarning>& warnings) {
  nlohmann::ordered_json typeChecking = nlohmann::ordered_json::object();
  if (!warnings.empty()) {
    auto list = nlohmann::ordered_json::array();
    for (const auto& w : warnings) list.push_back({{"fieldRef", w.fieldRef}, {"warning", w.warning}});
    typeChecking["expressionWarnings"] = std::move(list);
  }
  nlohmann::ordered_json apply = {
      {"kind", "ValidatingAdmissionPolicy"},
      {"apiVersion", "admissionregistration.k8s.io/v1"},
      {"metadata", {{"name", policy.metadata.name}}},
      {"status", {{"observedGeneration", policy.metadata.generation}, {"typeChecking", std::move(typeChecking)}}}};
  return apply.dump();
}

Status Controller::reconcile(const ValidatingAdmissionPolicy& policy) {
  if (policy.metadata.generation <= policy.status.observedGeneration) return Status::Ok();
  const auto warnings = typeChecker_->Check(policy);
  client::WriteOptions w;
  w.fieldManager = kControllerName;
  w.force = true;
  return client::patch<ValidatingAdmissionPolicy>(*client_, "", policy.metadata.name, client::PatchType::kApply,
                                                  statusApplyBody(policy, warnings), "status", w)
      .status();
}

}  // namespace kcm::controllers::validatingadmissionpolicystatus
