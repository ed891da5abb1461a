// The serviceaccount-token controller against the in-memory apiserver, its informers running: token Secrets get
// a signed token (RSA or ECDSA key, verified here with the public key), tokens of a deleted ServiceAccount go,
// and a deleted token leaves its ServiceAccount's `secrets` (upstream tokens_controller.go syncSecret).
#include "controllers/serviceaccounttoken/tokens_controller.h"

#include <gtest/gtest.h>

#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "api/gen/core_v1_json.h"
#include "api/support/base64.h"
#include "base/subprocess.h"
#include "fake/eventually.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers {
namespace {

using api::core::v1::ObjectReference;
using api::core::v1::Secret;
using api::core::v1::ServiceAccount;
using kcm::testing::eventually;
using kcm::testing::FakeApiServer;
using namespace std::chrono_literals;

std::string base64urlDecode(std::string s) {
  for (char& c : s) {
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  while (s.size() % 4) s += '=';
  std::string out;
  (void)api::codec::base64Decode(s, out);
  return out;
}

// A private key written by `openssl` (genpkey), and its public key.
struct KeyFiles {
  std::string dir, privateKey, publicKey;
  explicit KeyFiles(const std::vector<std::string>& genpkeyArgs) {
    dir = std::filesystem::temp_directory_path() / ("tokens-test-" + std::to_string(::getpid()) + "-" +
                                                     std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::create_directories(dir);
    privateKey = dir + "/sa.key";
    publicKey = dir + "/sa.pub";
    std::vector<std::string> gen = {"openssl", "genpkey"};
    gen.insert(gen.end(), genpkeyArgs.begin(), genpkeyArgs.end());
    gen.push_back("-out");
    gen.push_back(privateKey);
    EXPECT_TRUE(exec(gen).ok());
    EXPECT_TRUE(exec({"openssl", "pkey", "-in", privateKey, "-pubout", "-out", publicKey}).ok());
  }
  ~KeyFiles() { std::filesystem::remove_all(dir); }
};

// Verifies a compact JWS with the public key: RS256 as PKCS#1 v1.5, ES* as r||s (converted to DER for OpenSSL).
bool verifyJws(const std::string& token, const std::string& publicKeyFile, std::string& alg) {
  auto dot1 = token.find('.'), dot2 = token.rfind('.');
  if (dot1 == std::string::npos || dot2 == dot1) return false;
  auto header = nlohmann::json::parse(base64urlDecode(token.substr(0, dot1)), nullptr, false);
  if (header.is_discarded()) return false;
  alg = header.value("alg", "");
  std::string input = token.substr(0, dot2);
  std::string sig = base64urlDecode(token.substr(dot2 + 1));
  const EVP_MD* md = alg == "ES384" ? EVP_sha384() : alg == "ES512" ? EVP_sha512() : EVP_sha256();
  if (alg.rfind("ES", 0) == 0) {
    size_t n = sig.size() / 2;
    ECDSA_SIG* s = ECDSA_SIG_new();
    ECDSA_SIG_set0(s, BN_bin2bn(reinterpret_cast<const unsigned char*>(sig.data()), static_cast<int>(n), nullptr),
                   BN_bin2bn(reinterpret_cast<const unsigned char*>(sig.data()) + n, static_cast<int>(n), nullptr));
    unsigned char* der = nullptr;
    int len = i2d_ECDSA_SIG(s, &der);
    sig.assign(reinterpret_cast<char*>(der), static_cast<size_t>(len));
    OPENSSL_free(der);
    ECDSA_SIG_free(s);
  }
  FILE* f = std::fopen(publicKeyFile.c_str(), "r");
  if (!f) return false;
  EVP_PKEY* key = PEM_read_PUBKEY(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  if (!key) return false;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = EVP_DigestVerifyInit(ctx, nullptr, md, nullptr, key) == 1 &&
            EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                             reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(key);
  return ok;
}

class TokensControllerTest : public ::testing::Test {
 protected:
  void start(const std::string& keyFile) {
    auto gen = LegacyTokenGenerator::fromPemFile(keyFile);
    ASSERT_TRUE(gen.ok()) << gen.status().message();
    ctrl = std::make_unique<TokensController>(server->client(), std::move(gen).value(), "CA",
                                              factory.forType<ServiceAccount>(), factory.forType<Secret>());
    factory.start(stop.get_token());
    worker = std::jthread([this] { ctrl->run(1, stop.get_token()); });
  }
  void TearDown() override {
    stop.request_stop();
    if (worker.joinable()) worker.join();
    factory.shutdown();
  }
  ServiceAccount addServiceAccount(const std::string& name, const std::vector<std::string>& secrets = {}) {
    ServiceAccount sa;
    sa.metadata.namespace_ = "ns";
    sa.metadata.name = name;
    for (const auto& s : secrets) {
      ObjectReference r;
      r.name = s;
      sa.secrets.push_back(r);
    }
    return server->add(sa);
  }
  Secret addTokenSecret(const std::string& name, const ServiceAccount& sa) {
    Secret s;
    s.metadata.namespace_ = "ns";
    s.metadata.name = name;
    s.type = "kubernetes.io/service-account-token";
    s.metadata.annotations["kubernetes.io/service-account.name"] = sa.metadata.name;
    s.metadata.annotations["kubernetes.io/service-account.uid"] = sa.metadata.uid;
    return server->add(s);
  }
  std::string tokenOf(const std::string& name) {
    auto s = server->get<Secret>("ns", name);
    if (!s || !s->data.contains("token")) return "";
    return s->data.at("token");
  }

  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>();
  informers::SharedInformerFactory factory{server->client(), 0s};
  std::unique_ptr<TokensController> ctrl;
  std::stop_source stop;
  std::jthread worker;
};

TEST_F(TokensControllerTest, AnRSAKeySignsRS256TokensWithTheLegacyClaims) {
  KeyFiles keys({"-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"});
  auto sa = addServiceAccount("builder");
  addTokenSecret("builder-token", sa);
  start(keys.privateKey);
  ASSERT_TRUE(eventually([&] { return !tokenOf("builder-token").empty(); }));
  std::string alg;
  const std::string token = tokenOf("builder-token");
  EXPECT_TRUE(verifyJws(token, keys.publicKey, alg));
  EXPECT_EQ(alg, "RS256");
  auto claims = nlohmann::json::parse(base64urlDecode(token.substr(token.find('.') + 1, token.rfind('.') - token.find('.') - 1)));
  EXPECT_EQ(claims["iss"], "kubernetes/serviceaccount");
  EXPECT_EQ(claims["sub"], "system:serviceaccount:ns:builder");
  EXPECT_EQ(claims["kubernetes.io/serviceaccount/service-account.uid"], sa.metadata.uid.str());
  EXPECT_EQ(server->get<Secret>("ns", "builder-token")->data.at("ca.crt"), "CA");
}

// Upstream's JWTTokenGenerator signs with ECDSA keys too: ES256/ES384/ES512 by curve.
struct CurveCase {
  const char* curve;
  const char* alg;
};
class TokensControllerEcdsaTest : public TokensControllerTest, public ::testing::WithParamInterface<CurveCase> {};

TEST_P(TokensControllerEcdsaTest, AnECDSAKeySignsWithTheAlgorithmOfItsCurve) {
  KeyFiles keys({"-algorithm", "EC", "-pkeyopt", std::string("ec_paramgen_curve:") + GetParam().curve});
  auto sa = addServiceAccount("builder");
  addTokenSecret("builder-token", sa);
  start(keys.privateKey);
  ASSERT_TRUE(eventually([&] { return !tokenOf("builder-token").empty(); }));
  std::string alg;
  EXPECT_TRUE(verifyJws(tokenOf("builder-token"), keys.publicKey, alg));
  EXPECT_EQ(alg, GetParam().alg);
}

INSTANTIATE_TEST_SUITE_P(Curves, TokensControllerEcdsaTest,
                         ::testing::Values(CurveCase{"P-256", "ES256"}, CurveCase{"P-384", "ES384"},
                                           CurveCase{"P-521", "ES512"}));

TEST(LegacyTokenGenerator, AKeyOfAnotherKindIsRejectedWithTheFileNamed) {
  KeyFiles keys({"-algorithm", "ED25519"});
  auto gen = LegacyTokenGenerator::fromPemFile(keys.privateKey);
  ASSERT_FALSE(gen.ok());
  EXPECT_NE(gen.status().message().find(keys.privateKey), std::string::npos) << gen.status().message();
}

TEST_F(TokensControllerTest, ADeletedTokenIsRemovedFromItsServiceAccountsSecrets) {
  KeyFiles keys({"-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"});
  auto sa = addServiceAccount("builder", {"builder-token", "other"});
  addTokenSecret("builder-token", sa);
  start(keys.privateKey);
  ASSERT_TRUE(eventually([&] { return !tokenOf("builder-token").empty(); }));
  ASSERT_TRUE(client::remove<Secret>(*server->client(), "ns", "builder-token").ok());
  ASSERT_TRUE(eventually([&] { return server->get<ServiceAccount>("ns", "builder")->secrets.size() == 1; }));
  EXPECT_EQ(server->get<ServiceAccount>("ns", "builder")->secrets[0].name, "other");
}

TEST_F(TokensControllerTest, TheTokensOfADeletedServiceAccountAreDeleted) {
  KeyFiles keys({"-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"});
  auto sa = addServiceAccount("builder");
  addTokenSecret("builder-token", sa);
  start(keys.privateKey);
  ASSERT_TRUE(eventually([&] { return !tokenOf("builder-token").empty(); }));
  ASSERT_TRUE(client::remove<ServiceAccount>(*server->client(), "ns", "builder").ok());
  EXPECT_TRUE(eventually([&] { return !server->get<Secret>("ns", "builder-token"); }));
}

}  // namespace
}  // namespace kcm::controllers
