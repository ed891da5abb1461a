#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/support/base64.h"
#include "base/file.h"
#include "client/rest_config.h"

namespace kcm::client {
namespace {

Status bad(const std::string& file, const std::string& what) {
  return Status(StatusCode::kInvalidArgument, "kubeconfig " + file + ": " + what);
}

// Relative paths in a kubeconfig are relative to the file's directory (client-go ResolvePaths).
std::string resolve(const std::string& base, const std::string& p) {
  if (p.empty() || p[0] == '/') return p;
  return (std::filesystem::path(base).parent_path() / p).string();
}

// Finds the entry named `name` in list `key` (clusters/users/contexts), returning its `inner` map.
Result<YAML::Node> namedEntry(const YAML::Node& root, const std::string& file, const std::string& key,
                              const std::string& inner, const std::string& name) {
  const YAML::Node list = root[key];
  if (list && !list.IsSequence()) return bad(file, "'" + key + "' must be a list");
  if (list) {
    for (const auto& e : list) {
      if (!e.IsMap()) return bad(file, "an entry of '" + key + "' is not a map");
      if (e["name"] && e["name"].as<std::string>() == name) {
        YAML::Node n = e[inner];
        if (!n || n.IsNull()) return YAML::Node(YAML::NodeType::Map);
        if (!n.IsMap()) return bad(file, key + "[" + name + "]." + inner + " must be a map");
        return n;
      }
    }
  }
  return bad(file, key.substr(0, key.size() - 1) + " \"" + name + "\" not found (referenced by the context)");
}

std::string str(const YAML::Node& n, const char* key) {
  const YAML::Node v = n[key];
  return v && v.IsScalar() ? v.as<std::string>() : std::string();
}

// "*-data" fields are base64 in the file.
Result<std::string> dataOrFile(const YAML::Node& n, const std::string& file, const std::string& where,
                               const char* dataKey, const char* fileKey) {
  std::string data = str(n, dataKey);
  if (!data.empty()) {
    std::string out;
    if (!api::codec::base64Decode(data, out)) return bad(file, where + "." + dataKey + " is not valid base64");
    return out;
  }
  std::string path = str(n, fileKey);
  if (path.empty()) return std::string();
  auto content = readFile(resolve(file, path));
  if (!content.ok()) return bad(file, where + "." + fileKey + ": " + content.status().message());
  return std::move(content).value();
}

}  // namespace

Result<RestConfig> loadKubeconfig(const std::string& path, const std::string& masterOverride,
                                  const std::string& context) {
  auto text = readFile(path);
  if (!text.ok()) return bad(path, text.status().message());
  YAML::Node root;
  try {
    root = YAML::Load(text.value());
  } catch (const YAML::Exception& e) {
    return bad(path, std::string("invalid YAML: ") + e.what());
  }
  if (!root.IsMap()) return bad(path, "not a kubeconfig (expected a map with clusters, users, contexts)");
  try {
    std::string ctxName = context.empty() ? str(root, "current-context") : context;
    if (ctxName.empty()) return bad(path, "no current-context is set");
    auto ctx = namedEntry(root, path, "contexts", "context", ctxName);
    if (!ctx.ok()) return ctx.status();
    std::string clusterName = str(ctx.value(), "cluster"), userName = str(ctx.value(), "user");
    if (clusterName.empty()) return bad(path, "context \"" + ctxName + "\" has no cluster");

    auto cluster = namedEntry(root, path, "clusters", "cluster", clusterName);
    if (!cluster.ok()) return cluster.status();
    RestConfig cfg;
    cfg.source = "kubeconfig " + path;
    const std::string cw = "clusters[" + clusterName + "].cluster";
    cfg.host = masterOverride.empty() ? str(cluster.value(), "server") : masterOverride;
    if (cfg.host.empty()) return bad(path, cw + ".server is missing");
    if (cfg.host.rfind("https://", 0) != 0 && cfg.host.rfind("http://", 0) != 0)
      return bad(path, cw + ".server \"" + cfg.host + "\" must start with https:// or http://");
    while (cfg.host.size() > 8 && cfg.host.back() == '/') cfg.host.pop_back();
    auto ca = dataOrFile(cluster.value(), path, cw, "certificate-authority-data", "certificate-authority");
    if (!ca.ok()) return ca.status();
    cfg.caData = std::move(ca).value();
    if (const auto v = cluster.value()["insecure-skip-tls-verify"]; v && v.IsScalar()) cfg.insecure = v.as<bool>();
    cfg.tlsServerName = str(cluster.value(), "tls-server-name");

    if (!userName.empty()) {
      auto user = namedEntry(root, path, "users", "user", userName);
      if (!user.ok()) return user.status();
      const YAML::Node& u = user.value();
      const std::string uw = "users[" + userName + "].user";
      auto cert = dataOrFile(u, path, uw, "client-certificate-data", "client-certificate");
      if (!cert.ok()) return cert.status();
      auto key = dataOrFile(u, path, uw, "client-key-data", "client-key");
      if (!key.ok()) return key.status();
      cfg.certData = std::move(cert).value();
      cfg.keyData = std::move(key).value();
      if (cfg.certData.empty() != cfg.keyData.empty())
        return bad(path, uw + " has a client certificate without a key, or a key without a certificate");
      cfg.bearerToken = str(u, "token");
      if (std::string tf = str(u, "tokenFile"); !tf.empty()) cfg.bearerTokenFile = resolve(path, tf);
      cfg.username = str(u, "username");
      cfg.password = str(u, "password");
      if (const YAML::Node ex = u["exec"]; ex && ex.IsMap()) {
        ExecConfig e;
        e.command = str(ex, "command");
        if (e.command.empty()) return bad(path, uw + ".exec.command is missing");
        e.apiVersion = str(ex, "apiVersion");
        if (const YAML::Node a = ex["args"]; a && a.IsSequence())
          for (const auto& x : a) e.args.push_back(x.as<std::string>());
        if (const YAML::Node en = ex["env"]; en && en.IsSequence())
          for (const auto& x : en) e.env[str(x, "name")] = str(x, "value");
        cfg.exec = std::move(e);
      }
    }
    return cfg;
  } catch (const YAML::Exception& e) {
    return bad(path, std::string("malformed: ") + e.what());
  }
}

Result<RestConfig> inClusterConfig(const std::string& root) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port || !*host || !*port)
    return Status(StatusCode::kInvalidArgument,
                  "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
                  "must be defined");
  const std::string dir = root + "/var/run/secrets/kubernetes.io/serviceaccount";
  RestConfig cfg;
  cfg.source = "in-cluster configuration";
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6
  cfg.host = "https://" + h + ":" + port;
  cfg.bearerTokenFile = dir + "/token";
  auto token = readFile(cfg.bearerTokenFile);
  if (!token.ok()) return token.status().withContext("in-cluster configuration");
  cfg.bearerToken = token.value();
  while (!cfg.bearerToken.empty() && (cfg.bearerToken.back() == '\n' || cfg.bearerToken.back() == '\r'))
    cfg.bearerToken.pop_back();
  auto ca = readFile(dir + "/ca.crt");
  if (!ca.ok()) return ca.status().withContext("in-cluster configuration");
  cfg.caData = ca.value();
  return cfg;
}

Result<RestConfig> buildConfigFromFlags(const std::string& master, const std::string& kubeconfigPath) {
  if (!kubeconfigPath.empty()) return loadKubeconfig(kubeconfigPath, master);
  if (!master.empty()) {
    RestConfig cfg;
    cfg.source = "--master " + master;
    cfg.host = master;
    if (cfg.host.rfind("https://", 0) != 0 && cfg.host.rfind("http://", 0) != 0) cfg.host = "https://" + cfg.host;
    return cfg;
  }
  return inClusterConfig();
}

}  // namespace kcm::client
