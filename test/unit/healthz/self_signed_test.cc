// The serving certificate when none is given (upstream's MaybeDefaultWithSelfSignedCerts): in memory without
// --cert-dir; with it, written once (certificate 0644, private key 0600, as client-go's WriteCert/WriteKey) and served
// again by the next start.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "healthz/server.h"

namespace kcm::healthz {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

mode_t modeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 0777) : 0;
}

TEST(SelfSignedServing, CertDirPairIsWrittenPrivateAndReusedByTheNextStart) {
  const auto dir = std::filesystem::temp_directory_path() / ("kcm-cert-dir-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ServingConfig cfg;
  cfg.bindAddress = "127.0.0.1";
  cfg.port = 0;
  cfg.certDir = (dir / "nested").string();
  ASSERT_TRUE(SecureServer::create(cfg).ok());
  const std::string crt = cfg.certDir + "/kube-controller-manager.crt", key = cfg.certDir + "/kube-controller-manager.key";
  EXPECT_EQ(modeOf(key) & 0077, 0u) << std::oct << modeOf(key);  // no group or other access to the private key
  EXPECT_EQ(modeOf(key) & 0600, 0600u);
  EXPECT_NE(modeOf(crt) & 0400, 0u);
  const std::string firstCert = slurp(crt), firstKey = slurp(key);
  ASSERT_NE(firstCert.find("BEGIN CERTIFICATE"), std::string::npos);

  ASSERT_TRUE(SecureServer::create(cfg).ok());
  EXPECT_EQ(slurp(crt), firstCert) << "the pair of the earlier start is served again, not replaced";
  EXPECT_EQ(slurp(key), firstKey);

  std::ofstream(key, std::ios::trunc) << "not a key";
  auto broken = SecureServer::create(cfg);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find(key), std::string::npos) << broken.status().message();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kcm::healthz
