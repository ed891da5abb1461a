#pragma once
// The process's one I/O loop: every watch stream of every client is a non-blocking socket (TLS or plain) driven
// by a single thread, instead of a blocking connection and a thread per watch.
//
// An HTTP/1.1 GET whose response body is newline-delimited (a JSON watch) or length-delimited (a protobuf watch,
// told by its Content-Type) is started with startStream(); lines (or frames) are
// handed to onLine on the loop thread (it must be quick: copy the line and post the work elsewhere), and
// onDone(Status) is called once when the stream ends (server closed it, error, or onLine returned false).
// Destroying the returned StreamHandle cancels the stream: once the destructor returns, no callback is running
// or will run (from inside a callback it only marks the stream cancelled).
//
// Thread-safe. Asio stays inside io_loop.cc: this header is light.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kcm::client {

// What a stream connects to, and how (built once per RestClient).
struct StreamTarget {
  std::string host;        // address to dial
  int port = 0;
  bool tls = false;
  std::string serverName;  // SNI and the name verified against the server certificate
  bool insecure = false;
  std::shared_ptr<void> sslContext;  // an SSL_CTX* owner (see makeSslContext)
};

struct StreamRequest {
  std::string target;  // path and query
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::seconds idleTimeout{330};  // no byte for this long ends the stream with kTimeout
};

class StreamHandle {
 public:
  virtual ~StreamHandle() = default;
};

using OnLine = std::function<bool(std::string_view line)>;
// code: HTTP status of the response (0 when none arrived); for non-2xx, body is the response body.
struct StreamEnd {
  Status status;  // Ok: the server ended the stream or onLine returned false
  int httpCode = 0;
  std::string errorBody;
  int retryAfterSeconds = 0;
};
using OnDone = std::function<void(StreamEnd)>;

// Starts a stream on the global loop (its thread starts on first use).
std::unique_ptr<StreamHandle> startStream(const StreamTarget& t, StreamRequest req, OnLine onLine, OnDone onDone);

// Number of streams open now (tests, benchmarks).
int openStreams();

}  // namespace kcm::client
