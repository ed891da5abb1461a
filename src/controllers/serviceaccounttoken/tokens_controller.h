#pragma once
// serviceaccount-token-controller (upstream pkg/controller/serviceaccount/tokens_controller.go), started first:
// Secrets of type kubernetes.io/service-account-token annotated with a ServiceAccount get `token` (a legacy JWT:
// issuer kubernetes/serviceaccount, signed with --service-account-private-key-file (RS256 or ES256/384/512), kid = base64url(SHA-256 of the
// public key's DER)), `ca.crt` (--root-ca-file) and `namespace`, plus the SA's uid annotation; such Secrets whose
// ServiceAccount is gone (or has another UID) are deleted. Workers: --concurrent-serviceaccount-token-syncs.
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "api/gen/core_v1.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers {

// Signs legacy service-account JWTs: RS256 with an RSA key, ES256/ES384/ES512 with an ECDSA P-256/P-384/P-521 key.
class LegacyTokenGenerator {
 public:
  static Result<std::unique_ptr<LegacyTokenGenerator>> fromPemFile(const std::string& path);
  ~LegacyTokenGenerator();
  Result<std::string> generate(const api::core::v1::ServiceAccount& sa, const api::core::v1::Secret& secret) const;
  const std::string& keyID() const { return kid_; }

 private:
  LegacyTokenGenerator() = default;
  void* key_ = nullptr;  // EVP_PKEY*
  const void* md_ = nullptr;  // EVP_MD*: the digest of alg_
  std::string alg_;
  size_t ecCoordinateSize_ = 0;  // ECDSA: bytes of r and of s in the JWS signature; 0 for RSA
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
  // removeSecretReference: drops a deleted token Secret from its ServiceAccount's `secrets` (live read, update).
  Status removeSecretReference(const std::string& ns, const std::string& saName, const std::string& saUID,
                               const std::string& secretName);

  std::shared_ptr<client::RestClient> client_;
  std::unique_ptr<LegacyTokenGenerator> gen_;
  std::string rootCA_;
  informers::SharedInformer<api::core::v1::ServiceAccount>& sas_;
  informers::SharedInformer<api::core::v1::Secret>& secrets_;
  // What a deleted token Secret named (upstream keeps it in the queue key): its ServiceAccount's name and UID.
  struct DeletedToken {
    std::string saName, saUID;
  };
  std::mutex deletedMu_;
  std::map<std::string, DeletedToken> deleted_;  // by namespace/name, until synced
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers
