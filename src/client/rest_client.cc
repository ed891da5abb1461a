#include "client/rest_client.h"
#include "client/key_pair.h"
#include "client/write_fence.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "api/gen/meta_v1_json.h"
#include "api/support/base64.h"
#include "api/support/proto.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/subprocess.h"
#include "version/version.h"

namespace kcm::client {

// Parsed TLS material, shared by every connection of a client. OpenSSL objects are reference counted;
// each connection gets its own X509_STORE (SSL_CTX_set_cert_store takes ownership).
struct RestClient::Tls {
  std::vector<X509*> cas;
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  ~Tls() {
    for (X509* c : cas) X509_free(c);
    if (cert) X509_free(cert);
    if (key) EVP_PKEY_free(key);
  }
  X509_STORE* newStore() const {
    X509_STORE* s = X509_STORE_new();
    for (X509* c : cas) X509_STORE_add_cert(s, c);
    return s;
  }
};

namespace {

std::vector<X509*> parseCerts(const std::string& pem) {
  std::vector<X509*> out;
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  while (X509* c = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    // Every connection's handshake reads these shared certificates; OpenSSL caches their decoded extensions (key
    // identifiers, usages) on first use. Done here, once, before any connection exists, no handshake writes them
    // while another reads (the TSan run of the e2e suite saw exactly that race inside libcrypto).
    X509_check_purpose(c, -1, 0);
    out.push_back(c);
  }
  ERR_clear_error();
  BIO_free(bio);
  return out;
}

EVP_PKEY* parseKey(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* k = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  ERR_clear_error();
  BIO_free(bio);
  return k;
}

bool isIpAddress(const std::string& h) {
  unsigned char buf[16];
  return inet_pton(AF_INET, h.c_str(), buf) == 1 || inet_pton(AF_INET6, h.c_str(), buf) == 1;
}

// Retry-After in seconds (client-go's retryAfterSeconds: an integer, else none); -1 when absent or not a number.
int parseRetryAfter(const std::string& v) {
  if (v.empty()) return -1;
  try {
    size_t used = 0;
    const int n = std::stoi(v, &used);
    return used == v.size() ? std::max(0, n) : -1;
  } catch (...) {
    return -1;
  }
}

// metav1.StatusReason values apimachinery knows (errors.go knownReasons): a 405 carrying another of these is
// not MethodNotAllowed (errors.IsMethodNotSupported).
bool knownReason(const std::string& r) {
  static const std::set<std::string> known = {
      "Unauthorized", "Forbidden", "NotFound", "AlreadyExists", "Conflict", "Gone", "Invalid", "ServerTimeout",
      "StoreReadError", "Timeout", "TooManyRequests", "BadRequest", "MethodNotAllowed", "NotAcceptable",
      "RequestEntityTooLarge", "UnsupportedMediaType", "InternalError", "Expired", "ServiceUnavailable"};
  return known.count(r) > 0;
}

StatusCode codeFor(int http, const std::string& reason) {
  if (reason == "AlreadyExists") return StatusCode::kAlreadyExists;
  if (reason == "Expired" || reason == "Gone") return StatusCode::kGone;
  if (reason == "MethodNotAllowed" || (http == 405 && !knownReason(reason))) return StatusCode::kMethodNotAllowed;
  switch (http) {
    case 400: return StatusCode::kInvalidArgument;
    case 401: return StatusCode::kUnauthorized;
    case 403: return StatusCode::kForbidden;
    case 404: return StatusCode::kNotFound;
    case 405: return StatusCode::kInvalidArgument;
    case 408: case 504: return StatusCode::kTimeout;
    case 409: return StatusCode::kConflict;
    case 410: return StatusCode::kGone;
    case 422: return StatusCode::kInvalid;
    case 429: return StatusCode::kTooManyRequests;
    case 503: return StatusCode::kUnavailable;
    default: return StatusCode::kInternal;
  }
}

}  // namespace

std::string urlEncode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// The group, resource and name a request path addresses ("/apis/G/V/namespaces/NS/RESOURCE/NAME/SUB"), as
// client-go's Request knows them; empty resource for paths outside the API (/healthz, /version).
struct PathResource {
  std::string group, resource, name;
};
PathResource pathResource(std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  std::vector<std::string_view> segs;
  for (size_t i = 0; i < path.size();) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) segs.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  PathResource out;
  size_t at;
  if (segs.size() >= 2 && segs[0] == "api") at = 2;
  else if (segs.size() >= 3 && segs[0] == "apis") out.group = std::string(segs[1]), at = 3;
  else return {};
  // namespaces/NS/RESOURCE..., except a namespace's own subresources (namespaces/NAME/status, /finalize).
  const bool namespaceSub = segs.size() == at + 3 && (segs[at + 2] == "status" || segs[at + 2] == "finalize");
  if (segs.size() >= at + 3 && segs[at] == "namespaces" && !namespaceSub) at += 2;
  if (segs.size() <= at) return {};
  out.resource = std::string(segs[at]);
  if (segs.size() > at + 1) out.name = std::string(segs[at + 1]);
  return out;
}

