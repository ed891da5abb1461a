#include "healthz/server.h"
#include "client/key_pair.h"

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>

#include "base/log.h"
#include "base/metrics.h"
#include "base/process_metrics.h"
#include "api/gen/authentication_v1_json.h"
#include "api/gen/authorization_v1_json.h"
#include "client/typed_client.h"
#include "healthz/tls_options.h"

namespace kcm::healthz {
namespace {

std::string readAll(const std::string& path, bool& ok) {
  std::ifstream f(path, std::ios::binary);
  ok = static_cast<bool>(f);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Pem {
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
};

Result<Pem> loadPem(const std::string& certFile, const std::string& keyFile, const std::string& certWhat,
                    const std::string& keyWhat) {
  bool ok;
  std::string c = readAll(certFile, ok);
  if (!ok) return Status(StatusCode::kInvalidArgument, "failed to read " + certWhat + " " + certFile);
  std::string k = readAll(keyFile, ok);
  if (!ok) return Status(StatusCode::kInvalidArgument, "failed to read " + keyWhat + " " + keyFile);
  Pem pem;
  BIO* cb = BIO_new_mem_buf(c.data(), static_cast<int>(c.size()));
  pem.cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
  BIO_free(cb);
  BIO* kb = BIO_new_mem_buf(k.data(), static_cast<int>(k.size()));
  pem.key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
  BIO_free(kb);
  if (!pem.cert) return Status(StatusCode::kInvalidArgument, certWhat + " " + certFile + " holds no PEM certificate");
  if (!pem.key) return Status(StatusCode::kInvalidArgument, keyWhat + " " + keyFile + " holds no PEM private key");
  return pem;
}

// Creates (or truncates) `path` with `mode` for a new file, and writes it with `write`.
Status writePem(const std::string& path, mode_t mode, const std::function<bool(FILE*)>& write) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  FILE* f = fd >= 0 ? ::fdopen(fd, "w") : nullptr;
  if (!f) {
    if (fd >= 0) ::close(fd);
    return Status(StatusCode::kInvalidArgument, "open " + path + ": " + std::strerror(errno));
  }
  const bool ok = write(f);
  if (std::fclose(f) != 0 || !ok) return Status(StatusCode::kInvalidArgument, "write " + path + " failed");
  return Status::Ok();
}

// A self-signed certificate for localhost and 127.0.0.1, as the serving options generate when no
// --tls-cert-file is given.
Result<Pem> selfSigned() {
  Pem p;
  EVP_PKEY_CTX* kctx = EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, nullptr);
  if (!kctx || EVP_PKEY_keygen_init(kctx) <= 0 || EVP_PKEY_CTX_set_rsa_keygen_bits(kctx, 2048) <= 0 ||
      EVP_PKEY_keygen(kctx, &p.key) <= 0) {
    EVP_PKEY_CTX_free(kctx);
    return Status(StatusCode::kInternal, "generating a serving key failed");
  }
  EVP_PKEY_CTX_free(kctx);
  p.cert = X509_new();
  X509_set_version(p.cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(p.cert), static_cast<long>(time(nullptr)));
  X509_gmtime_adj(X509_getm_notBefore(p.cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(p.cert), 365L * 24 * 3600);
  X509_set_pubkey(p.cert, p.key);
  X509_NAME* name = X509_get_subject_name(p.cert);
  std::string cn = "localhost@" + std::to_string(time(nullptr));
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(p.cert, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, p.cert, p.cert, nullptr, nullptr, 0);
  for (auto [nid, value] : {std::pair{NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1"},
                            std::pair{NID_ext_key_usage, "serverAuth"},
                            std::pair{NID_key_usage, "critical,digitalSignature,keyEncipherment"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    X509_add_ext(p.cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(p.cert, p.key, EVP_sha256());
  return p;
}

// k8s.io/apiserver's x509 authenticator: the remaining lifetime of a client certificate that authenticated.
void observeClientCertificateExpiration(X509* cert) {
  int days = 0, secs = 0;
  if (ASN1_TIME_diff(&days, &secs, nullptr, X509_get0_notAfter(cert)) != 1) return;
  static const std::vector<double> kBuckets = {0,      1800,   3600,    7200,    21600,   43200,    86400,
                                               172800, 345600, 604800, 2592000, 7776000, 15552000, 31104000};
  metrics::Registry::global()
      .histogram("apiserver_client_certificate_expiration_seconds",
                 "Distribution of the remaining lifetime on the certificate used to authenticate a request.", kBuckets)
      .observe(days * 86400.0 + secs);
}

// The peer's certificate chains to a CA in `store` and may be used for client authentication.
bool verifyChain(X509_STORE* store, X509* leaf, STACK_OF(X509)* chain) {
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  bool ok = X509_STORE_CTX_init(ctx, store, leaf, chain) == 1 &&
            X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT) == 1 && X509_verify_cert(ctx) == 1;
  X509_STORE_CTX_free(ctx);
  ERR_clear_error();
  return ok;
}

std::string commonName(X509* cert) {
  char buf[256] = {0};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof buf - 1);
  return buf;
}

}  // namespace

Result<std::unique_ptr<SecureServer>> SecureServer::create(const ServingConfig& cfg) {
  std::unique_ptr<SecureServer> s(new SecureServer());
  s->cfg_ = cfg;
  Pem pem;
  if (!cfg.certFile.empty() || !cfg.keyFile.empty()) {
    if (cfg.certFile.empty() || cfg.keyFile.empty())
      return Status(StatusCode::kInvalidArgument, "--tls-cert-file and --tls-private-key-file must be set together");
    auto p = loadPem(cfg.certFile, cfg.keyFile, "--tls-cert-file", "--tls-private-key-file");
    if (!p.ok()) return p.status();
    pem = *p;
  } else if (const std::string crt = cfg.certDir + "/kube-controller-manager.crt",
                                key = cfg.certDir + "/kube-controller-manager.key";
             !cfg.certDir.empty() && ::access(crt.c_str(), R_OK) == 0 && ::access(key.c_str(), R_OK) == 0) {
    // As upstream's MaybeDefaultWithSelfSignedCerts: a pair left in --cert-dir by an earlier run is served again.
    auto p = loadPem(crt, key, "--cert-dir certificate", "--cert-dir key");
    if (!p.ok()) return p.status();
    pem = *p;
  } else {
    auto p = selfSigned();
    if (!p.ok()) return p.status();
    pem = *p;
    if (cfg.certDir.empty()) {
      KLOG_INFO("Generated self-signed cert in-memory");
    } else {
      // Written as client-go's WriteCert and WriteKey do: the certificate 0644, the private key 0600.
      std::error_code ec;
      std::filesystem::create_directories(cfg.certDir, ec);
      if (Status w = writePem(crt, 0644, [&](FILE* f) { return PEM_write_X509(f, pem.cert) == 1; }); !w.ok()) return w;
      if (Status w = writePem(key, 0600, [&](FILE* f) {
            return PEM_write_PrivateKey(f, pem.key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
          });
          !w.ok())
        return w;
      KLOG_INFO("Generated self-signed cert (" + crt + ", " + key + ")");
    }
  }
  X509_STORE* ca = nullptr;
  X509_STORE* rhCa = nullptr;
  for (auto [file, flag, target] : {std::tuple{cfg.clientCAFile, "--client-ca-file", &ca},
                                    std::tuple{cfg.requestheaderClientCAFile, "--requestheader-client-ca-file", &rhCa}}) {
    if (file.empty()) continue;
    bool ok;
    std::string c = readAll(file, ok);
    if (!ok) return Status(StatusCode::kInvalidArgument, std::string("failed to read ") + flag + " " + file);
    X509_STORE* store = X509_STORE_new();
    BIO* b = BIO_new_mem_buf(c.data(), static_cast<int>(c.size()));
    int n = 0;
    while (X509* x = PEM_read_bio_X509(b, nullptr, nullptr, nullptr)) {
      X509_STORE_add_cert(store, x);
      X509_free(x);
      ++n;
    }
    ERR_clear_error();
    BIO_free(b);
    if (n == 0) return Status(StatusCode::kInvalidArgument, std::string(flag) + " " + file + " holds no PEM certificate");
    *target = store;
  }
  s->clientCA_ = ca;
  s->requestheaderCA_ = rhCa;
  int minVersion = TLS1_2_VERSION;
  if (cfg.tlsMinVersion == "VersionTLS13") minVersion = TLS1_3_VERSION;
  else if (cfg.tlsMinVersion == "VersionTLS11") minVersion = TLS1_1_VERSION;
  else if (cfg.tlsMinVersion == "VersionTLS10") minVersion = TLS1_VERSION;
  else if (!cfg.tlsMinVersion.empty() && cfg.tlsMinVersion != "VersionTLS12")
    return Status(StatusCode::kInvalidArgument, "--tls-min-version: unknown tls version \"" + cfg.tlsMinVersion + "\"");
  auto ciphers = openSslCipherList(cfg.tlsCipherSuites);
  if (!ciphers.ok()) return ciphers.status();
  auto sni = loadSniCertificates(cfg.sniCertKeys);
  if (!sni.ok()) return sni.status();
  auto sniCerts = std::make_shared<std::vector<SniCertificate>>(std::move(sni).value());
  s->sni_ = sniCerts;
  bool ciphersOk = true;
  s->server_ = std::make_unique<httplib::SSLServer>([pem, askForCerts = ca || rhCa, minVersion, list = *ciphers,
                                                     certs = sniCerts.get(), &ciphersOk](SSL_CTX& ctx) {
    SSL_CTX_set_min_proto_version(&ctx, minVersion);
    if (!list.empty() && SSL_CTX_set_cipher_list(&ctx, list.c_str()) != 1) {
      ciphersOk = false;
      return false;
    }
    installSni(ctx, certs);
    if (!client::privateKeyMatches(pem.key, X509_get0_pubkey(pem.cert)) ||
        SSL_CTX_use_certificate(&ctx, pem.cert) != 1 || SSL_CTX_use_PrivateKey(&ctx, pem.key) != 1)
      return false;
    if (askForCerts) {
      // Ask for a client certificate but do not require one: anonymous requests reach the authorizer. The chain
      // is verified after the handshake, against --client-ca-file or --requestheader-client-ca-file.
      SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, [](int, X509_STORE_CTX*) { return 1; });
    }
    return true;
  });
  if (!ciphersOk)
    return Status(StatusCode::kInvalidArgument, "--tls-cipher-suites: none of the suites given is available in this "
                                                "build's OpenSSL");
  if (!s->server_->is_valid()) return Status(StatusCode::kInvalidArgument, "the serving certificate and key do not match");

  auto authorize = [srv = s.get()](const httplib::Request& req, httplib::Response& res) {
    for (const auto& p : srv->cfg_.alwaysAllowPaths)
      if (req.path == p || (p.size() > 1 && p.back() == '*' && req.path.rfind(p.substr(0, p.size() - 1), 0) == 0))
        return true;
    // Authentication: a verified client certificate, else a bearer token (TokenReview), else anonymous.
    UserInfo user;
    bool certUser = false;
    if (req.ssl) {
      if (X509* peer = SSL_get_peer_certificate(req.ssl)) {
        STACK_OF(X509)* chain = SSL_get_peer_cert_chain(req.ssl);
        auto groupsOf = [](X509* cert) {
          std::vector<std::string> groups;
          X509_NAME* n = X509_get_subject_name(cert);
          for (int i = -1; (i = X509_NAME_get_index_by_NID(n, NID_organizationName, i)) >= 0;) {
            ASN1_STRING* d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(n, i));
            groups.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(d)), ASN1_STRING_length(d));
          }
          return groups;
        };
        // Request header authentication first (as upstream's union authenticator), then the client certificate.
        if (srv->requestheaderCA_ && verifyChain(srv->requestheaderCA_, peer, chain)) {
          const auto& allowed = srv->cfg_.requestheaderAllowedNames;
          std::string cn = commonName(peer);
          if (allowed.empty() || std::find(allowed.begin(), allowed.end(), cn) != allowed.end()) {
            for (const auto& h : srv->cfg_.requestheaderUsernameHeaders)
              if (std::string u = req.get_header_value(h); !u.empty()) {
                user.name = u;
                break;
              }
            if (user.name != "system:anonymous") {
              user.groups.clear();
              for (const auto& h : srv->cfg_.requestheaderGroupHeaders)
                for (size_t i = 0; i < req.get_header_value_count(h); ++i) user.groups.push_back(req.get_header_value(h, i));
              user.groups.push_back("system:authenticated");
              certUser = true;
            }
          }
        }
        if (!certUser && srv->clientCA_ && verifyChain(srv->clientCA_, peer, chain)) {
          observeClientCertificateExpiration(peer);
          user.name = commonName(peer);
          user.groups = groupsOf(peer);
          user.groups.push_back("system:authenticated");
          certUser = true;
        }
        X509_free(peer);
      }
    }
    std::string authz = req.get_header_value("Authorization");
    if (!certUser && authz.rfind("Bearer ", 0) == 0) user = srv->authenticateToken(authz.substr(7));
    if (std::find(user.groups.begin(), user.groups.end(), "system:masters") != user.groups.end()) return true;
    std::string reason;
    if (srv->authorizeRemote(user, req.path, reason)) return true;
    // The apiserver library's Forbidden: a metav1.Status, as upstream's responds.
    res.status = 403;
    nlohmann::ordered_json st = {
        {"kind", "Status"},
        {"apiVersion", "v1"},
        {"metadata", nlohmann::ordered_json::object()},
        {"status", "Failure"},
        {"message", "forbidden: User \"" + user.name + "\" cannot get path \"" + req.path + "\"" +
                        (reason.empty() ? "" : ": " + reason)},
        {"reason", "Forbidden"},
        {"details", nlohmann::ordered_json::object()},
        {"code", 403}};
    res.set_content(st.dump(2) + "\n", "application/json");
    return false;
  };
  auto health = [srv = s.get()](const httplib::Request& req, httplib::Response& res, const std::string& only) {
    int code = 200;
    std::string body = srv->healthz(only, req.has_param("verbose"), req.get_param_value("exclude"), code);
    res.status = code;
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_content(body, "text/plain; charset=utf-8");
  };
  s->server_->Get("/healthz", [health, authorize](const httplib::Request& req, httplib::Response& res) {
    if (authorize(req, res)) health(req, res, "");
  });
  s->server_->Get("/configz", [authorize, srv = s.get()](const httplib::Request& req, httplib::Response& res) {
    if (authorize(req, res)) res.set_content(srv->cfg_.configz, "application/json");
  });
  s->server_->Get(R"(/debug/controllers/.*)", [authorize, srv = s.get()](const httplib::Request& req,
                                                                        httplib::Response& res) {
    if (!authorize(req, res)) return;
    std::function<std::string()> page;
    {
      std::lock_guard l(srv->mu_);
      if (auto it = srv->debug_.find(req.path); it != srv->debug_.end()) page = it->second;
    }
    if (!page) {
      res.status = 404;
      res.set_content("404 page not found\n", "text/plain; charset=utf-8");
      return;
    }
    res.set_content(page(), "text/plain; charset=utf-8");
  });
  s->server_->Get("/metrics", [authorize](const httplib::Request& req, httplib::Response& res) {
    if (authorize(req, res)) {
      metrics::updateProcessMetrics();
      metrics::Registry::global().updateRegisteredCounts();
      res.set_content(metrics::Registry::global().render(), "text/plain; version=0.0.4; charset=utf-8");
    }
  });
  // Anything else, after authorization as upstream's filters do: Go's mux 404. Upstream serves the checks only
  // under /healthz itself (?verbose, ?exclude), with no /healthz/<check>, /livez or /readyz.
  s->server_->Get(".*", [authorize](const httplib::Request& req, httplib::Response& res) {
    if (!authorize(req, res)) return;
    res.status = 404;
    res.set_content("404 page not found\n", "text/plain; charset=utf-8");
  });
  return s;
}

SecureServer::~SecureServer() {
  stop();
  if (clientCA_) X509_STORE_free(clientCA_);
  if (requestheaderCA_) X509_STORE_free(requestheaderCA_);
}

UserInfo SecureServer::authenticateToken(const std::string& token) {
  UserInfo anonymous;
  if (!cfg_.authnClient) return anonymous;
  auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard l(cacheMu_);
    const Cached* c = authnCache_.find(token);
    if (c && now - c->at < cfg_.authnCacheTTL) return c->ok ? c->user : anonymous;
  }
  api::authentication::v1::TokenReview tr;
  tr.apiVersion = "authentication.k8s.io/v1";
  tr.kind = "TokenReview";
  tr.spec.token = token;
  auto r = client::create(*cfg_.authnClient, "", tr);
  Cached c{now, anonymous, false};
  if (r.ok() && r->status.authenticated) {
    c.ok = true;
    c.user.name = r->status.user.username;
    c.user.uid = r->status.user.uid;
    c.user.groups = api::toStdStrings(r->status.user.groups);
  }
  std::lock_guard l(cacheMu_);
  authnCache_[token] = c;
  return c.ok ? c.user : anonymous;
}

