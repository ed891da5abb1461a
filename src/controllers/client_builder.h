#pragma once
// Clients for controllers, as upstream's controller-manager clientbuilder:
//  - SimpleClientBuilder: the root credentials with a per-controller User-Agent
//    ("kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/<commit>/<controller>").
//  - ServiceAccountClientBuilder (--use-service-account-credentials): each controller acts as
//    system:serviceaccount:kube-system:<name>, the ServiceAccount created if missing, with tokens from the
//    TokenRequest API (1 h, refreshed at 80% of their lifetime), so RBAC's system:controller:* roles apply.
// Each client has its own rate limiter (its own --kube-api-qps/--kube-api-burst budget), as upstream.
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "client/rest_client.h"

namespace kcm::controllers {

class ClientBuilder {
 public:
  virtual ~ClientBuilder() = default;
  // The REST config a controller named `name` uses (its own user agent and, for service-account credentials, its
  // own token). Controllers that need other limits (namespace: QPS x20) adjust a copy.
  virtual Result<client::RestConfig> config(const std::string& name) = 0;
  Result<std::shared_ptr<client::RestClient>> client(const std::string& name) {
    auto c = config(name);
    if (!c.ok()) return c.status();
    return client::RestClient::create(*c);
  }
};

class SimpleClientBuilder : public ClientBuilder {
 public:
  explicit SimpleClientBuilder(client::RestConfig root) : root_(std::move(root)) {}
  Result<client::RestConfig> config(const std::string& name) override;

 private:
  client::RestConfig root_;
};

class ServiceAccountClientBuilder : public ClientBuilder {
 public:
  ServiceAccountClientBuilder(client::RestConfig root, std::shared_ptr<client::RestClient> rootClient,
                              std::string ns = "kube-system", int64_t expirationSeconds = 3600)
      : root_(std::move(root)), rootClient_(std::move(rootClient)), ns_(std::move(ns)), expiration_(expirationSeconds) {}
  Result<client::RestConfig> config(const std::string& name) override;

 private:
  Status ensureServiceAccount(const std::string& name);
  client::RestConfig root_;
  std::shared_ptr<client::RestClient> rootClient_;
  std::string ns_;
  int64_t expiration_;
};

}  // namespace kcm::controllers