// client-go's newUnstructuredResponseError and errors.NewGenericServerResponse: the reason and message of an error
// reply that carries no Status (a proxy's or the aggregator's plain-text 404, an empty 503).
std::pair<std::string, std::string> genericServerResponse(int code, const std::string& method,
                                                          const std::string& target, std::string_view body) {
  std::string serverMessage = "unknown";
  if (!body.empty() && nlohmann::json::parse(body, nullptr, false).is_discarded()) {  // a text reply
    std::string_view b = body.substr(0, 2048);
    const auto first = b.find_first_not_of(" \t\r\n");
    const auto last = b.find_last_not_of(" \t\r\n");
    serverMessage = first == std::string_view::npos ? "" : std::string(b.substr(first, last - first + 1));
  }
  std::string reason = "Unknown";
  std::string message =
      "the server responded with the status code " + std::to_string(code) + " but did not return more information";
  switch (code) {
    case 409: reason = method == "POST" ? "AlreadyExists" : "Conflict"; message = "the server reported a conflict"; break;
    case 404: reason = "NotFound"; message = "the server could not find the requested resource"; break;
    case 400: reason = "BadRequest"; message = "the server rejected our request for an unknown reason"; break;
    case 401: reason = "Unauthorized"; message = "the server has asked for the client to provide credentials"; break;
    case 403: reason = "Forbidden"; message = serverMessage; break;
    case 406:
      reason = "NotAcceptable";
      message = serverMessage.empty() || serverMessage == "unknown"
                    ? "the server was unable to respond with a content type that the client supports"
                    : serverMessage;
      break;
    case 415: reason = "UnsupportedMediaType"; message = serverMessage; break;
    case 405: reason = "MethodNotAllowed"; message = "the server does not allow this method on the requested resource"; break;
    case 422: reason = "Invalid"; message = "the server rejected our request due to an error in our request"; break;
    case 503: reason = "ServiceUnavailable"; message = "the server is currently unable to handle the request"; break;
    case 504:
      reason = "Timeout";
      message = "the server was unable to return a response in the time allotted, but may still be processing the request";
      break;
    case 429:
      reason = "TooManyRequests";
      message = "the server has received too many requests and has asked us to try again later";
      break;
    default:
      if (code >= 500) {
        reason = "InternalError";
        message = "an error on the server (" + nlohmann::json(serverMessage).dump() +
                  ") has prevented the request from succeeding";
      }
  }
  const PathResource r = pathResource(target);
  if (!r.resource.empty()) {
    std::string verb = method;
    std::transform(verb.begin(), verb.end(), verb.begin(), [](unsigned char c) { return std::tolower(c); });
    message += " (" + verb + " " + r.resource + (r.group.empty() ? "" : "." + r.group) +
               (r.name.empty() ? "" : " " + r.name) + ")";
  }
  return {reason, message};
}

Status statusFromResponse(const std::string& method, const std::string& path, int httpCode, std::string_view body,
                          int retryAfterSeconds) {
  std::string reason, message;
  if (api::proto::isEnvelope(body)) {  // an error answer to `Accept: application/vnd.kubernetes.protobuf`
    api::meta::v1::Status st;
    if (api::meta::v1::fromJson(body, st).ok() && st.kind == "Status") {
      reason.assign(st.reason.view());
      message.assign(st.message.view());
    }
  } else if (auto j = nlohmann::json::parse(body, nullptr, false); j.is_object() && j.value("kind", "") == "Status") {
    reason = j.value("reason", "");
    message = j.value("message", "");
  }
  if (message.empty()) std::tie(reason, message) = genericServerResponse(httpCode, method, path, body);
  if (retryAfterSeconds > 0) message += " (retry after " + std::to_string(retryAfterSeconds) + "s)";
  return Status(codeFor(httpCode, reason), message);
}

// How many requests of a client are on the wire at once. client-go multiplexes a client's requests over one
// HTTP/2 connection (up to the server's 250 streams), so its controllers are paced by the rate limiter alone; over
// HTTP/1.1 a pool of connections stands in for it, each with TLS state of its own, so it is sized to what the
// rate limiter lets through rather than to the callers: enough connections to spend `qps` at 100 ms per request
// (6 at the default --kube-api-qps=20, 30 at 300), 64 when unlimited.
namespace {
int maxConnectionsFor(double qps) {
  if (qps <= 0) return 64;
  return std::clamp(static_cast<int>(std::ceil(qps / 10)), 6, 64);
}
}  // namespace

RestClient::RestClient(RestConfig config, Clock& clock)
    : config_(std::move(config)),
      clock_(clock),
      limiter_(config_.qps, config_.burst, clock),
      maxConnections_(maxConnectionsFor(config_.qps)) {}

RestClient::~RestClient() = default;

namespace {

// client-go caches one transport per TLS configuration (not per host or credential): the transport_* metrics
// count clients built with a TLS configuration seen before (hit) or new (miss). The exec-plugin metrics are
// registered as upstream's are, whether or not a plugin is used.
void countTransport(const RestConfig& config) {
  static std::mutex mu;
  static std::set<std::string> seen;
  const std::string key = config.caData + '\0' + config.certData + '\0' + config.keyData + '\0' +
                          (config.insecure ? "1" : "0") + '\0' + config.tlsServerName;
  size_t entries;
  bool hit;
  {
    std::lock_guard l(mu);
    hit = !seen.insert(key).second;
    entries = seen.size();
  }
  auto& reg = metrics::Registry::global();
  reg.gauge("rest_client_transport_cache_entries", "Number of transport entries in the internal cache.")
      .set(static_cast<double>(entries));
  reg.counter("rest_client_transport_create_calls_total",
              "Number of calls to get a new transport, partitioned by the result of the operation hit: obtained from "
              "the cache, miss: created and added to the cache, miss-gc: recreated and added back to the cache after "
              "being garbage collected, uncacheable: created and not cached",
              {{"result", hit ? "hit" : "miss"}})
      .inc();
  static std::once_flag once;
  std::call_once(once, [&reg] {
    reg.counter("rest_client_transport_cert_rotation_gc_calls_total",
                "Number of times a cert rotation goroutine cancel func is called via GC cleanup of the associated "
                "transport");
    reg.gauge("rest_client_exec_plugin_ttl_seconds",
              "Gauge of the shortest TTL (time-to-live) of the client certificate(s) managed by the auth exec plugin. "
              "The value is in seconds until certificate expiry (negative if already expired). If auth exec plugins "
              "are unused or manage no TLS certificates, the value will be +INF.")
        .set(std::numeric_limits<double>::infinity());
    reg.histogram("rest_client_exec_plugin_certificate_rotation_age",
                  "Histogram of the number of seconds the last auth exec plugin client certificate lived before being "
                  "rotated. If auth exec plugin client certificates are unused, histogram will contain no data.",
                  {600, 1800, 3600, 14400, 86400, 604800, 2592000, 7776000, 15552000, 31104000, 124416000});
  });
}

}  // namespace

Result<std::shared_ptr<RestClient>> RestClient::create(const RestConfig& config, Clock& clock) {
  // A write to a connection the server already closed (an idle keep-alive, a restarting apiserver) must be an
  // error on that request, not SIGPIPE killing the process; OpenSSL writes without MSG_NOSIGNAL.
  static std::once_flag ignoreSigpipe;
  std::call_once(ignoreSigpipe, [] { std::signal(SIGPIPE, SIG_IGN); });
  std::shared_ptr<RestClient> c(new RestClient(config, clock));
  if (Status s = c->init(); !s.ok()) return s;
  countTransport(config);
  return c;
}

