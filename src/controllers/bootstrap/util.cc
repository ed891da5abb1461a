#include "controllers/bootstrap/util.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "api/support/base64url.h"
#include "api/support/json_writer.h"
#include "api/support/types.h"
#include "base/log.h"

namespace kcm::controllers::bootstrap {

using api::core::v1::Secret;

namespace {

std::string base64url(std::string_view in) { return api::codec::base64RawUrlEncode(in); }

}  // namespace

std::string getData(const Secret& s, const std::string& key) {
  auto it = s.data.find(key);
  return it == s.data.end() ? "" : it->second;
}

Expiration getExpiration(const Secret& s, std::chrono::system_clock::time_point now) {
  const std::string expiration = getData(s, kBootstrapTokenExpirationKey);
  if (expiration.empty()) return {};
  auto t = api::MicroTime::parse(expiration);
  if (!t) {
    KLOG_V(3, "Unparseable expiration time (" + expiration + ") in " + s.metadata.namespace_ + "/" +
                  s.metadata.name + " Secret. Treating as expired.");
    return {std::chrono::microseconds(0), true};
  }
  auto nowUs = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch());
  auto remaining = std::chrono::microseconds(t->unixMicros) - nowUs;
  if (remaining.count() <= 0) {
    KLOG_V(3, "Expired bootstrap token in " + s.metadata.namespace_ + "/" + s.metadata.name + " Secret: " +
                  expiration);
    return {std::chrono::microseconds(0), true};
  }
  return {remaining, false};
}

std::optional<std::string> parseName(const std::string& name) {
  const std::string prefix = kBootstrapTokenSecretPrefix;
  if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  std::string id = name.substr(prefix.size());
  for (char c : id)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return std::nullopt;
  return id;
}

std::optional<SigningToken> validateSecretForSigning(const Secret& s, std::chrono::system_clock::time_point now) {
  const std::string key = s.metadata.namespace_ + "/" + s.metadata.name;
  auto nameTokenID = parseName(s.metadata.name);
  if (!nameTokenID) {
    KLOG_V(3, "\"Invalid secret name, must be of the form " + std::string(kBootstrapTokenSecretPrefix) +
                  "<secret-id>\" secretName=" + log::quote(s.metadata.name));
    return std::nullopt;
  }
  SigningToken t;
  t.id = getData(s, kBootstrapTokenIDKey);
  if (t.id.empty()) {
    KLOG_V(3, "\"No key in Secret\" key=\"token-id\" secret=" + log::quote(key));
    return std::nullopt;
  }
  if (*nameTokenID != t.id) {
    KLOG_V(3, "\"Token ID doesn't match secret name\" tokenID=" + log::quote(t.id) +
                  " secretName=" + log::quote(s.metadata.name));
    return std::nullopt;
  }
  t.secret = getData(s, kBootstrapTokenSecretKey);
  if (t.secret.empty()) {
    KLOG_V(3, "\"No key in secret\" key=\"token-secret\" secret=" + log::quote(key));
    return std::nullopt;
  }
  // The token cleaner removes expired tokens, but it may not have got there yet.
  if (getExpiration(s, now).expired) return std::nullopt;
  if (getData(s, kBootstrapTokenUsageSigningKey) != "true") return std::nullopt;
  return t;
}

std::string computeDetachedSignature(const std::string& content, const std::string& tokenID,
                                     const std::string& tokenSecret) {
  std::string header = R"({"alg":"HS256","kid":)";
  {
    api::JsonWriter w(header);
    w.value(tokenID);
  }
  header += "}";
  const std::string signingInput = base64url(header) + "." + base64url(content);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int macLen = 0;
  static const unsigned char kEmpty = 0;  // HMAC with an empty key still needs a non-null pointer
  const void* key = tokenSecret.empty() ? static_cast<const void*>(&kEmpty) : tokenSecret.data();
  HMAC(EVP_sha256(), key, static_cast<int>(tokenSecret.size()),
       reinterpret_cast<const unsigned char*>(signingInput.data()), signingInput.size(), mac, &macLen);
  return base64url(header) + ".." + base64url(std::string_view(reinterpret_cast<char*>(mac), macLen));
}

}  // namespace kcm::controllers::bootstrap