bool SecureServer::authorizeRemote(const UserInfo& user, const std::string& path, std::string& reason) {
  if (!cfg_.authzClient) {
    reason = "no --authorization-kubeconfig: only --authorization-always-allow-paths and system:masters are allowed";
    return false;
  }
  std::string key = user.name + "\x1f" + path;
  for (const auto& g : user.groups) key += "\x1f" + g;
  auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard l(cacheMu_);
    const Cached* c = authzCache_.find(key);
    if (c && now - c->at < cfg_.authzCacheTTL) return c->ok;
  }
  api::authorization::v1::SubjectAccessReview sar;
  sar.apiVersion = "authorization.k8s.io/v1";
  sar.kind = "SubjectAccessReview";
  sar.spec.user = user.name;
  sar.spec.uid = user.uid;
  sar.spec.groups = {user.groups.begin(), user.groups.end()};
  auto& nr = sar.spec.nonResourceAttributes.emplace();
  nr.path = path;
  nr.verb = "get";
  auto r = client::create(*cfg_.authzClient, "", sar);
  bool ok = r.ok() && r->status.allowed;
  if (r.ok()) reason = r->status.reason;
  std::lock_guard l(cacheMu_);
  authzCache_[key] = Cached{now, user, ok};
  return ok;
}

void SecureServer::addDebugHandler(const std::string& path, std::function<std::string()> content) {
  std::lock_guard l(mu_);
  debug_[path] = std::move(content);
}

