#pragma once
// The secure serving endpoint of kube-controller-manager (--bind-address:--secure-port, 0.0.0.0:10257):
// HTTPS only, TLS 1.2 minimum, a self-signed certificate when none is given. Started before leader election so
// standbys answer health checks too.
//   /healthz                     "ok"; ?verbose lists "[+]name ok"; failures are 500 "[-]name failed: reason
//                                withheld"; ?exclude=name skips a check (no /healthz/<check>, /livez or /readyz:
//                                upstream answers those 404 too)
//   /metrics                     Prometheus text
//   /debug/controllers/...       controllers' debug pages (the garbage collector's graph in DOT)
// Authentication: client certificates verified against --client-ca-file (user = CN, groups = O). Authorization:
// --authorization-always-allow-paths, and group system:masters; everything else is 403 with a metav1.Status body (delegated
// SubjectAccessReview is not implemented yet, and says so in its 403 reason).
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/lru.h"
#include "base/status.h"

namespace kcm::client {
class RestClient;
}

namespace httplib {
class SSLServer;
}
struct x509_store_st;

namespace kcm::healthz {

struct ServingConfig {
  std::string bindAddress = "0.0.0.0";
  int port = 10257;
  std::string certFile, keyFile;  // both or neither
  std::string certDir;            // where a self-signed pair is written (kube-controller-manager.{crt,key})
  std::string clientCAFile;
  // Front-proxy (request header) authentication: a client certificate signed by this CA, with a CN in
  // allowedNames (empty: any), vouches for the user named in the headers.
  std::string requestheaderClientCAFile;
  std::vector<std::string> requestheaderAllowedNames;
  std::vector<std::string> requestheaderUsernameHeaders = {"x-remote-user"};
  std::vector<std::string> requestheaderGroupHeaders = {"x-remote-group"};
  std::string tlsMinVersion;  // "VersionTLS12" (default) or "VersionTLS13"; 1.0/1.1 as asked
  std::vector<std::string> tlsCipherSuites;  // Go names (--tls-cipher-suites); empty: OpenSSL's defaults
  std::vector<std::string> sniCertKeys;      // --tls-sni-cert-key entries: "cert,key[:name,...]"
  std::vector<std::string> alwaysAllowPaths = {"/healthz", "/readyz", "/livez"};
  // Delegated authentication (TokenReview) and authorization (SubjectAccessReview), from
  // --authentication-kubeconfig / --authorization-kubeconfig; null = not configured.
  std::shared_ptr<client::RestClient> authnClient, authzClient;
  std::chrono::seconds authnCacheTTL{10}, authzCacheTTL{10};
  // Served at /configz (the effective configuration as JSON).
  std::string configz = "{}";
};

struct UserInfo {
  std::string name = "system:anonymous";
  std::string uid;
  std::vector<std::string> groups = {"system:unauthenticated"};
};

using Check = std::function<Status()>;

class SecureServer {
 public:
  static Result<std::unique_ptr<SecureServer>> create(const ServingConfig& cfg);
  ~SecureServer();
  void addHealthCheck(const std::string& name, Check check);
  // A page under /debug/controllers/ (text/plain), authorized like /metrics. Safe while serving.
  void addDebugHandler(const std::string& path, std::function<std::string()> content);
  // Binds and serves on a background thread. Errors name the address (e.g. port in use).
  Status start();
  void stop();
  int port() const { return port_; }

 private:
  SecureServer() = default;
  std::string healthz(const std::string& only, bool verbose, const std::string& exclude, int& code);
  UserInfo authenticateToken(const std::string& token);
  bool authorizeRemote(const UserInfo& user, const std::string& path, std::string& reason);

  ServingConfig cfg_;
  std::shared_ptr<void> sni_;  // the SNI certificates the SSL_CTX callback selects from
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<std::pair<std::string, Check>> checks_;
  std::map<std::string, std::function<std::string()>> debug_;  // guarded by mu_
  struct Cached {
    std::chrono::steady_clock::time_point at;
    UserInfo user;
    bool ok = false;
  };
  x509_store_st* clientCA_ = nullptr;
  x509_store_st* requestheaderCA_ = nullptr;
  std::mutex cacheMu_;
  static constexpr size_t kAuthCacheEntries = 8192;
  // Bounded like upstream's webhook authorizer cache (an LRU of 8192); an entry also expires after its TTL.
  LruMap<Cached> authnCache_{kAuthCacheEntries}, authzCache_{kAuthCacheEntries};
};

}  // namespace kcm::healthz
