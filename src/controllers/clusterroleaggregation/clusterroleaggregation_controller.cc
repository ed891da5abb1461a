#include "controllers/clusterroleaggregation/clusterroleaggregation_controller.h"

#include <algorithm>

#include "api/gen/rbac_v1_codec.h"
#include "api/gen/rbac_v1_json.h"
#include "api/support/labels.h"
#include "client/typed_client.h"

namespace kcm::controllers {

using api::rbac::v1::ClusterRole;
using api::rbac::v1::PolicyRule;

ClusterRoleAggregationController::ClusterRoleAggregationController(
    std::shared_ptr<client::RestClient> client, informers::SharedInformer<ClusterRole>& roles)
    : client_(std::move(client)), roles_(roles),
      base_("ClusterRoleAggregator", [this](const std::string& key) { return syncClusterRole(key); }) {
  informers::EventHandler<ClusterRole> h;
  h.onAdd = [this](const auto&) { enqueueAggregated(); };
  h.onUpdate = [this](const auto&, const auto&) { enqueueAggregated(); };
  h.onDelete = [this](const auto&, bool) { enqueueAggregated(); };
  registrations_.push_back(roles_.addEventHandler(h));
}

void ClusterRoleAggregationController::enqueueAggregated() {
  for (const auto& r : roles_.store().list())
    if (r->aggregationRule) base_.enqueue(r->metadata.name);
}

void ClusterRoleAggregationController::run(int workers, std::stop_token stop) {
  base_.start(workers, stop, {[this] { return roles_.hasSynced(); }});
}

runtime::SyncResult ClusterRoleAggregationController::syncClusterRole(const std::string& name) {
  auto role = roles_.store().get(name);
  if (!role || !role->aggregationRule) return runtime::SyncResult::ok();
  std::vector<PolicyRule> rules;
  std::vector<std::string> seen;  // encoded rules, for semantic equality
  auto all = roles_.store().list();
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a->metadata.name < b->metadata.name; });
  for (const auto& selector : role->aggregationRule->clusterRoleSelectors) {
    for (const auto& other : all) {
      if (other->metadata.name == name) continue;
      auto m = api::labelSelectorMatches(selector, other->metadata.labels);
      if (!m.ok()) return runtime::SyncResult::errorNoRetry(m.status());
      if (!*m) continue;
      for (const auto& r : other->rules) {
        std::string enc = api::encodeJson(r);
        if (std::find(seen.begin(), seen.end(), enc) != seen.end()) continue;
        seen.push_back(enc);
        rules.push_back(r);
      }
    }
  }
  std::vector<std::string> current;
  for (const auto& r : role->rules) current.push_back(api::encodeJson(r));
  if (current == seen) return runtime::SyncResult::ok();
  std::string body = R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":)";
  {
    std::string n;
    api::JsonWriter w(n);
    w.value(name);
    body += n;
  }
  body += R"(},"rules":[)";
  for (size_t i = 0; i < seen.size(); ++i) body += (i ? "," : "") + seen[i];
  body += "]}";
  client::WriteOptions w;
  w.fieldManager = "clusterrole-aggregation-controller";
  w.force = true;
  auto r = client::patch<ClusterRole>(*client_, "", name, client::PatchType::kApply, body, "", w);
  if (r.ok() || r.status().code() == StatusCode::kNotFound) return runtime::SyncResult::ok();
  return runtime::SyncResult::error(r.status());
}

}  // namespace kcm::controllers
