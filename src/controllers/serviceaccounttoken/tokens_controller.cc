#include "controllers/serviceaccounttoken/tokens_controller.h"

#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

#include "api/gen/core_v1_json.h"
#include "api/support/base64url.h"
#include "api/support/json_writer.h"
#include "base/log.h"
#include "client/typed_client.h"

namespace kcm::controllers {

using api::core::v1::Secret;
using api::core::v1::ServiceAccount;

namespace {

constexpr const char* kTokenType = "kubernetes.io/service-account-token";
constexpr const char* kSANameKey = "kubernetes.io/service-account.name";
constexpr const char* kSAUIDKey = "kubernetes.io/service-account.uid";

std::string base64url(std::string_view in) { return api::codec::base64RawUrlEncode(in); }

std::string jsonString(const std::string& v) {
  std::string out;
  api::JsonWriter w(out);
  w.value(v);
  return out;
}

// OpenSSL writes an ECDSA signature as DER (SEQUENCE of r, s); JWS (RFC 7518 3.4) wants r and s as fixed-size
// big-endian integers, concatenated.
bool ecdsaDerToJose(std::string& sig, size_t coordinateSize) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(sig.data());
  ECDSA_SIG* parsed = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
  if (!parsed) return false;
  const BIGNUM* r = nullptr;
  const BIGNUM* s = nullptr;
  ECDSA_SIG_get0(parsed, &r, &s);
  std::string out(2 * coordinateSize, '\0');
  bool ok = BN_bn2binpad(r, reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(coordinateSize)) > 0 &&
            BN_bn2binpad(s, reinterpret_cast<unsigned char*>(out.data()) + coordinateSize,
                         static_cast<int>(coordinateSize)) > 0;
  ECDSA_SIG_free(parsed);
  if (ok) sig = std::move(out);
  return ok;
}

}  // namespace

Result<std::unique_ptr<LegacyTokenGenerator>> LegacyTokenGenerator::fromPemFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Status(StatusCode::kInvalidArgument, "error reading --service-account-private-key-file " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string pem = ss.str();
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (!key) return Status(StatusCode::kInvalidArgument, "--service-account-private-key-file " + path + " holds no PEM private key");
  // RSA signs RS256; ECDSA signs ES256/ES384/ES512 by curve, as upstream's JWTTokenGenerator (pkg/serviceaccount/jwt.go).
  std::string alg;
  const EVP_MD* md = EVP_sha256();
  size_t ecCoordinateSize = 0;
  if (EVP_PKEY_base_id(key) == EVP_PKEY_RSA) {
    alg = "RS256";
  } else if (EVP_PKEY_base_id(key) == EVP_PKEY_EC) {
    char curve[64] = {0};
    size_t curveLen = 0;
    EVP_PKEY_get_group_name(key, curve, sizeof curve, &curveLen);
    const std::string c(curve);
    if (c == "prime256v1" || c == "P-256") {
      alg = "ES256", md = EVP_sha256(), ecCoordinateSize = 32;
    } else if (c == "secp384r1" || c == "P-384") {
      alg = "ES384", md = EVP_sha384(), ecCoordinateSize = 48;
    } else if (c == "secp521r1" || c == "P-521") {
      alg = "ES512", md = EVP_sha512(), ecCoordinateSize = 66;
    } else {
      EVP_PKEY_free(key);
      return Status(StatusCode::kInvalidArgument,
                    "error reading key for service account token controller: could not generate signer for ECDSA "
                    "keypair: unknown private key curve, must be 256, 384, or 521");
    }
  } else {
    EVP_PKEY_free(key);
    return Status(StatusCode::kInvalidArgument, "--service-account-private-key-file " + path +
                                                    ": unknown private key type, must be an RSA or ECDSA key");
  }
  std::unique_ptr<LegacyTokenGenerator> g(new LegacyTokenGenerator());
  g->key_ = key;
  g->alg_ = alg;
  g->md_ = md;
  g->ecCoordinateSize_ = ecCoordinateSize;
  // kid: base64url(SHA-256(DER of the public key)), as upstream's keyIDFromPublicKey.
  unsigned char* der = nullptr;
  int len = i2d_PUBKEY(key, &der);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int dlen = 0;
  EVP_Digest(der, static_cast<size_t>(len), digest, &dlen, EVP_sha256(), nullptr);
  OPENSSL_free(der);
  g->kid_ = base64url(std::string_view(reinterpret_cast<char*>(digest), dlen));
  return g;
}

LegacyTokenGenerator::~LegacyTokenGenerator() {
  if (key_) EVP_PKEY_free(static_cast<EVP_PKEY*>(key_));
}

