#include "framework/fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace kcm::e2e {
namespace {

using Clock = std::chrono::steady_clock;

bool sendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool sslWriteAll(SSL* ssl, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    int w = SSL_write(ssl, s.data() + off, static_cast<int>(std::min<size_t>(s.size() - off, 1 << 20)));
    if (w <= 0) return false;
    off += static_cast<size_t>(w);
  }
  return true;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One HTTP/1.1 request read from the client: head (request line + headers) and body (Content-Length only:
// neither kubectl nor our client sends chunked request bodies).
struct Parsed {
  std::string method, target, path, version;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool watch = false;
};

bool readRequest(int fd, Parsed& out) {
  std::string buf;
  char chunk[16384];
  size_t headEnd;
  while ((headEnd = buf.find("\r\n\r\n")) == std::string::npos) {
    if (buf.size() > (1 << 20)) return false;
    ssize_t r = ::recv(fd, chunk, sizeof chunk, 0);
    if (r <= 0) return false;
    buf.append(chunk, static_cast<size_t>(r));
  }
  std::istringstream head(buf.substr(0, headEnd));
  std::string line;
  std::getline(head, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::istringstream rl(line);
  rl >> out.method >> out.target >> out.version;
  if (out.method.empty() || out.target.empty()) return false;
  size_t contentLength = 0;
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon), value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    const std::string ln = lower(name);
    if (ln == "content-length") contentLength = std::stoul(value);
    if (ln == "transfer-encoding") return false;
    out.headers.emplace_back(name, value);
  }
  out.body = buf.substr(headEnd + 4);
  while (out.body.size() < contentLength) {
    ssize_t r = ::recv(fd, chunk, sizeof chunk, 0);
    if (r <= 0) return false;
    out.body.append(chunk, static_cast<size_t>(r));
  }
  out.body.resize(contentLength);
  const size_t q = out.target.find('?');
  out.path = out.target.substr(0, q);
  const std::string query = q == std::string::npos ? "" : "&" + out.target.substr(q + 1) + "&";
  out.watch = query.find("&watch=true&") != std::string::npos || query.find("&watch=1&") != std::string::npos;
  return true;
}

std::string statusResponse(int code) {
  const char* reason = code == 429 ? "TooManyRequests" : code == 503 ? "ServiceUnavailable" : "InternalError";
  const char* text = code == 429 ? "Too Many Requests" : code == 503 ? "Service Unavailable" : "Internal Server Error";
  std::string body = std::string(R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)") +
                     R"("message":"fault injected by the e2e proxy","reason":")" + reason + R"(",)" +
                     (code == 429 ? R"("details":{"retryAfterSeconds":1},)" : "") + R"("code":)" +
                     std::to_string(code) + "}";
  std::string r = "HTTP/1.1 " + std::to_string(code) + " " + text +
                  "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\n";
  if (code == 429) r += "Retry-After: 1\r\n";
  return r + "\r\n" + body;
}

int connectTcp(const std::string& host, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

int statusCodeOf(const std::string& firstBytes) {
  // "HTTP/1.1 201 Created"
  if (firstBytes.rfind("HTTP/", 0) != 0) return 0;
  size_t sp = firstBytes.find(' ');
  return sp == std::string::npos ? 0 : std::atoi(firstBytes.c_str() + sp + 1);
}

}  // namespace

// A 200 the apiserver never sent: malformed JSON (garbage), or for a watch a line that never ends (until the client
// closes, or 64 GiB). Returns the bytes sent.
long long FaultProxy::madeUpResponse(int client, bool watch, bool garbage) {
  static const std::string kHead =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n";
  auto chunk = [](const std::string& b) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", b.size());
    return size + b + "\r\n";
  };
  long long sent = 0;
  std::string out = kHead;
  if (garbage) {
    const std::string body = watch ? R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":)" "\x01\xff]]}\n"
                                   : R"({"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{]})";
    out += chunk(body);
    if (!watch) out += "0\r\n\r\n";
    if (!sendAll(client, out.data(), out.size())) return 0;
    sent += static_cast<long long>(body.size());
    if (!watch) return sent;
    // A watch stays open after its garbage line, as a real one would, until the client goes.
    for (char probe; !stopping_;) {
      pollfd p{client, POLLIN, 0};
      if (::poll(&p, 1, 500) > 0 && ::recv(client, &probe, 1, MSG_PEEK | MSG_DONTWAIT) <= 0) break;
    }
    return sent;
  }
  if (!sendAll(client, out.data(), out.size())) return 0;
  const std::string piece = chunk(std::string(1 << 20, 'x'));
  while (!stopping_ && sent < (64LL << 30)) {
    if (!sendAll(client, piece.data(), piece.size())) break;
    sent += 1 << 20;
  }
  return sent;
}

