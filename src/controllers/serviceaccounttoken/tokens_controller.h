#pragma once
// serviceaccount-token-controller (upstream pkg/controller/serviceaccount/tokens_controller.go), started first:
// Secrets of type kubernetes.io/service-account-token annotated with a ServiceAccount get `token` (a legacy JWT:
// issuer kubernetes/serviceaccount, RS256 with --service-account-private-key-file, kid = base64url(SHA-256 of the
// public key's DER)), `ca.crt` (--root-ca-file) and `namespace`, plus the SA's uid annotation; such Secrets whose
// ServiceAccount is gone (or has another UID) are deleted. Workers: --concurrent-serviceaccount-token-syncs.
#include <memory>
#include <string>

#include "api/gen/core_v1.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers {

// Signs legacy service-account JWTs. Only RSA keys for now (an ECDSA key is rejected at start with a clear error).
class LegacyTokenGenerator {
 public:
  static Result<std::unique_ptr<LegacyTokenGenerator>> fromPemFile(const std::string& path);
  ~LegacyTokenGenerator();
  Result<std::string> generate(const api::core::v1::ServiceAccount& sa, const api::core::v1::Secret& secret) const;
  const std::string& keyID() const { return kid_; }

 private:
  LegacyTokenGenerator() = default;
  void* key_ = nullptr;  // EVP_PKEY*
  std::string kid_;
};

class TokensController {
 public:
  TokensController(std::shared_ptr<client::RestClient> client, std::unique_ptr<LegacyTokenGenerator> gen,
                   std::string rootCA, informers::SharedInformer<api::core::v1::ServiceAccount>& sas,
                   informers::SharedInformer<api::core::v1::Secret>& secrets);
  void run(int workers, std::stop_token stop);
  runtime::SyncResult syncSecret(const std::string& key);

 private:
  std::shared_ptr<client::RestClient> client_;
  std::unique_ptr<LegacyTokenGenerator> gen_;
  std::string rootCA_;
  informers::SharedInformer<api::core::v1::ServiceAccount>& sas_;
  informers::SharedInformer<api::core::v1::Secret>& secrets_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers
