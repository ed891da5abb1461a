#pragma once
// RestClient: HTTP(S) to the apiserver with client-go's behaviour: token-bucket rate limiting shared by all
// requests of the client, the configured User-Agent and credentials, reused connections, Retry-After honoured
// on 429 (up to 10 tries), API errors decoded from metav1.Status into typed Status codes, per-request timeouts,
// and newline-delimited streams for watches.
// Thread-safe: any number of threads may issue requests; each borrows a pooled connection.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "client/io_loop.h"
#include "client/rate_limiter.h"
#include "client/rest_config.h"

namespace httplib {
class ClientImpl;
}

namespace kcm::client {

struct Request {
  std::string method = "GET";
  std::string path;  // "/api/v1/namespaces/default/pods"
  std::vector<std::pair<std::string, std::string>> query;
  std::string body;
  std::string contentType;  // of body; default application/json when body is set
  std::string accept = "application/json";
  std::chrono::seconds timeout{60};  // per read; streams use their own
};

struct Response {
  int code = 0;
  std::string body;
  std::string contentType;
};

// An API error with the apiserver's reason/details as metav1.Status carries them.
struct ApiError {
  int code = 0;
  std::string reason;   // "NotFound", "AlreadyExists", "Conflict", "Invalid", "Expired", ...
  std::string message;
  int retryAfterSeconds = 0;
};

// Maps an HTTP error response to a Status (code from HTTP status and metav1.Status reason).
Status statusFromResponse(const std::string& method, const std::string& path, int httpCode, std::string_view body,
                          int retryAfterSeconds = 0);

// Where a RestClient's bytes go instead of a socket: the in-memory apiserver of the unit tests
// (test/unit/fake). Everything above the wire (rate limiting, retries on 429, error decoding, typed codecs)
// stays RestClient's, so code under test runs exactly as against a real apiserver.
class Transport {
 public:
  struct Reply {
    int code = 200;
    std::string body;
    std::string contentType = "application/json";
    int retryAfterSeconds = -1;  // the Retry-After header's seconds; -1 when there is none
  };
  virtual ~Transport() = default;
  // `target` is the path with the encoded query, as it would go on the wire.
  virtual Reply roundTrip(const Request& req, const std::string& target) = 0;
  // A watch: lines to onLine until the handle is destroyed or the transport ends it through onDone.
  virtual std::unique_ptr<StreamHandle> openStream(const Request& req, const std::string& target, OnLine onLine,
                                                   OnDone onDone) = 0;
  // Whether a watch with sendInitialEvents streams the initial state and its end bookmark (in-memory fakes do
  // not, as client-go's fake clients declare).
  virtual bool supportsWatchList() const { return false; }
};

class RestClient {
 public:
  // Validates TLS material now (bad PEM -> InvalidArgument naming the config source).
  static Result<std::shared_ptr<RestClient>> create(const RestConfig& config, Clock& clock = RealClock::get());
  // A client whose requests go to `transport` (tests). config.host only labels errors and metrics.
  static std::shared_ptr<RestClient> createWithTransport(const RestConfig& config, std::shared_ptr<Transport> t,
                                                         Clock& clock = RealClock::get());
  ~RestClient();

  // Sends one request (rate limited). 2xx -> Response; otherwise the decoded API error.
  Result<Response> send(const Request& req, std::stop_token stop = {});

  // Streams a response body line by line (watch). onLine returns false to end the stream. Returns OK when the
  // server ended the stream, Cancelled when stopped, or the error.
  Status stream(const Request& req, const std::function<bool(std::string_view line)>& onLine,
                std::stop_token stop = {});

  // The same stream driven by the process's I/O loop (no thread of its own). Waits for the rate limiter on the
  // calling thread, then returns at once. onLine runs on the loop thread (keep it short); onDone gets the
  // outcome mapped as stream()'s (API errors decoded). Destroying the handle cancels.
  using OnStreamDone = std::function<void(Status)>;
  Result<std::unique_ptr<StreamHandle>> streamAsync(const Request& req, OnLine onLine, OnStreamDone onDone,
                                                    std::stop_token stop = {});

  const RestConfig& config() const { return config_; }
  // A real apiserver can stream lists (sendInitialEvents); a test transport only when it says so.
  bool supportsWatchList() const { return !transport_ || transport_->supportsWatchList(); }
  RateLimiter& rateLimiter() { return limiter_; }
  // Requests sent (including retries), for tests and benchmarks.
  uint64_t requestCount() const;

 private:
  RestClient(RestConfig config, Clock& clock);
  Status init();
  std::unique_ptr<httplib::ClientImpl> newConnection();
  std::unique_ptr<httplib::ClientImpl> acquire();
  void release(std::unique_ptr<httplib::ClientImpl> c);  // back to the idle set
  void discard(std::unique_ptr<httplib::ClientImpl> c);  // broken: closed, its slot freed
  std::string authorization();
  std::string target(const Request& req) const;

  RestConfig config_;
  Clock& clock_;
  RateLimiter limiter_;
  std::string scheme_, host_;
  int port_ = 0;
  struct Tls;
  std::unique_ptr<Tls> tls_;
  StreamTarget streamTarget_;  // with one SSL_CTX shared by every stream of this client
  std::mutex mu_;
  std::condition_variable connCv_;
  const int maxConnections_;  // requests on the wire at once: sized to the rate limit (rest_client.cc)
  int open_ = 0;  // connections of send(), idle or in use
  std::vector<std::unique_ptr<httplib::ClientImpl>> idle_;
  std::string token_;  // current bearer token (file or exec plugin)
  Clock::TimePoint tokenReadAt_{};
  Clock::TimePoint tokenRefreshAt_{};
  std::atomic<uint64_t> requests_{0};
  std::shared_ptr<Transport> transport_;  // set: no sockets at all
};

// Percent-encodes a query component.
std::string urlEncode(std::string_view s);

}  // namespace kcm::client