std::shared_ptr<RestClient> RestClient::createWithTransport(const RestConfig& config, std::shared_ptr<Transport> t,
                                                           Clock& clock) {
  std::shared_ptr<RestClient> c(new RestClient(config, clock));
  c->transport_ = std::move(t);
  if (c->config_.host.empty()) c->config_.host = "http://fake";
  c->host_ = "fake";
  return c;
}

Status RestClient::init() {
  const std::string& url = config_.host;
  auto fail = [&](const std::string& what) {
    return Status(StatusCode::kInvalidArgument, config_.source + ": " + what);
  };
  size_t p = url.find("://");
  if (p == std::string::npos) return fail("server \"" + url + "\" has no scheme");
  scheme_ = url.substr(0, p);
  if (scheme_ != "https" && scheme_ != "http") return fail("server \"" + url + "\": unsupported scheme");
  std::string rest = url.substr(p + 3);
  if (auto slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  port_ = scheme_ == "https" ? 443 : 80;
  if (!rest.empty() && rest[0] == '[') {
    auto close = rest.find(']');
    if (close == std::string::npos) return fail("server \"" + url + "\": bad IPv6 address");
    host_ = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':') rest = rest.substr(close + 2);
    else rest.clear();
    if (!rest.empty()) port_ = std::atoi(rest.c_str());
  } else if (auto colon = rest.rfind(':'); colon != std::string::npos) {
    host_ = rest.substr(0, colon);
    port_ = std::atoi(rest.c_str() + colon + 1);
  } else {
    host_ = rest;
  }
  if (host_.empty() || port_ <= 0 || port_ > 65535) return fail("server \"" + url + "\": bad host or port");
  if (config_.userAgent.empty()) config_.userAgent = version::userAgent("kube-controller-manager");

  tls_ = std::make_unique<Tls>();
  if (!config_.caData.empty()) {
    tls_->cas = parseCerts(config_.caData);
    if (tls_->cas.empty()) return fail("certificate authority data holds no PEM certificate");
  }
  if (!config_.certData.empty()) {
    auto certs = parseCerts(config_.certData);
    if (certs.empty()) return fail("client certificate data holds no PEM certificate");
    tls_->cert = certs[0];
    for (size_t i = 1; i < certs.size(); ++i) X509_free(certs[i]);
    tls_->key = parseKey(config_.keyData);
    if (!tls_->key) return fail("client key data holds no PEM private key");
    if (!privateKeyMatches(tls_->key, X509_get0_pubkey(tls_->cert))) {
      ERR_clear_error();
      return fail("client certificate and key do not match");
    }
  }
  token_ = config_.bearerToken;

  streamTarget_.host = host_;
  streamTarget_.port = port_;
  streamTarget_.tls = scheme_ == "https";
  streamTarget_.serverName = config_.tlsServerName;
  streamTarget_.insecure = config_.insecure;
  if (streamTarget_.tls) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) return fail("cannot create a TLS context");
    streamTarget_.sslContext = std::shared_ptr<void>(ctx, [](void* p) { SSL_CTX_free(static_cast<SSL_CTX*>(p)); });
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (tls_->cas.empty()) {
      SSL_CTX_set_default_verify_paths(ctx);
    } else {
      X509_STORE* store = SSL_CTX_get_cert_store(ctx);
      for (X509* c : tls_->cas) X509_STORE_add_cert(store, c);
    }
    if (tls_->cert && (SSL_CTX_use_certificate(ctx, tls_->cert) != 1 || SSL_CTX_use_PrivateKey(ctx, tls_->key) != 1)) {
      ERR_clear_error();
      return fail("client certificate or key rejected by TLS");
    }
  }
  return Status::Ok();
}

namespace {
// Why the last handshake on this thread refused the server's chain (X509_V_OK: it did not); requests are sent on
// the caller's thread, so the send that failed reads its own handshake's cause.
thread_local long lastVerifyError = X509_V_OK;
int recordVerifyError(int ok, X509_STORE_CTX* ctx) {
  if (!ok && lastVerifyError == X509_V_OK) lastVerifyError = X509_STORE_CTX_get_error(ctx);
  return ok;
}
}  // namespace

