#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "api/support/codec.h"
#include "client/rest_config.h"

namespace kcm::client {
namespace {

class Kubeconfig : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kcm-kubeconfig-" + std::to_string(::getpid()) + "-" +
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& content) {
    auto p = dir_ / name;
    std::ofstream(p) << content;
    return p.string();
  }
  std::filesystem::path dir_;
};

std::string b64(const std::string& s) { return api::codec::base64Encode(s); }

std::string kubeconfig(const std::string& clusterExtra, const std::string& userBody,
                       const std::string& server = "https://127.0.0.1:6443") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n"
         "contexts:\n- name: ctx\n  context:\n    cluster: c1\n    user: u1\n"
         "clusters:\n- name: c1\n  cluster:\n    server: " + server + "\n" + clusterExtra +
         "users:\n- name: u1\n  user:\n" + userBody;
}

TEST_F(Kubeconfig, LoadsEmbeddedDataAndToken) {
  auto path = write("kc", kubeconfig("    certificate-authority-data: " + b64("CA PEM") + "\n    tls-server-name: api\n",
                                     "    token: abc\n    client-certificate-data: " + b64("CERT") +
                                         "\n    client-key-data: " + b64("KEY") + "\n"));
  auto cfg = loadKubeconfig(path);
  ASSERT_TRUE(cfg.ok()) << cfg.status().toString();
  EXPECT_EQ(cfg->host, "https://127.0.0.1:6443");
  EXPECT_EQ(cfg->caData, "CA PEM");
  EXPECT_EQ(cfg->certData, "CERT");
  EXPECT_EQ(cfg->keyData, "KEY");
  EXPECT_EQ(cfg->bearerToken, "abc");
  EXPECT_EQ(cfg->tlsServerName, "api");
  EXPECT_FALSE(cfg->insecure);
}

TEST_F(Kubeconfig, ResolvesFilePathsRelativeToTheKubeconfig) {
  write("ca.crt", "FILE CA");
  write("token", "t0k\n");
  auto path = write("kc", kubeconfig("    certificate-authority: ca.crt\n    insecure-skip-tls-verify: true\n",
                                     "    tokenFile: token\n"));
  auto cfg = loadKubeconfig(path);
  ASSERT_TRUE(cfg.ok()) << cfg.status().toString();
  EXPECT_EQ(cfg->caData, "FILE CA");
  EXPECT_EQ(cfg->bearerTokenFile, (dir_ / "token").string());
  EXPECT_TRUE(cfg->insecure);
}

TEST_F(Kubeconfig, MasterOverridesServer) {
  auto path = write("kc", kubeconfig("", "    token: x\n"));
  auto cfg = loadKubeconfig(path, "https://10.0.0.1:443");
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->host, "https://10.0.0.1:443");
}

TEST_F(Kubeconfig, ExecPlugin) {
  auto path = write("kc", kubeconfig("", "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                                         "      command: get-token\n      args: [\"--x\"]\n"
                                         "      env:\n      - name: A\n        value: b\n"));
  auto cfg = loadKubeconfig(path);
  ASSERT_TRUE(cfg.ok()) << cfg.status().toString();
  ASSERT_TRUE(cfg->exec.has_value());
  EXPECT_EQ(cfg->exec->command, "get-token");
  EXPECT_EQ(cfg->exec->args, std::vector<std::string>{"--x"});
  EXPECT_EQ(cfg->exec->env.at("A"), "b");
}

struct BrokenCase {
  const char* name;
  std::string content;
  const char* mustMention;
};

TEST_F(Kubeconfig, BrokenFilesGiveErrorsNamingFileAndKey) {
  const BrokenCase cases[] = {
      {"not-yaml", "clusters: [\n", "invalid YAML"},
      {"not-a-map", "- a\n- b\n", "not a kubeconfig"},
      {"no-current-context", "apiVersion: v1\nclusters: []\n", "current-context"},
      {"missing-context", "current-context: nope\ncontexts: []\n", "context \"nope\" not found"},
      {"missing-cluster", "current-context: c\ncontexts:\n- name: c\n  context: {cluster: x, user: u}\n",
       "cluster \"x\" not found"},
      {"no-server", kubeconfig("", "    token: x\n", "\"\""), "server is missing"},
      {"bad-scheme", kubeconfig("", "    token: x\n", "ftp://x"), "must start with https://"},
      {"bad-ca-base64", kubeconfig("    certificate-authority-data: '!!!'\n", "    token: x\n"),
       "certificate-authority-data is not valid base64"},
      {"missing-ca-file", kubeconfig("    certificate-authority: /nonexistent/ca.crt\n", "    token: x\n"),
       "certificate-authority: cannot read /nonexistent/ca.crt"},
      {"cert-without-key", kubeconfig("", "    client-certificate-data: " + b64("C") + "\n"),
       "client certificate without a key"},
      {"missing-user", kubeconfig("", "    token: x\n").replace(kubeconfig("", "").find("user: u1"), 8, "user: u9"),
       "user \"u9\" not found"},
      {"exec-without-command", kubeconfig("", "    exec:\n      apiVersion: v1\n"), "exec.command is missing"},
  };
  for (const auto& c : cases) {
    auto path = write(c.name, c.content);
    auto cfg = loadKubeconfig(path);
    ASSERT_FALSE(cfg.ok()) << c.name;
    EXPECT_EQ(cfg.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(cfg.status().message().find(path), std::string::npos) << c.name << ": " << cfg.status().message();
    EXPECT_NE(cfg.status().message().find(c.mustMention), std::string::npos)
        << c.name << ": " << cfg.status().message();
  }
}

TEST_F(Kubeconfig, MissingFileIsAnError) {
  auto cfg = loadKubeconfig("/nonexistent/kubeconfig");
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find("/nonexistent/kubeconfig"), std::string::npos);
}

TEST_F(Kubeconfig, InClusterConfig) {
  std::filesystem::create_directories(dir_ / "var/run/secrets/kubernetes.io/serviceaccount");
  write("var/run/secrets/kubernetes.io/serviceaccount/token", "sa-token\n");
  write("var/run/secrets/kubernetes.io/serviceaccount/ca.crt", "CA");
  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto cfg = inClusterConfig(dir_.string());
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(cfg.ok()) << cfg.status().toString();
  EXPECT_EQ(cfg->host, "https://10.96.0.1:443");
  EXPECT_EQ(cfg->bearerToken, "sa-token");
  EXPECT_EQ(cfg->caData, "CA");
  auto missing = inClusterConfig(dir_.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
}

}  // namespace
}  // namespace kcm::client
