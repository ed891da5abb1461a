// Asio is used here, and only here: its io_context is the one event loop, asio::ssl does the non-blocking TLS
// state machine (WANT_READ/WANT_WRITE, bytes buffered inside OpenSSL) that is easy to get subtly wrong by hand.
#include "client/io_loop.h"

#include "base/log.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <asio.hpp>
#include <asio/ssl.hpp>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <optional>
#include <mutex>
#include <thread>

namespace kcm::client {
namespace {

using asio::ip::tcp;

constexpr size_t kMaxFrameBytes = 16 * 1024 * 1024;  // client-go's streaming decoder's maxBytes

class Loop {
 public:
  static Loop& get() {
    static Loop* l = new Loop();  // never destroyed: streams may be cancelled until exit
    return *l;
  }
  asio::io_context& ctx() { return ctx_; }

 private:
  Loop() : guard_(asio::make_work_guard(ctx_)) {
    std::thread([this] {
      while (true) {
        try {
          ctx_.run();
          return;
        } catch (const std::exception& e) {
          KLOG_ERROR("\"Observed a panic\" panic=" + log::quote(e.what()));
        }
      }
    }).detach();
  }
  asio::io_context ctx_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
};

std::atomic<int> gOpen{0};

// Callback gate shared by a connection and its handle: cancellation waits for a callback in progress.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool cancelled = false, inCallback = false, finished = false;
  std::thread::id loopThread;
  template <class F>
  bool call(F&& f) {  // false when cancelled (f not called)
    {
      std::lock_guard l(mu);
      if (cancelled || finished) return false;
      inCallback = true;
    }
    f();
    std::lock_guard l(mu);
    inCallback = false;
    cv.notify_all();
    return true;
  }
};

bool isIp(const std::string& h) {
  asio::error_code ec;
  asio::ip::make_address(h, ec);
  return !ec;
}

// One HTTP/1.1 streaming GET. Owned by its pending async operations (shared_from_this).
class Conn : public std::enable_shared_from_this<Conn> {
 public:
  Conn(const StreamTarget& t, StreamRequest req, OnLine onLine, OnDone onDone, std::shared_ptr<Gate> gate)
      : t_(t), req_(std::move(req)), onLine_(std::move(onLine)), onDone_(std::move(onDone)), gate_(std::move(gate)),
        strand_(asio::make_strand(Loop::get().ctx())), resolver_(strand_), timer_(strand_) {
    ++gOpen;
    if (t_.tls) {
      SSL_CTX* raw = static_cast<SSL_CTX*>(t_.sslContext.get());
      SSL_CTX_up_ref(raw);
      sslCtx_ = std::make_unique<asio::ssl::context>(raw);
      tls_.emplace(strand_, *sslCtx_);
    } else {
      plain_.emplace(strand_);
    }
  }
  ~Conn() { --gOpen; }

  // Resolves on the calling thread (a pool task; asio's asynchronous resolver would add a thread of its own),
  // then dials on the loop.
  void start() {
    asio::error_code ec;
    auto r = resolver_.resolve(t_.host, std::to_string(t_.port), ec);
    asio::post(strand_, [self = shared_from_this(), r, ec] {
      if (ec) return (void)self->fail("dial tcp " + self->t_.host + ": " + ec.message());
      self->armTimer(std::chrono::seconds(30));  // dial + handshake
      self->connect(r);
    });
  }

  void cancel() {
    asio::post(strand_, [self = shared_from_this()] { self->close(); });
  }

 private:
  void connect(const tcp::resolver::results_type& r) {
    asio::async_connect(sock(), r, [self = shared_from_this()](const asio::error_code& ec, const tcp::endpoint&) {
      if (ec)
        return (void)self->fail("dial tcp " + self->t_.host + ":" + std::to_string(self->t_.port) + ": " +
                                ec.message());
      asio::error_code ignored;
      self->sock().set_option(tcp::no_delay(true), ignored);
      if (self->t_.tls) return self->handshake();
      self->writeRequest();
    });
  }