std::unique_ptr<httplib::ClientImpl> RestClient::newConnection() {
  std::unique_ptr<httplib::ClientImpl> c;
  const std::string& name = config_.tlsServerName.empty() ? host_ : config_.tlsServerName;
  if (scheme_ == "https") {
    std::unique_ptr<httplib::SSLClient> s;
    if (tls_->cert)
      s = std::make_unique<httplib::SSLClient>(name, port_, tls_->cert, tls_->key);
    else
      s = std::make_unique<httplib::SSLClient>(name, port_);
    SSL_CTX* ctx = s->ssl_context();
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    // Verification is OpenSSL's, in the handshake, against our store only: httplib's own check would first load
    // the system's whole CA bundle into every connection's store (~150 certificates, megabytes across a pool).
    s->enable_server_certificate_verification(false);
    if (!config_.insecure) {
      if (tls_->cas.empty()) SSL_CTX_set_default_verify_paths(ctx);  // no CA configured: the system roots
      else SSL_CTX_set_cert_store(ctx, tls_->newStore());
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, recordVerifyError);
      X509_VERIFY_PARAM* p = SSL_CTX_get0_param(ctx);
      if (isIpAddress(name)) X509_VERIFY_PARAM_set1_ip_asc(p, name.c_str());
      else X509_VERIFY_PARAM_set1_host(p, name.c_str(), 0);
    }
    c = std::move(s);
  } else {
    c = std::make_unique<httplib::ClientImpl>(name, port_);
  }
  if (name != host_) c->set_hostname_addr_map({{name, host_}});
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  c->set_connection_timeout(std::chrono::seconds(10));
  c->set_write_timeout(std::chrono::seconds(30));
  return c;
}

std::unique_ptr<httplib::ClientImpl> RestClient::acquire() {
  {
    std::unique_lock l(mu_);
    connCv_.wait(l, [&] { return !idle_.empty() || open_ < maxConnections_; });
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
    ++open_;
  }
  return newConnection();
}

void RestClient::release(std::unique_ptr<httplib::ClientImpl> c) {
  {
    std::lock_guard l(mu_);
    idle_.push_back(std::move(c));
  }
  connCv_.notify_one();
}

void RestClient::discard(std::unique_ptr<httplib::ClientImpl> c) {
  c.reset();
  {
    std::lock_guard l(mu_);
    --open_;
  }
  connCv_.notify_one();
}

uint64_t RestClient::requestCount() const { return requests_.load(); }

std::string RestClient::authorization() {
  if (config_.tokenSource) {
    // Refresh outside the lock (it is an API call); concurrent refreshes are harmless.
    bool refresh;
    {
      std::lock_guard l(mu_);
      refresh = token_.empty() || clock_.now() >= tokenRefreshAt_;
    }
    if (refresh) {
      auto t = config_.tokenSource();
      std::lock_guard l(mu_);
      if (t.ok()) {
        token_ = t->first;
        tokenRefreshAt_ = clock_.now() + t->second;
      } else {
        KLOG_ERROR("\"Failed to refresh the client token\" err=" + log::quote(t.status().message()));
      }
    }
    std::lock_guard l(mu_);
    return token_.empty() ? "" : "Bearer " + token_;
  }
  std::lock_guard l(mu_);
  auto now = clock_.now();
  if (!config_.bearerTokenFile.empty() && (token_.empty() || now - tokenReadAt_ > std::chrono::minutes(1))) {
    // Like client-go's cachingTokenSource: re-read the file (projected tokens rotate) at most once a minute.
    std::ifstream f(config_.bearerTokenFile);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string t = ss.str();
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
    if (!t.empty()) token_ = t;
    tokenReadAt_ = now;
  }
  if (config_.exec && (token_.empty() || (tokenReadAt_ != Clock::TimePoint{} && now >= tokenReadAt_))) {
    const ExecConfig& e = *config_.exec;
    std::vector<std::string> argv = {"env"};
    for (const auto& [k, v] : e.env) argv.push_back(k + "=" + v);
    std::string apiVersion = e.apiVersion.empty() ? "client.authentication.k8s.io/v1" : e.apiVersion;
    argv.push_back("KUBERNETES_EXEC_INFO={\"apiVersion\":\"" + apiVersion +
                   "\",\"kind\":\"ExecCredential\",\"spec\":{\"interactive\":false}}");
    argv.push_back(e.command);
    argv.insert(argv.end(), e.args.begin(), e.args.end());
    ExecResult r = exec(argv, "", std::chrono::seconds(30));
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (r.ok() && j.is_object() && j.contains("status")) {
      token_ = j["status"].value("token", "");
      // Re-run the plugin when its credential expires; without an expiry it is kept (client-go does the same).
      tokenReadAt_ = Clock::TimePoint{};
      if (auto exp = j["status"].value("expirationTimestamp", ""); !exp.empty()) tokenReadAt_ = now + std::chrono::minutes(5);
    } else {
      // client-go's exec authenticator: klog.Errorf("refreshing credentials: %v", err).
      KLOG_ERROR("refreshing credentials: exec: executable " + e.command + " failed with exit code " +
                 std::to_string(r.exitCode) + ": " + r.err.substr(0, 300));
    }
  }
  if (!token_.empty()) return "Bearer " + token_;
  if (!config_.username.empty())
    return "Basic " + api::codec::base64Encode(config_.username + ":" + config_.password);
  return "";
}