Result<std::string> LegacyTokenGenerator::generate(const ServiceAccount& sa, const Secret& secret) const {
  const std::string ns = sa.metadata.namespace_;
  std::string header = R"({"alg":")" + alg_ + R"(","kid":)" + jsonString(kid_) + "}";
  std::string claims = R"({"iss":"kubernetes/serviceaccount","kubernetes.io/serviceaccount/namespace":)" +
                       jsonString(ns) + R"(,"kubernetes.io/serviceaccount/secret.name":)" +
                       jsonString(secret.metadata.name) +
                       R"(,"kubernetes.io/serviceaccount/service-account.name":)" + jsonString(sa.metadata.name) +
                       R"(,"kubernetes.io/serviceaccount/service-account.uid":)" + jsonString(sa.metadata.uid) +
                       R"(,"sub":)" + jsonString("system:serviceaccount:" + ns + ":" + sa.metadata.name) + "}";
  std::string signingInput = base64url(header) + "." + base64url(claims);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  size_t sigLen = 0;
  std::string sig;
  bool ok = EVP_DigestSignInit(ctx, nullptr, static_cast<const EVP_MD*>(md_), nullptr, static_cast<EVP_PKEY*>(key_)) == 1 &&
            EVP_DigestSign(ctx, nullptr, &sigLen, reinterpret_cast<const unsigned char*>(signingInput.data()),
                           signingInput.size()) == 1;
  if (ok) {
    sig.resize(sigLen);
    ok = EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &sigLen,
                        reinterpret_cast<const unsigned char*>(signingInput.data()), signingInput.size()) == 1;
    sig.resize(sigLen);
  }
  EVP_MD_CTX_free(ctx);
  if (ok && ecCoordinateSize_ > 0) ok = ecdsaDerToJose(sig, ecCoordinateSize_);
  if (!ok) return Status(StatusCode::kInternal, "signing the service account token failed");
  return signingInput + "." + base64url(sig);
}

TokensController::TokensController(std::shared_ptr<client::RestClient> client,
                                   std::unique_ptr<LegacyTokenGenerator> gen, std::string rootCA,
                                   informers::SharedInformer<ServiceAccount>& sas,
                                   informers::SharedInformer<Secret>& secrets)
    : client_(std::move(client)), gen_(std::move(gen)), rootCA_(std::move(rootCA)), sas_(sas), secrets_(secrets),
      base_("serviceaccount_tokens_secret", [this](const std::string& key) { return syncSecret(key); }) {
  informers::EventHandler<Secret> sh;
  sh.onAdd = [this](const auto& s) {
    if (s->type == kTokenType) base_.enqueueObject(*s);
  };
  sh.onUpdate = [this](const auto&, const auto& s) {
    if (s->type == kTokenType) base_.enqueueObject(*s);
  };
  // A deleted token leaves a dangling reference in its ServiceAccount's `secrets`: remember whose it was.
  sh.onDelete = [this](const auto& s, bool) {
    if (s->type != kTokenType) return;
    DeletedToken d;
    if (auto it = s->metadata.annotations.find(kSANameKey); it != s->metadata.annotations.end()) d.saName = it->second;
    if (auto it = s->metadata.annotations.find(kSAUIDKey); it != s->metadata.annotations.end()) d.saUID = it->second;
    {
      std::lock_guard l(deletedMu_);
      deleted_[s->metadata.namespace_ + "/" + s->metadata.name] = std::move(d);
    }
    base_.enqueueObject(*s);
  };
  registrations_.push_back(secrets_.addEventHandler(sh));
  informers::EventHandler<ServiceAccount> ah;
  // A ServiceAccount going away takes its legacy token Secrets with it.
  ah.onDelete = [this](const auto& sa, bool) {
    for (const auto& s : secrets_.store().byIndex(informers::kNamespaceIndex, sa->metadata.namespace_)) {
      auto it = s->metadata.annotations.find(kSANameKey);
      if (s->type == kTokenType && it != s->metadata.annotations.end() && it->second == sa->metadata.name)
        base_.enqueueObject(*s);
    }
  };
  registrations_.push_back(sas_.addEventHandler(ah));
}

void TokensController::run(int workers, std::stop_token stop) {
  base_.start(workers, stop, {[this] { return sas_.hasSynced(); }, [this] { return secrets_.hasSynced(); }});
}

