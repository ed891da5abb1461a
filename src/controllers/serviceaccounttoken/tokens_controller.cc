#include "controllers/serviceaccounttoken/tokens_controller.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <sstream>

#include "api/gen/core_v1_json.h"
#include "api/support/base64.h"
#include "api/support/json_writer.h"
#include "client/typed_client.h"

namespace kcm::controllers {

using api::core::v1::Secret;
using api::core::v1::ServiceAccount;

namespace {

constexpr const char* kTokenType = "kubernetes.io/service-account-token";
constexpr const char* kSANameKey = "kubernetes.io/service-account.name";
constexpr const char* kSAUIDKey = "kubernetes.io/service-account.uid";

std::string base64url(std::string_view in) {
  std::string s = api::codec::base64Encode(in);
  for (char& c : s) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  while (!s.empty() && s.back() == '=') s.pop_back();
  return s;
}

std::string jsonString(const std::string& v) {
  std::string out;
  api::JsonWriter w(out);
  w.value(v);
  return out;
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
  if (EVP_PKEY_base_id(key) != EVP_PKEY_RSA) {
    EVP_PKEY_free(key);
    return Status(StatusCode::kInvalidArgument,
                  "--service-account-private-key-file " + path + ": only RSA keys are implemented so far");
  }
  std::unique_ptr<LegacyTokenGenerator> g(new LegacyTokenGenerator());
  g->key_ = key;
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
  std::string header = R"({"alg":"RS256","kid":)" + jsonString(kid_) + "}";
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
  bool ok = EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, static_cast<EVP_PKEY*>(key_)) == 1 &&
            EVP_DigestSign(ctx, nullptr, &sigLen, reinterpret_cast<const unsigned char*>(signingInput.data()),
                           signingInput.size()) == 1;
  if (ok) {
    sig.resize(sigLen);
    ok = EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &sigLen,
                        reinterpret_cast<const unsigned char*>(signingInput.data()), signingInput.size()) == 1;
    sig.resize(sigLen);
  }
  EVP_MD_CTX_free(ctx);
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
  if (!secret || secret->type != kTokenType) return runtime::SyncResult::ok();
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

}  // namespace kcm::controllers