std::string RestClient::target(const Request& req) const {
  std::string t = req.path;
  char sep = '?';
  for (const auto& [k, v] : req.query) {
    t += sep;
    t += urlEncode(k);
    t += '=';
    t += urlEncode(v);
    sep = '&';
  }
  return t;
}

namespace {

httplib::Request toHttp(const Request& req, const std::string& target, const std::string& ua,
                        const std::string& auth) {
  httplib::Request hr;
  hr.method = req.method;
  hr.path = target;
  hr.set_header("User-Agent", ua);
  hr.set_header("Accept", req.accept);
  if (!auth.empty()) hr.set_header("Authorization", auth);
  if (!req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
    hr.body = req.body;
    hr.set_header("Content-Type", req.contentType.empty() ? "application/json" : req.contentType);
  }
  return hr;
}

// Why OpenSSL refused the server's chain, in the words of Go's crypto/x509 where it has them (what an operator greps
// for in upstream's log), else OpenSSL's.
std::string x509VerifyText(long result) {
  switch (result) {
    case X509_V_OK: return "";
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID: return "x509: certificate has expired or is not yet valid";
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE: return "x509: certificate signed by unknown authority";
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH: return "x509: certificate is not valid for this host";
    default: return std::string("x509: ") + X509_verify_cert_error_string(result);
  }
}

std::string transportError(httplib::Error e, const std::string& method, const std::string& url,
                           const std::string& x509 = "") {
  if (!x509.empty()) return method + " " + url + ": tls: failed to verify certificate: " + x509;
  std::string what;
  switch (e) {
    case httplib::Error::Connection: what = "dial tcp: connection refused or host unreachable"; break;
    case httplib::Error::Read: what = "read timed out or connection closed"; break;
    case httplib::Error::Write: what = "write failed (connection closed)"; break;
    case httplib::Error::SSLConnection:
      what = "TLS handshake failed (x509: certificate not trusted or not valid for this host, or TLS error)";
      break;
    case httplib::Error::SSLServerVerification: what = "x509: the server's certificate is not trusted"; break;
    default: what = httplib::to_string(e);
  }
  return method + " " + url + ": " + what;
}

// client-go's rest_client_* request metrics (component-base/metrics/prometheus/restclient), labelled as upstream.
const std::vector<double>& latencyBuckets() {
  static const std::vector<double> b = {0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0};
  return b;
}
const std::vector<double>& sizeBuckets() {
  static const std::vector<double> b = {64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216};
  return b;
}

void observeRequest(const std::string& host, const std::string& method, int code, double seconds) {
  auto& reg = metrics::Registry::global();
  reg.counter("rest_client_requests_total",
              "Number of HTTP requests, partitioned by status code, method, and host.",
              {{"code", code > 0 ? std::to_string(code) : "<error>"}, {"host", host}, {"method", method}})
      .inc();
  reg.histogram("rest_client_request_duration_seconds", "Request latency in seconds. Broken down by verb, and host.",
                latencyBuckets(), {{"host", host}, {"verb", method}})
      .observe(seconds);
}

void observeRateLimiter(const std::string& host, const std::string& method, double seconds) {
  metrics::Registry::global()
      .histogram("rest_client_rate_limiter_duration_seconds",
                 "Client side rate limiter latency in seconds. Broken down by verb, and host.", latencyBuckets(),
                 {{"host", host}, {"verb", method}})
      .observe(seconds);
}

void observeSize(const char* name, const char* help, const std::string& host, const std::string& method,
                 size_t bytes) {
  metrics::Registry::global()
      .histogram(name, help, sizeBuckets(), {{"host", host}, {"verb", method}})
      .observe(static_cast<double>(bytes));
}

void countRetry(const std::string& host, const std::string& method, int code) {
  metrics::Registry::global()
      .counter("rest_client_request_retries_total",
               "Number of request retries, partitioned by status code, verb, and host.",
               {{"code", std::to_string(code)}, {"host", host}, {"verb", method}})
      .inc();
}

}  // namespace