void SecureServer::addHealthCheck(const std::string& name, Check check) {
  std::lock_guard l(mu_);
  checks_.emplace_back(name, std::move(check));
}

std::string SecureServer::healthz(const std::string& only, bool verbose, const std::string& exclude, int& code) {
  std::vector<std::pair<std::string, Check>> checks;
  {
    std::lock_guard l(mu_);
    checks = checks_;
  }
  std::string verboseOut, reasons;
  bool failed = false, found = only.empty();
  for (const auto& [name, check] : checks) {
    if (!only.empty() && name != only) continue;
    found = true;
    if (name == exclude) {
      verboseOut += "[+]" + name + " excluded: ok\n";
      continue;
    }
    Status s = check();
    if (s.ok()) {
      verboseOut += "[+]" + name + " ok\n";
    } else {
      failed = true;
      verboseOut += "[-]" + name + " failed: reason withheld\n";  // the response withholds it, the log has it
      reasons += (reasons.empty() ? "" : "; ") + ("[-]" + name + " failed: " + s.message());
    }
  }
  if (!found) {
    code = 404;
    return "404 page not found\n";
  }
  if (failed) {
    KLOG_V(2, "\"healthz check failed\" reasons=\"" + reasons + "\"");
    code = 500;
    return verboseOut + "healthz check failed\n";
  }
  if (verbose) return verboseOut + "healthz check passed\n";
  return "ok";
}

Status SecureServer::start() {
  port_ = cfg_.port;
  if (!server_->bind_to_port(cfg_.bindAddress, cfg_.port))
    return Status(StatusCode::kUnavailable, "failed to listen on " + cfg_.bindAddress + ":" + std::to_string(cfg_.port) +
                                                ": bind: address already in use or not available");
  // A small fixed pool for /healthz, /metrics and /configz (httplib's default is one thread per core, at least 8).
  server_->new_task_queue = [] { return new httplib::ThreadPool(2); };
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return Status::Ok();
}

void SecureServer::stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace kcm::healthz
