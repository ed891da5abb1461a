#pragma once
// Bootstrap token Secrets (k8s.io/cluster-bootstrap's token/api, util/secrets and token/jws at the pin), shared by
// the bootstrap-signer and token-cleaner controllers: Secrets of type bootstrap.kubernetes.io/token named
// bootstrap-token-<id> in kube-system, with token-id, token-secret, expiration (RFC 3339) and usage-bootstrap-*.
#include <chrono>
#include <optional>
#include <string>

#include "api/gen/core_v1.h"

namespace kcm::controllers::bootstrap {

inline constexpr const char* kSecretTypeBootstrapToken = "bootstrap.kubernetes.io/token";
inline constexpr const char* kBootstrapTokenSecretPrefix = "bootstrap-token-";
inline constexpr const char* kBootstrapTokenIDKey = "token-id";
inline constexpr const char* kBootstrapTokenSecretKey = "token-secret";
inline constexpr const char* kBootstrapTokenExpirationKey = "expiration";
inline constexpr const char* kBootstrapTokenUsageSigningKey = "usage-bootstrap-signing";
inline constexpr const char* kConfigMapClusterInfo = "cluster-info";
inline constexpr const char* kKubeConfigKey = "kubeconfig";
inline constexpr const char* kJWSSignatureKeyPrefix = "jws-kubeconfig-";

// GetData: the decoded value of data[key], "" when absent.
std::string getData(const api::core::v1::Secret& s, const std::string& key);

// GetExpiration: time left before data.expiration, and whether it has passed. No expiration: {0, false}; an
// expiration that does not parse counts as expired.
struct Expiration {
  std::chrono::microseconds remaining{0};
  bool expired = false;
};
Expiration getExpiration(const api::core::v1::Secret& s, std::chrono::system_clock::time_point now);

// ParseName: the token id of "bootstrap-token-<6 of [a-z0-9]>", nullopt otherwise.
std::optional<std::string> parseName(const std::string& name);

// validateSecretForSigning: the token id and secret of a Secret that may sign cluster-info (well-formed name and
// matching token-id, a token-secret, not expired, usage-bootstrap-signing "true").
struct SigningToken {
  std::string id, secret;
};
std::optional<SigningToken> validateSecretForSigning(const api::core::v1::Secret& s,
                                                     std::chrono::system_clock::time_point now);

// jws.ComputeDetachedSignature: the compact JWS (HS256, protected header {"alg":"HS256","kid":<tokenID>}) of
// content keyed by tokenSecret, with the payload left out: "<header>..<signature>".
std::string computeDetachedSignature(const std::string& content, const std::string& tokenID,
                                     const std::string& tokenSecret);

}  // namespace kcm::controllers::bootstrap
