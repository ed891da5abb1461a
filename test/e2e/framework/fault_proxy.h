#pragma once
// A fault-injecting HTTP proxy between a kcm under test and the real apiserver (e2e only).
//
// The kcm talks plain HTTP to 127.0.0.1:port() with no credentials (writeKubeconfig); the proxy forwards each
// request over TLS with the client certificate it was given (the cluster's audited superuser), one request per
// connection ("Connection: close" both ways), so every request is seen, counted and can be failed on its own.
// Faults apply to requests that arrive while they are set:
//   failRequests(code)    answer every request (watches too) with `code` and a metav1.Status, never forwarding it
//                         (429 carries Retry-After: 1) — an overloaded or broken apiserver;
//   cutWatchesAfter(d)    close each watch stream d after it started — a flaky network or load balancer;
//   delayResponses(d)     forward non-watch requests at once but hold their responses for d — a slow apiserver;
//   serveGarbage(on)      answer GETs (lists, gets, watches) 200 with malformed JSON, never forwarding them;
//   endlessWatchLines(on) answer watches 200 with a body that never ends a line (1 MiB chunks until the client goes).
// requests() is the log of what passed: method, path, the status code the apiserver answered (0: not forwarded,
// or no reply) and whether a fault touched it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kcm::e2e {

class FaultProxy {
 public:
  struct Upstream {
    std::string host = "127.0.0.1";
    int port = 0;
    std::string caFile, certFile, keyFile;
  };
  struct Request {
    std::string method, path;  // path without the query
    bool watch = false;
    int code = 0;              // what the apiserver answered; the injected code when faulted before forwarding
    long long bytes = 0;       // response bytes sent to the client when the proxy made the response up
    bool faulted = false;
  };

  // Listens on 127.0.0.1 (a free port); null with a message on stderr when it cannot.
  static std::unique_ptr<FaultProxy> start(Upstream upstream);
  // The cluster's apiserver (CLUSTER_DIR/cluster.env) with the audited superuser's certificate (pki/audited.*).
  static std::unique_ptr<FaultProxy> startForCluster();
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const { return port_; }
  // A kubeconfig for the proxy (http, no user credentials) written to `path`; returns path.
  std::string writeKubeconfig(const std::string& path) const;

  void failRequests(int code) { failCode_ = code; }
  void cutWatchesAfter(std::chrono::milliseconds d) { watchCut_ = d.count(); }
  void delayResponses(std::chrono::milliseconds d) { delay_ = d.count(); }
  // Closes the watch streams open now (faults apply to new requests only: this makes the informers ask again).
  void cutWatchesNow();
  void serveGarbage(bool on) { garbage_ = on; }
  void endlessWatchLines(bool on) { endless_ = on; }
  void clearFaults() {
    failRequests(0), cutWatchesAfter({}), delayResponses({}), serveGarbage(false), endlessWatchLines(false);
  }

  std::vector<Request> requests() const;
  // Requests matching `pred`.
  int count(const std::function<bool(const Request&)>& pred) const;

 private:
  explicit FaultProxy(Upstream u) : up_(std::move(u)) {}
  void acceptLoop();
  void serve(int client);
  long long madeUpResponse(int client, bool watch, bool garbage);
  void record(Request r);

  Upstream up_;
  int listenFd_ = -1;
  int port_ = 0;
  std::shared_ptr<void> ssl_;  // SSL_CTX owner
  std::atomic<bool> stopping_{false};
  std::atomic<int> failCode_{0};
  std::atomic<bool> garbage_{false}, endless_{false};
  std::atomic<long long> watchCut_{0}, delay_{0};
  mutable std::mutex mu_;
  std::vector<Request> log_;
  std::vector<int> clients_;  // open client sockets (shut down on destruction)
  std::vector<int> watches_;  // those of them serving a watch
  int active_ = 0;            // connection threads running (detached; the destructor waits for none)
  std::condition_variable idle_;
  std::thread acceptor_;
};

}  // namespace kcm::e2e