runtime::SyncResult TokensController::syncSecret(const std::string& key) {
  auto [ns, name] = informers::splitMetaNamespaceKey(key);
  auto secret = secrets_.store().get(ns, name);
  std::optional<DeletedToken> gone;
  {
    std::lock_guard l(deletedMu_);
    if (auto it = deleted_.find(key); it != deleted_.end()) {
      if (!secret) gone = it->second;
      deleted_.erase(it);
    }
  }
  if (!secret) {
    if (!gone || gone->saName.empty()) return runtime::SyncResult::ok();
    // Only while the ServiceAccount (with that UID) is still cached, as upstream (no live lookup here).
    auto sa = sas_.store().get(ns, gone->saName);
    if (!sa || (!gone->saUID.empty() && sa->metadata.uid != gone->saUID)) return runtime::SyncResult::ok();
    Status s = removeSecretReference(ns, gone->saName, gone->saUID, name);
    if (s.code() == StatusCode::kConflict) {  // retried (upstream: RetryOnConflict), not slept on in a worker
      std::lock_guard l(deletedMu_);
      deleted_.emplace(key, *gone);
      return runtime::SyncResult::error(s);
    }
    if (!s.ok())
      KLOG_ERROR("\"Removing secret reference\" err=\"" + s.message() + "\" secret=\"" + key + "\"");
    return runtime::SyncResult::ok();
  }
  if (secret->type != kTokenType) return runtime::SyncResult::ok();
  auto nameIt = secret->metadata.annotations.find(kSANameKey);
  if (nameIt == secret->metadata.annotations.end()) return runtime::SyncResult::ok();
  auto uidIt = secret->metadata.annotations.find(kSAUIDKey);
  const std::string wantUID = uidIt == secret->metadata.annotations.end() ? "" : uidIt->second;
  auto matches = [&](const ServiceAccount& sa) { return wantUID.empty() || sa.metadata.uid == wantUID; };
  std::shared_ptr<const ServiceAccount> sa = sas_.store().get(ns, nameIt->second);
  if (!sa || !matches(*sa)) {
    // The cache may lag: confirm with a live read before deleting anything.
    auto live = client::get<ServiceAccount>(*client_, ns, nameIt->second);
    if (live.ok() && matches(*live)) {
      sa = std::make_shared<const ServiceAccount>(std::move(live).value());
    } else if (live.ok() || live.status().code() == StatusCode::kNotFound) {
      client::DeleteOptions d;
      d.preconditionUID = secret->metadata.uid;
      Status s = client::remove<Secret>(*client_, ns, name, d);
      if (s.ok() || s.code() == StatusCode::kNotFound || s.code() == StatusCode::kConflict) return runtime::SyncResult::ok();
      return runtime::SyncResult::error(s);
    } else {
      return runtime::SyncResult::error(live.status());
    }
  }
  auto needs = [&](const Secret& s) {
    bool needsCA = !rootCA_.empty() && (!s.data.contains("ca.crt") || s.data.at("ca.crt") != rootCA_);
    bool needsNamespace = !s.data.contains("namespace") || s.data.at("namespace") != s.metadata.namespace_;
    bool needsToken = !s.data.contains("token") || s.data.at("token").empty();
    return needsCA || needsNamespace || needsToken;
  };
  if (!needs(*secret)) return runtime::SyncResult::ok();
  // Update from a live read (upstream does the same to avoid writing over a concurrent change).
  auto live = client::get<Secret>(*client_, ns, name);
  if (!live.ok()) return live.status().code() == StatusCode::kNotFound ? runtime::SyncResult::ok()
                                                                        : runtime::SyncResult::error(live.status());
  Secret s = std::move(live).value();
  if (!needs(s)) return runtime::SyncResult::ok();
  if (!rootCA_.empty()) s.data["ca.crt"] = rootCA_;
  s.data["namespace"] = ns;
  if (!s.data.contains("token") || s.data.at("token").empty()) {
    auto token = gen_->generate(*sa, s);
    if (!token.ok()) return runtime::SyncResult::error(token.status());
    s.data["token"] = *token;
  }
  s.metadata.annotations[kSANameKey] = sa->metadata.name;
  s.metadata.annotations[kSAUIDKey] = sa->metadata.uid;
  auto r = client::update(*client_, s);
  if (r.ok() || r.status().code() == StatusCode::kNotFound) return runtime::SyncResult::ok();
  return runtime::SyncResult::error(r.status());
}

Status TokensController::removeSecretReference(const std::string& ns, const std::string& saName,
                                               const std::string& saUID, const std::string& secretName) {
  // A fresh copy: the cached ServiceAccount is shared and must not change.
  auto live = client::get<ServiceAccount>(*client_, ns, saName);
  if (!live.ok()) return live.status().code() == StatusCode::kNotFound ? Status::Ok() : live.status();
  ServiceAccount sa = std::move(live).value();
  if (!saUID.empty() && sa.metadata.uid != saUID) return Status::Ok();
  auto& refs = sa.secrets;
  auto it = std::remove_if(refs.begin(), refs.end(), [&](const auto& r) { return r.name == secretName; });
  if (it == refs.end()) return Status::Ok();
  refs.erase(it, refs.end());
  auto r = client::update(*client_, sa);
  if (r.ok() || r.status().code() == StatusCode::kNotFound) return Status::Ok();
  return r.status();
}

}  // namespace kcm::controllers
