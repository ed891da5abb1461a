// No secret material in the log at the highest verbosity (issue 22 "Security"): a kcm at --v=10 that holds the
// service-account signing key, the cluster signing CA and its kubeconfig's client key mints a legacy token and
// signs cluster-info with a bootstrap token; its log must contain none of the keys, the minted token, the bootstrap
// token's secret, nor any JWT (the per-controller tokens of --use-service-account-credentials included).
// Upstream's client-go prints response bodies from -v=8 on, Secrets included; ours never logs bodies.
#include <fstream>
#include <regex>
#include <sstream>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

std::string pki() { return Cluster::get().dir + "/pki"; }

struct VerboseKeyHolder {
  static constexpr const char* kControllers = "bootstrapsigner,tokencleaner,csrsigning,serviceaccount";
  static constexpr const char* kLogName = "kcm-security-v10";
  static std::vector<std::string> extraFlags() {
    return {"--v=10",
            "--service-account-private-key-file=" + pki() + "/sa.key",
            "--root-ca-file=" + pki() + "/ca.crt",
            "--cluster-signing-cert-file=" + pki() + "/ca.crt",
            "--cluster-signing-key-file=" + pki() + "/ca.key"};
  }
};
class Security : public SoloKcmSuite<VerboseKeyHolder> {};

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The base64 body lines of a PEM key (what a leak of the key would show), without its BEGIN/END lines.
std::vector<std::string> pemBodyLines(const std::string& pem) {
  std::vector<std::string> out;
  std::istringstream in(pem);
  for (std::string line; std::getline(in, line);)
    if (line.size() >= 32 && line.rfind("-----", 0) != 0) out.push_back(line);
  return out;
}

TEST_F(Security, NoKeyTokenOrBootstrapSecretInTheLogAtV10) {
  ASSERT_NE(kcm_, nullptr);
  const std::string id = "secaaa", tokenSecret = "q7w8e9r0t1y2u3i4";
  struct Cleanup {
    ~Cleanup() {
      kubectl({"delete", "configmap", "cluster-info", "-n", "kube-public", "--ignore-not-found"});
      kubectl({"delete", "secret", "-n", "kube-system", "bootstrap-token-secaaa", "--ignore-not-found"});
    }
  } cleanup;
  // A legacy service-account token, minted with the signing key.
  const Json secret = createLegacyTokenSecret(ns(), "robot", 20s);
  ASSERT_TRUE(secret.is_object()) << kcm_->log().substr(0, 3000);
  const std::string tokenB64 = secret["data"]["token"];
  const std::string token = exec({"sh", "-c", "printf %s '" + tokenB64 + "' | base64 -d"}).out;
  ASSERT_GT(token.size(), 100u);
  // cluster-info signed with a bootstrap token's secret.
  kubectl({"delete", "configmap", "cluster-info", "-n", "kube-public", "--ignore-not-found"});
  ASSERT_TRUE(kubectl({"create", "configmap", "cluster-info", "-n", "kube-public",
                       "--from-literal=kubeconfig=apiVersion: v1\nkind: Config\n"}).ok());
  ASSERT_TRUE(kubectl({"apply", "-f", "-"},
                      R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"bootstrap-token-)" + id +
                          R"(","namespace":"kube-system"},"type":"bootstrap.kubernetes.io/token","stringData":{"token-id":")" +
                          id + R"(","token-secret":")" + tokenSecret + R"(","usage-bootstrap-signing":"true"}})").ok());
  ASSERT_TRUE(waitFor([&] {
    return kubectlJson({"get", "configmap", "cluster-info", "-n", "kube-public"})["data"].contains("jws-kubeconfig-" + id);
  }, 20s)) << kcm_->log().substr(0, 3000);

  const std::string log = kcm_->log();
  // --v=10 is in force (else the check below proves little): the V(1) flag dump and V(4) sync lines are there.
  ASSERT_NE(log.find("FLAG: --v=\"10\""), std::string::npos) << log.substr(0, 3000);
  std::vector<std::pair<std::string, std::string>> needles = {
      {"the minted token", token},
      {"the minted token's signature", token.substr(token.rfind('.') + 1)},
      {"the minted token as stored", tokenB64},
      {"the bootstrap token's secret", tokenSecret},
      {"a JWT (header {\"alg\":...)", "eyJhbGci"},
  };
  for (const char* key : {"sa.key", "ca.key"})
    for (const auto& line : pemBodyLines(readAll(pki() + "/" + key))) needles.push_back({key, line});
  std::smatch m;
  const std::string conf = readAll(Cluster::get().dir + "/controller-manager.conf");
  ASSERT_TRUE(std::regex_search(conf, m, std::regex("client-key-data: *(\\S+)")));
  const std::string clientKeyB64 = m[1];
  needles.push_back({"the kubeconfig's client-key-data", clientKeyB64.substr(0, 64)});
  for (const auto& line : pemBodyLines(exec({"sh", "-c", "printf %s '" + clientKeyB64 + "' | base64 -d"}).out))
    needles.push_back({"the kubeconfig's client key", line});
  ASSERT_GT(needles.size(), 20u);
  for (const auto& [what, needle] : needles) {
    const size_t at = log.find(needle);
    EXPECT_EQ(at, std::string::npos) << what << " is in the log: ..."
                                     << log.substr(at == std::string::npos ? 0 : (at > 200 ? at - 200 : 0), 400);
  }
}

}  // namespace
}  // namespace kcm::e2e
