#include "controllers/validatingadmissionpolicystatus/register_vapstatus.h"

#include <mutex>

#include <nlohmann/json.hpp>

#include "api/gen/admissionregistration_v1_json.h"
#include "controllers/context.h"
#include "controllers/controller.h"
#include "controllers/validatingadmissionpolicystatus/controller.h"

namespace kcm::controllers {
namespace {

using validatingadmissionpolicystatus::GroupVersionKind;

// The schema source of upstream's ClientDiscoveryResolver: /openapi/v3 lists each group-version's document by a
// hashed URL; documents are kept by that URL, so a changed schema (a CRD updated) is fetched again.
class OpenAPIV3Documents {
 public:
  explicit OpenAPIV3Documents(std::shared_ptr<client::RestClient> client) : client_(std::move(client)) {}

  Result<nlohmann::json> document(const std::string& group, const std::string& version) {
    client::Request paths;
    paths.path = "/openapi/v3";
    auto r = client_->send(paths);
    if (!r.ok()) return r.status();
    auto index = nlohmann::json::parse(r->body, nullptr, false);
    const std::string key = group.empty() ? "api/" + version : "apis/" + group + "/" + version;
    const nlohmann::json* entry = nullptr;
    if (index.is_object())
      if (auto paths = index.find("paths"); paths != index.end() && paths->is_object())
        if (auto e = paths->find(key); e != paths->end() && e->is_object()) entry = &*e;
    if (!entry)
      return Status(StatusCode::kNotFound, "cannot resolve group version \"" + (group.empty() ? version : group + "/" + version) + "\": schema not found");
    auto u = entry->find("serverRelativeURL");
    const std::string url = u != entry->end() && u->is_string() ? u->get<std::string>() : "";
    if (url.empty()) return Status(StatusCode::kInternal, "no serverRelativeURL for " + key + " in /openapi/v3");
    {
      std::lock_guard<std::mutex> l(mu_);
      if (auto it = cache_.find(url); it != cache_.end()) return it->second;
    }
    client::Request get;
    const auto q = url.find('?');
    get.path = url.substr(0, q);
    if (q != std::string::npos) {
      // serverRelativeURL carries "hash=<hex>" only.
      const std::string query = url.substr(q + 1);
      const auto eq = query.find('=');
      get.query.push_back({query.substr(0, eq), eq == std::string::npos ? "" : query.substr(eq + 1)});
    }
    auto d = client_->send(get);
    if (!d.ok()) return d.status();
    auto doc = nlohmann::json::parse(d->body, nullptr, false);
    if (doc.is_discarded()) return Status(StatusCode::kInternal, "invalid OpenAPI v3 document for " + key);
    std::lock_guard<std::mutex> l(mu_);
    if (cache_.size() > 64) cache_.clear();
    cache_[url] = doc;
    return doc;
  }

 private:
  std::shared_ptr<client::RestClient> client_;
  std::mutex mu_;
  std::map<std::string, nlohmann::json> cache_;
};

Result<std::unique_ptr<Controller>> startValidatingAdmissionPolicyStatusController(ControllerContext& ctx) {
  auto c = ctx.clientBuilder->client("validatingadmissionpolicy-status-controller");
  if (!c.ok()) return c.status();
  auto docs = std::make_shared<OpenAPIV3Documents>(*c);
  auto discovery = ctx.discovery;
  auto kindsFor = [discovery](const std::string& g, const std::string& v,
                              const std::string& r) -> Result<std::vector<GroupVersionKind>> {
    auto resources = discovery->serverResources();
    if (!resources.ok()) return resources.status();
    for (const auto& res : *resources)
      if (res.group == g && res.version == v && res.resource == r)
        return std::vector<GroupVersionKind>{{g, v, res.kind}};
    return Status(StatusCode::kNotFound, "no matches for " + (g.empty() ? "" : g + "/") + v + ", Resource=" + r);
  };
  auto checker = std::make_shared<validatingadmissionpolicystatus::TypeChecker>(
      kindsFor, [discovery] { discovery->invalidate(); },
      [docs](const std::string& g, const std::string& v) { return docs->document(g, v); });
  auto ctrl = std::make_shared<validatingadmissionpolicystatus::Controller>(
      *c, ctx.informerFactory->forType<api::admissionregistration::v1::ValidatingAdmissionPolicy>(), checker);
  const int workers = ctx.options->validatingadmissionpolicyStatusController.concurrentValidatingAdmissionPolicyStatusSyncs;
  return newControllerLoop(ctrl, [workers](auto& p, std::stop_token stop) { p.run(workers, stop); });
}

}  // namespace

void registerValidatingAdmissionPolicyStatusInitFunc(const std::function<void(const std::string&, InitFunc)>& setInit) {
  setInit("validatingadmissionpolicy-status-controller", startValidatingAdmissionPolicyStatusController);
}

}  // namespace kcm::controllers
