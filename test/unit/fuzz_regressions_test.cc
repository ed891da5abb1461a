// Inputs the fuzz targets (test/fuzz, hack/fuzz.sh) found crashing or breaking a property, kept as regression tests
// (the same inputs are seeds under test/fuzz/corpus/<target>/).
#include <gtest/gtest.h>

#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "api/gen/core_v1_json.h"
#include "api/support/selector.h"
#include "api/support/types.h"
#include "client/key_pair.h"
#include "client/rest_client.h"
#include "controllers/certificates/authority.h"
#include "options/options.h"
#include "quota/resources.h"

namespace kcm {
namespace {

using namespace std::chrono_literals;

// fuzz_quantity: "300ns." threw std::invalid_argument out of std::stold (a crash on --min-resync-period=300ns.).
// Go's grammar: a digit on one side of the dot at least, no second dot.
TEST(FuzzRegressions, DurationsParseAsGoDoesAndNeverThrow) {
  for (const char* bad : {"300ns.", ".", "1.5.3s", "1..s", "s", "1e3s"})
    EXPECT_FALSE(options::parseDuration(bad).ok()) << bad;
  EXPECT_FALSE(options::parseDuration("1" + std::string(5000, '0') + "s").ok());  // strtold's inf: too long
  EXPECT_EQ(options::parseDuration("5.s").value(), 5s);
  EXPECT_EQ(options::parseDuration(".5s").value(), 500ms);
  EXPECT_EQ(options::parseDuration("1h2m3.5s").value(), 1h + 2min + 3500ms);
}

// fuzz_quantity: durations went through long double, so "2.000550805s" came out 1 ns short of Go's (and of the
// text we print for it). Now Go's integer algorithm: the same nanosecond, the same overflow limits, the same texts.
TEST(FuzzRegressions, DurationsAreExactToTheNanosecondAsGos) {
  EXPECT_EQ(options::parseDuration("2.000550805s").value().count(), 2000550805);
  EXPECT_EQ(options::parseDuration("0h2.000550805006s").value().count(), 2000550805);
  EXPECT_EQ(options::parseDuration("1.1h").value().count(), 3960000000000);
  EXPECT_EQ(options::parseDuration("9223372036854775807ns").value().count(), INT64_MAX);
  EXPECT_FALSE(options::parseDuration("9223372036854775808ns").ok());
  EXPECT_EQ(options::parseDuration("-9223372036854775808ns").value().count(), INT64_MIN);
  EXPECT_EQ(options::parseDuration("0.0000000000000000000000001s").value().count(), 0);
  EXPECT_EQ(options::parseDuration("5x\xff").status().message(), "time: unknown unit \"x\\xff\" in duration \"5x\\xff\"");
  EXPECT_EQ(options::parseDuration("5").status().message(), "time: missing unit in duration \"5\"");
}

// fuzz_api_codec: an integer field given as a float beyond int64 (3.9e19) was cast with undefined behaviour.
TEST(FuzzRegressions, IntegerFieldsBeyondInt64AreOutOfRange) {
  api::core::v1::Pod pod;
  EXPECT_FALSE(api::core::v1::fromJson(R"({"metadata":{"generation":3.92234e19}})", pod).ok());
  EXPECT_FALSE(api::core::v1::fromJson(R"({"metadata":{"generation":-1e300}})", pod).ok());
  ASSERT_TRUE(api::core::v1::fromJson(R"({"metadata":{"generation":1e3}})", pod).ok());
  EXPECT_EQ(pod.metadata.generation, 1000);
}

// fuzz_quantity: "0E-22" overflowed 128 bits (10^22 times INT64_MAX) computing its value. Values are exact in
// 128 bits where they fit and saturate or round up (as Go's ceiling) where they do not.
TEST(FuzzRegressions, QuantityValuesNeverOverflow) {
  auto value = [](const std::string& s) { return api::Quantity::parse(s)->value(); };
  auto milli = [](const std::string& s) { return api::Quantity::parse(s)->milliValue(); };
  EXPECT_EQ(value("0E-22"), 0);
  EXPECT_EQ(value("1e-40"), 1);   // a fraction of a unit rounds up
  EXPECT_EQ(value("-1e-40"), 0);  // and a negative one truncates
  EXPECT_EQ(value("1" + std::string(30, '0') + "Ei"), INT64_MAX);
  EXPECT_EQ(value("-1" + std::string(30, '0') + "Ei"), INT64_MIN);
  EXPECT_EQ(value("0." + std::string(40, '0') + "5Ei"), 1);
  EXPECT_EQ(value("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(value("9223372036854775808"), INT64_MAX);
  EXPECT_EQ(milli("1.5Ki"), 1536000);
  EXPECT_EQ(milli("0.1"), 100);
  EXPECT_EQ(milli("100m"), 100);
  EXPECT_EQ(value("1.0001"), 2);
  EXPECT_EQ(value("12e-1"), 2);
}

// fuzz_quantity: quota::Amount::parse multiplied 32 digits by 10^9 nanos past 128 bits. Now exact where it fits,
// capped (2^120 nanos) beyond, at least 1n for any non-zero value.
TEST(FuzzRegressions, QuotaAmountsOfManyDigitsParseWithoutOverflow) {
  quota::Amount a, b;
  ASSERT_TRUE(quota::Amount::parse("24637100000010962463713375588184", a));
  ASSERT_TRUE(quota::Amount::parse(a.canonical(), b));
  EXPECT_EQ(a.cmp(b), 0) << a.canonical();
  ASSERT_TRUE(quota::Amount::parse("0." + std::string(45, '0') + "1", a));
  EXPECT_EQ(a.canonical(), "1n");
  ASSERT_TRUE(quota::Amount::parse("0." + std::string(40, '0') + "5Ei", a));
  EXPECT_EQ(a.canonical(), "1n");
  // BinarySI is capped at the largest int64, as ParseQuantity caps it (its canonical text is then suffix-less).
  ASSERT_TRUE(quota::Amount::parse("2299904.Ei", a));
  EXPECT_EQ(a.canonical(), "9223372036854775807");
  ASSERT_TRUE(quota::Amount::parse("1.5Gi", a));
  EXPECT_EQ(a.canonical(), "1536Mi");
  ASSERT_TRUE(quota::Amount::parse("100m", a));
  EXPECT_EQ(a.milliValue(), 100);
  ASSERT_TRUE(quota::Amount::parse("1e-3", a));
  EXPECT_EQ(a.milliValue(), 1);
}

// fuzz_selector: a LabelSelector's In/NotIn values were not checked as label values (LabelSelectorAsSelector's
// labels.NewRequirement refuses them), so the selector printed text that does not parse back.
TEST(FuzzRegressions, LabelSelectorValuesMustBeLabelValues) {
  api::meta::v1::LabelSelector ls;
  api::meta::v1::LabelSelectorRequirement r;
  r.key = "tier";
  r.operator_ = "In";
  r.values = {"a", "bi.ideappiero/n"};
  ls.matchExpressions.push_back(r);
  auto s = api::selectorFromLabelSelector(&ls);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("invalid label value: \"bi.ideappiero/n\""), std::string::npos);
  ls.matchExpressions[0].values = {"a", "b"};
  ASSERT_TRUE(api::selectorFromLabelSelector(&ls).ok());
  EXPECT_EQ(api::selectorFromLabelSelector(&ls)->str(), "tier in (a,b)");
}

// fuzz_csr: a CA key file whose private scalar was damaged but whose embedded public point still matches the
// certificate passed X509_check_private_key; the CA then signed certificates nothing verifies. Go's
// tls.X509KeyPair derives the public key from the private part and refuses the pair.
// The pair of the fuzz target's seed (test/fuzz/corpus/fuzz_csr/ca-pair) and the damaged pair it found
// (regression-e641...): "c\n<cert PEM>\0<key PEM>".
std::pair<std::string, std::string> caPair(const std::string& corpusFile) {
  std::ifstream in(std::string(KCM_FUZZ_CORPUS_DIR) + "/fuzz_csr/" + corpusFile, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t nul = all.find('\0');
  if (all.size() < 2 || nul == std::string::npos) return {};
  return {all.substr(2, nul - 2), all.substr(nul + 1)};
}

EVP_PKEY* readKey(const std::string& pem) {
  BIO* b = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* k = PEM_read_bio_PrivateKey(b, nullptr, nullptr, nullptr);
  BIO_free(b);
  return k;
}

TEST(FuzzRegressions, AKeyWhosePrivatePartDoesNotMatchItsCertificateIsRefused) {
  const auto [caCert, goodKey] = caPair("ca-pair");
  const std::string damagedKey = caPair("regression-e641838bb7ed5e748c91cd9560a6b7e91c3f82b0").second;
  ASSERT_FALSE(caCert.empty());
  ASSERT_FALSE(damagedKey.empty());
  BIO* b = BIO_new_mem_buf(caCert.data(), static_cast<int>(caCert.size()));
  X509* cert = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
  BIO_free(b);
  ASSERT_NE(cert, nullptr);
  EVP_PKEY *good = readKey(goodKey), *damaged = readKey(damagedKey);
  ASSERT_NE(good, nullptr);
  ASSERT_NE(damaged, nullptr);  // it still parses
  EXPECT_TRUE(client::privateKeyMatches(good, X509_get0_pubkey(cert)));
  EXPECT_EQ(X509_check_private_key(cert, damaged), 1);  // what let it through before
  EXPECT_FALSE(client::privateKeyMatches(damaged, X509_get0_pubkey(cert)));
  EVP_PKEY_free(good);
  EVP_PKEY_free(damaged);
  X509_free(cert);
  EXPECT_TRUE(controllers::certificates::CertificateAuthority::fromPEM(caCert, goodKey, "ca").ok());
  auto refused = controllers::certificates::CertificateAuthority::fromPEM(caCert, damagedKey, "ca");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("private key does not match public key"), std::string::npos);
  // The same pair as a kubeconfig's client certificate and key.
  client::RestConfig cfg;
  cfg.host = "https://127.0.0.1:1";
  cfg.certData = caCert;
  cfg.keyData = damagedKey;
  auto c = client::RestClient::create(cfg);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("client certificate and key do not match"), std::string::npos);
  cfg.keyData = goodKey;
  EXPECT_TRUE(client::RestClient::create(cfg).ok());
}

}  // namespace
}  // namespace kcm