  void handshake() {
    SSL* ssl = tls_->native_handle();
    const std::string& name = t_.serverName.empty() ? t_.host : t_.serverName;
    if (!isIp(name)) SSL_set_tlsext_host_name(ssl, name.c_str());
    if (t_.insecure) {
      tls_->set_verify_mode(asio::ssl::verify_none);
    } else {
      tls_->set_verify_mode(asio::ssl::verify_peer);
      X509_VERIFY_PARAM* p = SSL_get0_param(ssl);
      if (isIp(name)) X509_VERIFY_PARAM_set1_ip_asc(p, name.c_str());
      else X509_VERIFY_PARAM_set1_host(p, name.c_str(), 0);
    }
    tls_->async_handshake(asio::ssl::stream_base::client, [self = shared_from_this()](const asio::error_code& ec) {
      if (ec) return (void)self->fail("TLS handshake with " + self->t_.host + " failed: " + ec.message());
      self->writeRequest();
    });
  }

  template <class F>
  void writeAll(F&& done) {
    if (tls_) asio::async_write(*tls_, asio::buffer(out_), std::forward<F>(done));
    else asio::async_write(*plain_, asio::buffer(out_), std::forward<F>(done));
  }
  template <class F>
  void readSome(F&& done) {
    if (tls_) tls_->async_read_some(asio::buffer(buf_), std::forward<F>(done));
    else plain_->async_read_some(asio::buffer(buf_), std::forward<F>(done));
  }

  void writeRequest() {
    out_ = "GET " + req_.target + " HTTP/1.1\r\nHost: " + (t_.serverName.empty() ? t_.host : t_.serverName) + ":" +
           std::to_string(t_.port) + "\r\n";
    for (const auto& [k, v] : req_.headers) out_ += k + ": " + v + "\r\n";
    out_ += "\r\n";
    writeAll([self = shared_from_this()](const asio::error_code& ec, size_t) {
      if (ec) return (void)self->fail("write failed (connection closed): " + ec.message());
      self->out_.clear();
      self->armTimer(self->req_.idleTimeout);
      self->read();
    });
  }

  void read() {
    readSome([self = shared_from_this()](const asio::error_code& ec, size_t n) {
      if (self->closed_) return;
      if (n > 0) {
        self->armTimer(self->req_.idleTimeout);
        if (!self->consume(std::string_view(self->buf_.data(), n))) return;
      }
      if (ec) {
        if (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated) return self->endOfBody();
        return (void)self->fail("read failed: " + ec.message());
      }
      self->read();
    });
  }

  // Feeds received bytes through the header parser, the chunked decoder and the line splitter.
  // Returns false when the stream was finished.
  bool consume(std::string_view data) {
    if (!headersDone_) {
      head_.append(data);
      size_t end = head_.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (head_.size() > 64 * 1024) return fail("response headers too large"), false;
        return true;
      }
      std::string rest = head_.substr(end + 4);
      head_.resize(end);
      if (!parseHead()) return false;
      headersDone_ = true;
      return rest.empty() ? true : body(rest);
    }
    return body(data);
  }