std::unique_ptr<FaultProxy> FaultProxy::start(Upstream upstream) {
  std::unique_ptr<FaultProxy> p(new FaultProxy(std::move(upstream)));
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  p->ssl_ = std::shared_ptr<void>(ctx, [](void* c) { SSL_CTX_free(static_cast<SSL_CTX*>(c)); });
  if (SSL_CTX_load_verify_locations(ctx, p->up_.caFile.c_str(), nullptr) != 1 ||
      SSL_CTX_use_certificate_chain_file(ctx, p->up_.certFile.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, p->up_.keyFile.c_str(), SSL_FILETYPE_PEM) != 1) {
    std::fprintf(stderr, "fault proxy: cannot load %s / %s / %s\n", p->up_.caFile.c_str(), p->up_.certFile.c_str(),
                 p->up_.keyFile.c_str());
    return nullptr;
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  p->listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (p->listenFd_ < 0 || ::bind(p->listenFd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(p->listenFd_, 128) != 0 || ::getsockname(p->listenFd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    std::perror("fault proxy: listen");
    return nullptr;
  }
  p->port_ = ntohs(a.sin_port);
  p->acceptor_ = std::thread([raw = p.get()] { raw->acceptLoop(); });
  return p;
}

std::unique_ptr<FaultProxy> FaultProxy::startForCluster() {
  const char* dir = std::getenv("CLUSTER_DIR");
  if (!dir) return nullptr;
  Upstream u;
  std::ifstream env(std::string(dir) + "/cluster.env");
  for (std::string line; std::getline(env, line);)
    if (line.rfind("APISERVER_PORT=", 0) == 0) u.port = std::atoi(line.c_str() + 15);
  u.caFile = std::string(dir) + "/pki/ca.crt";
  u.certFile = std::string(dir) + "/pki/audited.crt";
  u.keyFile = std::string(dir) + "/pki/audited.key";
  return start(std::move(u));
}

FaultProxy::~FaultProxy() {
  stopping_ = true;
  if (listenFd_ >= 0) ::shutdown(listenFd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  std::unique_lock lk(mu_);
  for (int fd : clients_) ::shutdown(fd, SHUT_RDWR);
  idle_.wait(lk, [&] { return active_ == 0; });
  lk.unlock();
  if (listenFd_ >= 0) ::close(listenFd_);
}

std::string FaultProxy::writeKubeconfig(const std::string& path) const {
  std::ofstream(path, std::ios::trunc) << "apiVersion: v1\nkind: Config\nclusters:\n- name: fault-proxy\n  cluster:\n"
                                       << "    server: http://127.0.0.1:" << port_
                                       << "\ncontexts:\n- name: fault-proxy\n  context: {cluster: fault-proxy, user: "
                                          "anonymous}\ncurrent-context: fault-proxy\nusers:\n- name: anonymous\n  "
                                          "user: {}\n";
  return path;
}

std::vector<FaultProxy::Request> FaultProxy::requests() const {
  std::lock_guard lk(mu_);
  return log_;
}

int FaultProxy::count(const std::function<bool(const Request&)>& pred) const {
  std::lock_guard lk(mu_);
  return static_cast<int>(std::count_if(log_.begin(), log_.end(), pred));
}

void FaultProxy::cutWatchesNow() {
  std::lock_guard lk(mu_);
  for (int fd : watches_) ::shutdown(fd, SHUT_RDWR);
}

void FaultProxy::record(Request r) {
  std::lock_guard lk(mu_);
  log_.push_back(std::move(r));
}

void FaultProxy::acceptLoop() {
  while (!stopping_) {
    int c = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      if (stopping_) return;
      continue;
    }
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    {
      std::lock_guard lk(mu_);
      clients_.push_back(c);
      ++active_;
    }
    std::thread([this, c] {
      serve(c);
      std::lock_guard lk(mu_);
      clients_.erase(std::find(clients_.begin(), clients_.end(), c));
      if (auto w = std::find(watches_.begin(), watches_.end(), c); w != watches_.end()) watches_.erase(w);
      ::close(c);
      if (--active_ == 0) idle_.notify_all();
    }).detach();
  }
}

void FaultProxy::serve(int client) {
  Parsed req;
  if (!readRequest(client, req)) return;
  Request rec{req.method, req.path, req.watch, 0, false, 0};
  if (req.watch) {
    std::lock_guard lk(mu_);
    watches_.push_back(client);
  }
  if (req.method == "GET" && (garbage_ || (endless_ && req.watch))) {
    rec.faulted = true;
    rec.code = 200;
    rec.bytes = madeUpResponse(client, req.watch, garbage_);
    record(std::move(rec));
    return;
  }
  if (int code = failCode_.load(); code != 0) {
    const std::string r = statusResponse(code);
    sendAll(client, r.data(), r.size());
    rec.code = code;
    rec.faulted = true;
    record(std::move(rec));
    return;
  }
  const auto delay = std::chrono::milliseconds(req.watch ? 0 : delay_.load());
  const auto cut = std::chrono::milliseconds(req.watch ? watchCut_.load() : 0);
  rec.faulted = delay.count() > 0 || cut.count() > 0;

  int up = connectTcp(up_.host, up_.port);
  if (up < 0) {
    const std::string r = statusResponse(503);
    sendAll(client, r.data(), r.size());
    record(std::move(rec));
    return;
  }
  std::unique_ptr<SSL, void (*)(SSL*)> ssl(SSL_new(static_cast<SSL_CTX*>(ssl_.get())), SSL_free);
  SSL_set_fd(ssl.get(), up);
  std::string head = req.method + " " + req.target + " HTTP/1.1\r\n";
  for (const auto& [k, v] : req.headers) {
    const std::string lk = lower(k);
    if (lk == "connection" || lk == "keep-alive" || lk == "proxy-connection") continue;
    head += k + ": " + v + "\r\n";
  }
  head += "Connection: close\r\n\r\n";
  if (SSL_connect(ssl.get()) != 1 || !sslWriteAll(ssl.get(), head + req.body)) {
    const std::string r = statusResponse(503);
    sendAll(client, r.data(), r.size());
    record(std::move(rec));
    ::close(up);
    return;
  }
  // The response, piped until the apiserver closes (or the client goes, or the watch is cut).
  const auto started = Clock::now();
  std::string held;  // the whole response while it is delayed
  std::string first;
  char buf[65536];
  bool clientGone = false;
  while (!stopping_) {
    if (SSL_pending(ssl.get()) == 0) {
      pollfd fds[2] = {{up, POLLIN, 0}, {client, POLLIN, 0}};
      int timeoutMs = 1000;
      if (cut.count() > 0) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(started + cut - Clock::now()).count();
        if (left <= 0) break;
        timeoutMs = static_cast<int>(std::min<long long>(left, timeoutMs));
      }
      int n = ::poll(fds, 2, timeoutMs);
      if (n < 0) break;
      if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
        char probe;
        if (::recv(client, &probe, 1, MSG_PEEK | MSG_DONTWAIT) <= 0) {
          clientGone = true;
          break;
        }
      }
      if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    }
    int r = SSL_read(ssl.get(), buf, sizeof buf);
    if (r <= 0) break;
    if (first.size() < 32) first.append(buf, static_cast<size_t>(std::min(r, 32)));
    if (delay.count() > 0) {
      held.append(buf, static_cast<size_t>(r));
    } else if (!sendAll(client, buf, static_cast<size_t>(r))) {
      clientGone = true;
      break;
    }
  }
  rec.code = statusCodeOf(first);
  if (delay.count() > 0 && !clientGone) {
    while (!stopping_ && Clock::now() < started + delay) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    sendAll(client, held.data(), held.size());
  }
  record(std::move(rec));
  SSL_shutdown(ssl.get());
  ::close(up);
}

}  // namespace kcm::e2e
