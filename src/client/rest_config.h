#pragma once
// RestConfig: how to reach and authenticate to the apiserver (client-go's rest.Config, the parts kcm uses).
// Built from a kubeconfig file, a --master override, or the in-cluster service-account environment.
// Plain value; copy freely.
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "base/status.h"

namespace kcm::client {

class WriteFence;  // client/write_fence.h

// An exec credential plugin (kubeconfig users[].user.exec).
struct ExecConfig {
  std::string command;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  std::string apiVersion;  // client.authentication.k8s.io/v1 or v1beta1
};

struct RestConfig {
  std::string host;  // "https://127.0.0.1:6443" (scheme, host, port; no path)
  std::string caData;        // PEM; empty = system roots
  std::string certData;      // PEM client certificate
  std::string keyData;       // PEM client key
  std::string bearerToken;
  std::string bearerTokenFile;  // re-read when it changes (projected tokens)
  std::string username, password;
  bool insecure = false;        // insecure-skip-tls-verify
  std::string tlsServerName;    // overrides the name the server certificate is verified against
  std::optional<ExecConfig> exec;
  // A bearer token provider (per-controller service-account tokens): called when the current token is older
  // than its refresh time; returns the token and how long until it should be refreshed.
  std::function<Result<std::pair<std::string, std::chrono::seconds>>()> tokenSource;
  float qps = 20;  // kcm defaults (--kube-api-qps/--kube-api-burst)
  int burst = 30;
  std::string userAgent;
  std::string contentType = "application/json";
  int timeoutSeconds = 0;  // 0 = no overall limit; individual reads still time out
  // Shared by the clients built from this config (and its copies): once stop is requested, their requests end
  // at once with kCancelled, as client-go's requests do when the context they were given is cancelled. The
  // manager cancels its controllers' clients this way at shutdown. Null: never.
  std::shared_ptr<std::stop_source> cancel;
  // The leader's write fence (client/write_fence.h): while it is closed, requests other than GET and HEAD fail
  // with kCancelled without being sent. Null: writes are never fenced (no leader election).
  std::shared_ptr<const WriteFence> fence;
  // Where it came from, for error messages ("kubeconfig /etc/kubernetes/controller-manager.conf").
  std::string source;
};

// Loads a kubeconfig file (current-context, or `context` when given) and applies a --master override.
// Errors name the file and the missing or bad key.
Result<RestConfig> loadKubeconfig(const std::string& path, const std::string& masterOverride = "",
                                  const std::string& context = "");

// The in-cluster config: KUBERNETES_SERVICE_HOST/PORT, the service-account token file and CA.
// `root` prefixes /var/run/secrets/kubernetes.io/serviceaccount (tests).
Result<RestConfig> inClusterConfig(const std::string& root = "");

// kcm's BuildConfigFromFlags: --kubeconfig, else --master alone (insecure, no auth), else in-cluster.
Result<RestConfig> buildConfigFromFlags(const std::string& master, const std::string& kubeconfigPath);

}  // namespace kcm::client