  bool parseHead() {
    // "HTTP/1.1 200 OK"
    size_t sp = head_.find(' ');
    if (head_.compare(0, 5, "HTTP/") != 0 || sp == std::string::npos) return fail("malformed response"), false;
    code_ = std::atoi(head_.c_str() + sp + 1);
    size_t pos = head_.find("\r\n");
    while (pos != std::string::npos) {
      size_t next = head_.find("\r\n", pos + 2);
      std::string line = head_.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
      pos = next;
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string k = line.substr(0, colon), v = line.substr(colon + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.erase(0, 1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.pop_back();
      for (auto& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (k == "transfer-encoding" && v.find("chunked") != std::string::npos) chunked_ = true;
      // A protobuf watch (`application/vnd.kubernetes.protobuf;stream=watch`) is length-delimited, not lines.
      if (k == "content-type" && v.find("application/vnd.kubernetes.protobuf") == 0) framed_ = true;
      if (k == "content-length") remaining_ = std::atoll(v.c_str());
      if (k == "retry-after") retryAfter_ = std::max(0, std::atoi(v.c_str()));
    }
    return true;
  }

  bool body(std::string_view data) {
    if (!chunked_) {
      if (remaining_ >= 0) {
        auto take = std::min<int64_t>(remaining_, static_cast<int64_t>(data.size()));
        remaining_ -= take;
        if (!payload(data.substr(0, static_cast<size_t>(take)))) return false;
        if (remaining_ == 0) return endOfBody(), false;
        return true;
      }
      return payload(data);  // read until close
    }
    // Chunked: size line, data, CRLF; a zero-size chunk ends the body.
    for (size_t i = 0; i < data.size();) {
      if (chunkLeft_ > 0) {
        size_t take = std::min<size_t>(chunkLeft_, data.size() - i);
        if (!payload(data.substr(i, take))) return false;
        chunkLeft_ -= take;
        i += take;
        if (chunkLeft_ == 0) skipCrlf_ = 2;
        continue;
      }
      if (skipCrlf_ > 0) {
        --skipCrlf_;
        ++i;
        continue;
      }
      char c = data[i++];
      if (c != '\n') {
        sizeLine_ += c;
        if (sizeLine_.size() > 1024) return fail("malformed chunk size"), false;
        continue;
      }
      size_t semi = sizeLine_.find(';');
      std::string hex = sizeLine_.substr(0, semi);
      while (!hex.empty() && (hex.back() == '\r' || hex.back() == ' ')) hex.pop_back();
      sizeLine_.clear();
      if (hex.empty()) continue;
      char* end = nullptr;
      unsigned long long n = std::strtoull(hex.c_str(), &end, 16);
      if (end == hex.c_str()) return fail("malformed chunk size"), false;
      if (n == 0) return endOfBody(), false;
      chunkLeft_ = n;
    }
    return true;
  }

  // Body bytes: split into lines for a 2xx response, kept (bounded) for an error response.
  bool payload(std::string_view data) {
    if (code_ < 200 || code_ >= 300) {
      if (errBody_.size() < 64 * 1024) errBody_.append(data.substr(0, 64 * 1024 - errBody_.size()));
      return true;
    }
    line_.append(data);
    if (framed_) return frames();
    size_t start = 0;
    for (size_t nl; (nl = line_.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (nl == start) continue;
      bool more = true;
      std::string_view l(line_.data() + start, nl - start);
      if (!gate_->call([&] { more = onLine_(l); })) return close(), false;
      if (!more) {
        finish(StreamEnd{Status::Ok(), code_, "", 0});
        return false;
      }
    }
    line_.erase(0, start);
    // As client-go's streaming decoder: a frame past 16 MiB ends the stream (a server that never ends a line must
    // not take all memory); the watcher starts a new one.
    if (line_.size() > kMaxFrameBytes)
      return fail("unable to decode an event from the watch stream: object to decode was longer than maximum "
                  "allowed size"), false;
    return true;
  }

  // Length-delimited frames (4-byte big-endian length, then the message), each handed to onLine whole.
  bool frames() {
    size_t start = 0;
    while (line_.size() - start >= 4) {
      const auto* p = reinterpret_cast<const unsigned char*>(line_.data() + start);
      size_t n = (size_t{p[0]} << 24) | (size_t{p[1]} << 16) | (size_t{p[2]} << 8) | size_t{p[3]};
      if (n > kMaxFrameBytes)
        return fail("unable to decode an event from the watch stream: object to decode was longer than maximum "
                    "allowed size"), false;
      if (line_.size() - start - 4 < n) break;
      bool more = true;
      std::string_view f(line_.data() + start + 4, n);
      start += 4 + n;
      if (n == 0) continue;
      if (!gate_->call([&] { more = onLine_(f); })) return close(), false;
      if (!more) {
        finish(StreamEnd{Status::Ok(), code_, "", 0});
        return false;
      }
    }
    line_.erase(0, start);
    return true;
  }

  void endOfBody() {
    if (code_ >= 200 && code_ < 300 && !line_.empty() && !framed_) {
      std::string rest = std::move(line_);
      gate_->call([&] { onLine_(rest); });
    }
    StreamEnd e;
    e.httpCode = code_;
    if (code_ < 200 || code_ >= 300) {
      e.status = Status(StatusCode::kUnavailable, "HTTP " + std::to_string(code_));
      e.errorBody = std::move(errBody_);
      e.retryAfterSeconds = retryAfter_;
    }
    finish(std::move(e));
  }

  bool fail(const std::string& why) {
    StreamEnd e;
    e.status = Status(StatusCode::kUnavailable, why);
    e.httpCode = headersDone_ ? code_ : 0;
    finish(std::move(e));
    return false;
  }

  void finish(StreamEnd e) {
    if (closed_) return;
    close();
    if (headersDone_ && code_ >= 200 && code_ < 300 && !e.status.ok() && e.httpCode == 0) e.httpCode = code_;
    gate_->call([&] { onDone_(std::move(e)); });
    std::lock_guard l(gate_->mu);
    gate_->finished = true;
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    asio::error_code ignored;
    timer_.cancel();
    sock().shutdown(tcp::socket::shutdown_both, ignored);
    sock().close(ignored);
  }

  tcp::socket& sock() { return tls_ ? tls_->next_layer() : *plain_; }

  void armTimer(std::chrono::seconds d) {
    timer_.expires_after(d);
    timer_.async_wait([self = shared_from_this(), gen = ++timerGen_](const asio::error_code& ec) {
      if (ec || gen != self->timerGen_ || self->closed_) return;
      StreamEnd e;
      e.status = Status(StatusCode::kTimeout, "read timed out");
      self->finish(std::move(e));
    });
  }

  StreamTarget t_;
  StreamRequest req_;
  OnLine onLine_;
  OnDone onDone_;
  std::shared_ptr<Gate> gate_;
  asio::strand<asio::io_context::executor_type> strand_;
  tcp::resolver resolver_;
  asio::steady_timer timer_;
  uint64_t timerGen_ = 0;
  std::unique_ptr<asio::ssl::context> sslCtx_;
  std::optional<asio::ssl::stream<tcp::socket>> tls_;
  std::optional<tcp::socket> plain_;
  std::string out_;
  std::array<char, 16 * 1024> buf_{};
  std::string head_, line_, errBody_, sizeLine_;
  bool headersDone_ = false, chunked_ = false, closed_ = false, framed_ = false;
  int code_ = 0, retryAfter_ = 0, skipCrlf_ = 0;
  int64_t remaining_ = -1;
  uint64_t chunkLeft_ = 0;
};

class Handle final : public StreamHandle {
 public:
  Handle(std::shared_ptr<Conn> c, std::shared_ptr<Gate> g) : conn_(std::move(c)), gate_(std::move(g)) {}
  ~Handle() override {
    {
      std::unique_lock l(gate_->mu);
      gate_->cancelled = true;
      // Inside a callback of this very stream (the loop thread), waiting would deadlock.
      if (std::this_thread::get_id() != gate_->loopThread)
        gate_->cv.wait(l, [&] { return !gate_->inCallback; });
    }
    conn_->cancel();
  }

 private:
  std::shared_ptr<Conn> conn_;
  std::shared_ptr<Gate> gate_;
};

}  // namespace

std::unique_ptr<StreamHandle> startStream(const StreamTarget& t, StreamRequest req, OnLine onLine, OnDone onDone) {
  auto gate = std::make_shared<Gate>();
  static std::thread::id loopId = [] {
    std::promise<std::thread::id> p;
    auto f = p.get_future();
    asio::post(Loop::get().ctx(), [&p] { p.set_value(std::this_thread::get_id()); });
    return f.get();
  }();
  gate->loopThread = loopId;
  auto c = std::make_shared<Conn>(t, std::move(req), std::move(onLine), std::move(onDone), gate);
  c->start();
  return std::make_unique<Handle>(std::move(c), std::move(gate));
}

int openStreams() { return gOpen.load(); }

}  // namespace kcm::client
