#include "controllers/serviceaccount/serviceaccounts_controller.h"

#include "api/gen/core_v1_json.h"
#include "client/typed_client.h"

namespace kcm::controllers {

using api::core::v1::Namespace;
using api::core::v1::ServiceAccount;

namespace {
// The ServiceAccounts every namespace gets (upstream's DefaultServiceAccountsControllerOptions).
const char* kServiceAccountsToEnsure[] = {"default"};
}  // namespace

ServiceAccountsController::ServiceAccountsController(std::shared_ptr<client::RestClient> client,
                                                     informers::SharedInformer<ServiceAccount>& saInformer,
                                                     informers::SharedInformer<Namespace>& nsInformer)
    : client_(std::move(client)), sa_(saInformer), ns_(nsInformer),
      base_("serviceaccount", [this](const std::string& key) { return syncNamespace(key); }) {
  informers::EventHandler<ServiceAccount> saHandler;
  // A deleted ServiceAccount may be one we ensure: re-check its namespace.
  saHandler.onDelete = [this](const auto& sa, bool) { base_.enqueue(sa->metadata.namespace_); };
  registrations_.push_back(sa_.addEventHandler(saHandler));
  informers::EventHandler<Namespace> nsHandler;
  nsHandler.onAdd = [this](const auto& ns) { base_.enqueue(ns->metadata.name); };
  nsHandler.onUpdate = [this](const auto&, const auto& ns) { base_.enqueue(ns->metadata.name); };
  registrations_.push_back(ns_.addEventHandler(nsHandler));
}

void ServiceAccountsController::run(int workers, std::stop_token stop) {
  base_.start(workers, stop, {[this] { return sa_.hasSynced(); }, [this] { return ns_.hasSynced(); }});
}

runtime::SyncResult ServiceAccountsController::syncNamespace(const std::string& key) {
  auto ns = ns_.store().get(key);
  if (!ns) return runtime::SyncResult::ok();
  if (ns->status.phase != "Active") return runtime::SyncResult::ok();  // never create in a terminating namespace
  std::vector<std::string> failures;
  for (const char* name : kServiceAccountsToEnsure) {
    if (sa_.store().get(key, name)) continue;
    ServiceAccount sa;
    sa.metadata.name = name;
    sa.metadata.namespace_ = key;
    auto r = client::create(*client_, key, sa);
    if (!r.ok() && r.status().code() != StatusCode::kAlreadyExists) {
      // A namespace that started terminating meanwhile rejects creates: nothing to do.
      if (r.status().message().find("because it is being terminated") != std::string::npos) continue;
      failures.push_back(r.status().message());
    }
  }
  if (failures.empty()) return runtime::SyncResult::ok();
  std::string msg;
  for (const auto& f : failures) msg += (msg.empty() ? "" : ", ") + f;
  return runtime::SyncResult::error(Status(StatusCode::kInternal, msg));
}

}  // namespace kcm::controllers
