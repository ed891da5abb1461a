#include "controllers/client_builder.h"

#include "api/gen/authentication_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "client/typed_client.h"
#include "version/version.h"

namespace kcm::controllers {

Result<client::RestConfig> SimpleClientBuilder::config(const std::string& name) {
  client::RestConfig c = root_;
  c.userAgent = version::userAgent("kube-controller-manager", name);
  return c;
}

Status ServiceAccountClientBuilder::ensureServiceAccount(const std::string& name) {
  auto got = client::get<api::core::v1::ServiceAccount>(*rootClient_, ns_, name);
  if (got.ok()) return Status::Ok();
  if (got.status().code() != StatusCode::kNotFound) return got.status();
  api::core::v1::ServiceAccount sa;
  sa.metadata.name = name;
  sa.metadata.namespace_ = ns_;
  auto created = client::create(*rootClient_, ns_, sa);
  if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) return created.status();
  return Status::Ok();
}

Result<client::RestConfig> ServiceAccountClientBuilder::config(const std::string& name) {
  if (Status s = ensureServiceAccount(name); !s.ok()) return s.withContext("service account " + ns_ + "/" + name);
  client::RestConfig c = root_;
  // The service account's token replaces the root credentials.
  c.certData.clear();
  c.keyData.clear();
  c.bearerToken.clear();
  c.bearerTokenFile.clear();
  c.exec.reset();
  c.userAgent = version::userAgent("kube-controller-manager", name);
  auto root = rootClient_;
  std::string ns = ns_;
  int64_t exp = expiration_;
  c.tokenSource = [root, ns, name, exp]() -> Result<std::pair<std::string, std::chrono::seconds>> {
    api::authentication::v1::TokenRequest tr;
    tr.apiVersion = "authentication.k8s.io/v1";
    tr.kind = "TokenRequest";
    tr.spec.expirationSeconds = exp;
    client::Request req;
    req.method = "POST";
    req.path = client::resourcePath("", "v1", "serviceaccounts", ns, name, "token");
    req.body = toJson(tr);
    auto r = client::decodeResponse<api::authentication::v1::TokenRequest>(root->send(req));
    if (!r.ok()) return r.status();
    int64_t lifetime = r->status.expirationTimestamp.isZero()
                           ? exp
                           : r->status.expirationTimestamp.unixSeconds - api::Time::now().unixSeconds;
    return std::pair{r->status.token.str(), std::chrono::seconds(std::max<int64_t>(1, lifetime * 8 / 10))};
  };
  return c;
}

}  // namespace kcm::controllers