Result<Response> RestClient::send(const Request& req, std::stop_token stop) {
  const std::string t = target(req);
  const std::stop_token cancelled = config_.cancel ? config_.cancel->get_token() : std::stop_token();
  if (!stop.stop_possible()) stop = cancelled;
  bool retriedClosed = false;
  const bool fenced = config_.fence && req.method != "GET" && req.method != "HEAD";
  for (int attempt = 1;; ++attempt) {
    if (cancelled.stop_requested())
      return Status(StatusCode::kCancelled, "request cancelled: " + req.method + " " + t + ": context canceled");
    // Checked on every attempt: a retry after a Retry-After wait must not outlive the lease either.
    if (fenced && !config_.fence->open())
      return Status(StatusCode::kCancelled, "request refused: " + req.method + " " + t +
                                                ": the leader election lease was not renewed within the renew deadline");
    const std::string hostPort = host_ + ":" + std::to_string(port_);
    const auto waitFrom = clock_.now();
    if (!limiter_.accept(stop)) return Status(StatusCode::kCancelled, "request cancelled: " + req.method + " " + t);
    observeRateLimiter(hostPort, req.method, std::chrono::duration<double>(clock_.now() - waitFrom).count());
    observeSize("rest_client_request_size_bytes", "Request size in bytes. Broken down by verb and host.", hostPort,
                req.method, req.body.size());
    Transport::Reply res;
    ++requests_;
    auto started = clock_.now();
    if (transport_) {
      res = transport_->roundTrip(req, t);
    } else {
      auto conn = acquire();
      auto timeout = req.timeout.count() > 0 ? req.timeout : std::chrono::seconds(60);
      if (config_.timeoutSeconds > 0) timeout = std::min(timeout, std::chrono::seconds(config_.timeoutSeconds));
      conn->set_read_timeout(timeout);
      httplib::Request hr = toHttp(req, t, config_.userAgent, authorization());
      httplib::Response hres;
      httplib::Error err = httplib::Error::Success;
      const bool reused = conn->is_socket_open() > 0;
      bool ok;
      lastVerifyError = X509_V_OK;
      {
        std::stop_callback cb(stop, [&] { conn->stop(); });
        ok = conn->send(hr, hres, err);
      }
      if (!ok) {
        observeRequest(hostPort, req.method, 0,
                       std::chrono::duration<double>(clock_.now() - started).count());
        const std::string x509 =
            err == httplib::Error::SSLConnection || err == httplib::Error::SSLServerVerification
                ? x509VerifyText(lastVerifyError)
                : "";
        discard(std::move(conn));
        if (stop.stop_requested())
          return Status(StatusCode::kCancelled, "request cancelled: " + req.method + " " + t);
        // A kept-alive connection the server closed meanwhile: as Go's transport, the request goes once more on a
        // new connection when nothing of it could be written, or (GET, HEAD) when the close came before any reply
        // byte rather than at the read timeout.
        const bool early = clock_.now() - started < timeout;
        if (reused && !retriedClosed && early &&
            (err == httplib::Error::Write ||
             (err == httplib::Error::Read && (req.method == "GET" || req.method == "HEAD")))) {
          retriedClosed = true;
          continue;
        }
        return Status(err == httplib::Error::Read ? StatusCode::kTimeout : StatusCode::kUnavailable,
                      transportError(err, req.method, config_.host + t, x509));
      }
      release(std::move(conn));
      res.code = hres.status;
      res.body = std::move(hres.body);
      res.contentType = hres.get_header_value("Content-Type");
      res.retryAfterSeconds = parseRetryAfter(hres.get_header_value("Retry-After"));
    }
    observeRequest(hostPort, req.method, res.code, std::chrono::duration<double>(clock_.now() - started).count());
    observeSize("rest_client_response_size_bytes", "Response size in bytes. Broken down by verb and host.", hostPort,
                req.method, res.body.size());
    if (res.code >= 200 && res.code < 300) return Response{res.code, std::move(res.body), std::move(res.contentType)};
    int retryAfter = res.retryAfterSeconds;
    // client-go (checkWait, IsNextRetry): a 429 or 5xx answer that carries Retry-After is sent again after that
    // many seconds, up to 10 retries (11 attempts); without the header it is the caller's error at once.
    if ((res.code == 429 || res.code >= 500) && retryAfter >= 0 && attempt <= 10) {
      countRetry(hostPort, req.method, res.code);
      if (retryAfter > 0 && !clock_.sleepFor(std::chrono::seconds(retryAfter), stop))
        return Status(StatusCode::kCancelled, "request cancelled: " + req.method + " " + t);
      continue;
    }
    return statusFromResponse(req.method, t, res.code, res.body, retryAfter);
  }
}

// The blocking form is the I/O loop's stream, waited for: one transport for every watch.
Status RestClient::stream(const Request& req, const std::function<bool(std::string_view line)>& onLine,
                          std::stop_token stop) {
  std::mutex m;
  std::condition_variable cv;
  std::optional<Status> end;
  auto handle = streamAsync(
      req, [&onLine](std::string_view line) { return onLine(line); },
      [&](Status s) {
        std::lock_guard l(m);
        end = std::move(s);
        cv.notify_all();
      },
      stop);
  if (!handle.ok()) return handle.status();
  {
    std::unique_lock l(m);
    std::stop_callback cb(stop, [&] {
      std::lock_guard l2(m);
      cv.notify_all();
    });
    cv.wait(l, [&] { return end.has_value() || stop.stop_requested(); });
  }
  handle->reset();  // cancels a stream still open; no callback runs after this
  std::lock_guard l(m);
  if (!end || stop.stop_requested()) return Status(StatusCode::kCancelled, "stream cancelled: " + target(req));
  return *end;
}

Result<std::unique_ptr<StreamHandle>> RestClient::streamAsync(const Request& req, OnLine onLine,
                                                              OnStreamDone onDone, std::stop_token stop) {
  const std::string t = target(req);
  if (!limiter_.accept(stop)) return Status(StatusCode::kCancelled, "stream cancelled: " + t);
  StreamRequest sr;
  sr.target = t;
  sr.headers = {{"User-Agent", config_.userAgent}, {"Accept", req.accept}};
  if (std::string auth = authorization(); !auth.empty()) sr.headers.emplace_back("Authorization", auth);
  sr.idleTimeout = req.timeout.count() > 0 ? req.timeout : std::chrono::seconds(330);
  ++requests_;
  auto started = clock_.now();
  std::string method = req.method, hostPort = host_ + ":" + std::to_string(port_), url = config_.host + t;
  Clock* clock = &clock_;
  if (transport_) {
    return transport_->openStream(req, t, std::move(onLine), [done = std::move(onDone), method, t](StreamEnd e) {
      if (e.httpCode != 0 && (e.httpCode < 200 || e.httpCode >= 300))
        return done(statusFromResponse(method, t, e.httpCode, e.errorBody, e.retryAfterSeconds));
      done(std::move(e.status));
    });
  }
  return startStream(streamTarget_, std::move(sr), std::move(onLine),
                     [done = std::move(onDone), method, t, hostPort, url, started, clock](StreamEnd e) {
                       observeRequest(hostPort, method, e.httpCode,
                                      std::chrono::duration<double>(clock->now() - started).count());
                       if (e.httpCode != 0 && (e.httpCode < 200 || e.httpCode >= 300))
                         return done(statusFromResponse(method, t, e.httpCode, e.errorBody, e.retryAfterSeconds));
                       if (!e.status.ok())
                         return done(Status(e.status.code(), method + " " + url + ": " + e.status.message()));
                       done(Status::Ok());
                     });
}

}  // namespace kcm::client
