// Edge cases against a local HTTP fake (never a stand-in for the e2e suite): 429 with Retry-After, a hung
// server, a dropped watch stream.
#include <gtest/gtest.h>
#include <httplib.h>

#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "api/gen/core_v1_codec.h"
#include "api/gen/core_v1_json.h"
#include "client/rest_client.h"
#include "client/typed_client.h"
#include "../api/proto_writer.h"

namespace kcm::client {
namespace {

class FakeServer : public ::testing::Test {
 protected:
  void SetUp() override {}
  void start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void TearDown() override {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  std::shared_ptr<RestClient> client(Clock& clock) {
    RestConfig cfg;
    cfg.host = "http://127.0.0.1:" + std::to_string(port_);
    cfg.qps = -1;
    auto c = RestClient::create(cfg, clock);
    EXPECT_TRUE(c.ok());
    return *c;
  }
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(FakeServer, RetriesTooManyRequestsHonouringRetryAfter) {
  std::atomic<int> calls{0};
  server_.Get("/api/v1/namespaces/ns/pods/p", [&](const httplib::Request&, httplib::Response& res) {
    if (++calls <= 2) {
      res.status = 429;
      res.set_header("Retry-After", "3");
      res.set_content(R"({"kind":"Status","reason":"TooManyRequests","code":429})", "application/json");
      return;
    }
    res.set_content(R"({"metadata":{"name":"p"}})", "application/json");
  });
  start();
  FakeClock clock;
  auto start = clock.now();
  auto pod = get<api::core::v1::Pod>(*client(clock), "ns", "p");
  ASSERT_TRUE(pod.ok()) << pod.status().toString();
  EXPECT_EQ(pod->metadata.name, "p");
  EXPECT_EQ(calls.load(), 3);
  EXPECT_EQ(clock.now() - start, std::chrono::seconds(6));  // waited Retry-After twice
}

// client-go's maxRetries (10): the first answer and ten retries, then the caller gets the 429.
TEST_F(FakeServer, GivesUpOnTooManyRequestsAfterTenRetries) {
  std::atomic<int> calls{0};
  server_.Get("/x", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    res.status = 429;
    res.set_header("Retry-After", "1");
  });
  start();
  FakeClock clock;
  auto start = clock.now();
  Request req;
  req.path = "/x";
  auto r = client(clock)->send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTooManyRequests);
  EXPECT_EQ(calls.load(), 11);
  EXPECT_EQ(clock.now() - start, std::chrono::seconds(10));
}

// client-go's checkWait: only an answer with Retry-After is retried; a 429 or 500 without it is returned at once.
TEST_F(FakeServer, TooManyRequestsOrServerErrorWithoutRetryAfterIsNotRetried) {
  std::atomic<int> calls{0};
  server_.Get("/x", [&](const httplib::Request& q, httplib::Response& res) {
    ++calls;
    res.status = q.has_param("e") ? 500 : 429;
  });
  start();
  FakeClock clock;
  Request req;
  req.path = "/x";
  auto r = client(clock)->send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTooManyRequests);
  EXPECT_EQ(calls.load(), 1);
  req.query = {{"e", "1"}};
  r = client(clock)->send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_EQ(calls.load(), 2);
}

TEST_F(FakeServer, HungServerTimesOutInsteadOfBlocking) {
  server_.Get("/slow", [&](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(std::chrono::seconds(3));
    res.set_content("late", "text/plain");
  });
  start();
  Request req;
  req.path = "/slow";
  req.timeout = std::chrono::seconds(1);
  auto r = client(RealClock::get())->send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTimeout) << r.status().toString();
}

// A watch answer: two events, the second split across chunks, then the server ends the stream (like a watch
// timeout or a dropped connection).
void chunkedTwoEvents(httplib::Response& res) {
  res.set_chunked_content_provider("application/json", [](size_t, httplib::DataSink& sink) {
    std::string a = R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"8"}}})" "\n";
    std::string b = R"({"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"9"}}})" "\n";
    sink.write(a.data(), a.size());
    sink.write(b.data(), b.size() - 20);  // split mid-event across chunks
    sink.write(b.data() + b.size() - 20, 20);
    sink.done();
    return true;
  });
}

TEST_F(FakeServer, WatchStreamDeliversEventsThenReportsTheServerClosing) {
  server_.Get("/api/v1/namespaces/ns/pods", [&](const httplib::Request& req, httplib::Response& res) {
    EXPECT_EQ(req.get_param_value("watch"), "true");
    EXPECT_EQ(req.get_param_value("resourceVersion"), "7");
    chunkedTwoEvents(res);
  });
  start();
  FakeClock clock;
  std::vector<std::string> rvs;
  ListOptions o;
  o.resourceVersion = "7";
  Status s = watch<api::core::v1::Pod>(*client(clock), "ns", o, [&](WatchEvent<api::core::v1::Pod>& ev) {
    rvs.push_back(ev.type + "@" + ev.object.metadata.resourceVersion);
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.toString();
  EXPECT_EQ(rvs, (std::vector<std::string>{"ADDED@8", "MODIFIED@9"}));
}

TEST_F(FakeServer, StreamOnTheIoLoopDeliversLinesAcrossChunksThenTheEnd) {
  server_.Get("/api/v1/namespaces/ns/pods", [&](const httplib::Request& req, httplib::Response& res) {
    EXPECT_EQ(req.get_param_value("watch"), "true");
    chunkedTwoEvents(res);
  });
  start();
  FakeClock clock;
  std::mutex mu;
  std::vector<std::string> rvs;
  std::optional<Status> end;
  Request req;
  req.path = "/api/v1/namespaces/ns/pods";
  auto c = client(clock);
  auto h = watchRequestAsync(*c, req, {}, [&](std::string_view line) {
        WatchEvent<api::core::v1::Pod> ev;
        EXPECT_TRUE(decodeWatchEvent(line, ev).ok());
        std::lock_guard l(mu);
        rvs.push_back(ev.type + "@" + ev.object.metadata.resourceVersion);
        return true;
      }, [&](Status s) {
        std::lock_guard l(mu);
        end = s;
      }, {});
  ASSERT_TRUE(h.ok()) << h.status().toString();
  for (int i = 0; i < 300; ++i) {
    {
      std::lock_guard l(mu);
      if (end) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::lock_guard l(mu);
  ASSERT_TRUE(end.has_value());
  EXPECT_TRUE(end->ok()) << end->toString();
  EXPECT_EQ(rvs, (std::vector<std::string>{"ADDED@8", "MODIFIED@9"}));
}

// A protobuf watch (`;stream=watch`): length-delimited frames, one split across chunks and one split inside
// its 4-byte length, decoded as the typed watch decodes JSON lines; the request asked for protobuf.
TEST_F(FakeServer, ProtobufWatchFramesAcrossChunks) {
  using api::prototest::Msg;
  server_.Get("/api/v1/namespaces/ns/pods", [&](const httplib::Request& req, httplib::Response& res) {
    EXPECT_EQ(req.get_header_value("Accept"), "application/vnd.kubernetes.protobuf, */*");
    res.set_chunked_content_provider("application/vnd.kubernetes.protobuf;stream=watch",
                                     [](size_t, httplib::DataSink& sink) {
      auto pod = [](const char* rv) { return Msg::envelope("v1", "Pod", Msg().msg(1, Msg().str(1, "a").str(6, rv))); };
      std::string a = Msg::watchFrame("ADDED", pod("8")), b = Msg::watchFrame("MODIFIED", pod("9"));
      std::string c = Msg::watchFrame("DELETED", pod("10"));
      sink.write(a.data(), a.size() - 5);
      sink.write(a.data() + a.size() - 5, 5);
      sink.write(b.data(), b.size());
      sink.write(c.data(), 2);  // inside the length
      sink.write(c.data() + 2, c.size() - 2);
      sink.done();
      return true;
    });
  });
  start();
  FakeClock clock;
  RestConfig cfg;
  cfg.host = "http://127.0.0.1:" + std::to_string(port_);
  cfg.qps = -1;
  cfg.contentType = "application/vnd.kubernetes.protobuf";
  auto c = RestClient::create(cfg, clock);
  ASSERT_TRUE(c.ok());
  std::vector<std::string> rvs;
  Status s = watch<api::core::v1::Pod>(**c, "ns", {}, [&](WatchEvent<api::core::v1::Pod>& ev) {
    rvs.push_back(ev.type + "@" + std::string(ev.object.metadata.resourceVersion.view()));
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.toString();
  EXPECT_EQ(rvs, (std::vector<std::string>{"ADDED@8", "MODIFIED@9", "DELETED@10"}));
}

// An error answer in protobuf (metav1.Status in the envelope) maps to its code and message.
TEST_F(FakeServer, ProtobufErrorStatusIsDecoded) {
  using api::prototest::Msg;
  server_.Get("/api/v1/namespaces/ns/pods/x", [&](const httplib::Request&, httplib::Response& res) {
    res.status = 404;
    Msg st = Msg().str(2, "Failure").str(3, "pods \"x\" not found").str(4, "NotFound").varint(6, 404);
    res.set_content(Msg::envelope("v1", "Status", st), "application/vnd.kubernetes.protobuf");
  });
  start();
  FakeClock clock;
  auto r = get<api::core::v1::Pod>(*client(clock), "ns", "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "pods \"x\" not found");
}

TEST_F(FakeServer, StreamOnTheIoLoopMapsAnApiErrorAndStopsWhenItsHandleGoes) {
  std::atomic<int> lines{0};
  server_.Get("/gone", [&](const httplib::Request&, httplib::Response& res) {
    res.status = 410;
    res.set_content(R"j({"kind":"Status","reason":"Expired","message":"too old resource version: 1 (50)","code":410})j",
                    "application/json");
  });
  server_.Get("/forever", [&](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json", [](size_t, httplib::DataSink& sink) {
      std::string a = "{\"type\":\"BOOKMARK\"}\n";
      sink.write(a.data(), a.size());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return sink.is_writable();
    });
  });
  start();
  FakeClock clock;
  auto c = client(clock);
  std::promise<Status> gone;
  Request g;
  g.path = "/gone";
  auto h1 = c->streamAsync(g, [](std::string_view) { return true; }, [&](Status s) { gone.set_value(s); });
  ASSERT_TRUE(h1.ok());
  auto f = gone.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  Status s = f.get();
  EXPECT_EQ(s.code(), StatusCode::kGone) << s.toString();
  EXPECT_NE(s.message().find("too old resource version"), std::string::npos);

  Request fr;
  fr.path = "/forever";
  std::atomic<bool> done{false};
  auto h2 = c->streamAsync(fr, [&](std::string_view) { ++lines; return true; }, [&](Status) { done = true; });
  ASSERT_TRUE(h2.ok());
  for (int i = 0; i < 300 && lines.load() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(lines.load(), 3);
  h2->reset();  // cancel: no callback runs after this returns
  int seen = lines.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(lines.load(), seen);
  EXPECT_FALSE(done.load());
}

TEST_F(FakeServer, WatchThatIsGoneReturnsGone) {
  server_.Get("/api/v1/namespaces/ns/pods", [&](const httplib::Request&, httplib::Response& res) {
    res.status = 410;
    res.set_content(R"j({"kind":"Status","reason":"Expired","message":"too old resource version: 1 (50)","code":410})j",
                    "application/json");
  });
  start();
  FakeClock clock;
  Status s = watch<api::core::v1::Pod>(*client(clock), "ns", {}, [](auto&) { return true; });
  EXPECT_EQ(s.code(), StatusCode::kGone) << s.toString();
  EXPECT_NE(s.message().find("too old resource version"), std::string::npos);
}

TEST_F(FakeServer, SendsUserAgentAcceptAndCredentialsFromAnExecPlugin) {
  std::string ua, auth, accept;
  server_.Get("/api/v1/namespaces/ns/pods/p", [&](const httplib::Request& req, httplib::Response& res) {
    ua = req.get_header_value("User-Agent");
    auth = req.get_header_value("Authorization");
    accept = req.get_header_value("Accept");
    res.set_content(R"({"metadata":{"name":"p"}})", "application/json");
  });
  start();
  std::string plugin = ::testing::TempDir() + "/kcm-exec-plugin.sh";
  {
    std::ofstream f(plugin);
    f << R"(#!/bin/sh
case "$KUBERNETES_EXEC_INFO" in *ExecCredential*) ;; *) exit 3;; esac
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"'$1'-'$TOKEN_SUFFIX'"}}'
)";
  }
  ::chmod(plugin.c_str(), 0755);
  RestConfig cfg;
  cfg.host = "http://127.0.0.1:" + std::to_string(port_);
  cfg.userAgent = "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abcdef0/test-controller";
  cfg.exec = ExecConfig{plugin, {"tok"}, {{"TOKEN_SUFFIX", "42"}}, "client.authentication.k8s.io/v1"};
  auto c = RestClient::create(cfg);
  ASSERT_TRUE(c.ok());
  auto pod = get<api::core::v1::Pod>(**c, "ns", "p");
  ASSERT_TRUE(pod.ok()) << pod.status().toString();
  EXPECT_EQ(ua, cfg.userAgent);
  EXPECT_EQ(auth, "Bearer tok-42");
  EXPECT_EQ(accept, "application/json");
}

TEST_F(FakeServer, ReadsTheBearerTokenFile) {
  std::string auth;
  server_.Get("/x", [&](const httplib::Request& req, httplib::Response& res) {
    auth = req.get_header_value("Authorization");
    res.set_content("{}", "application/json");
  });
  start();
  std::string tokenFile = ::testing::TempDir() + "/kcm-token";
  std::ofstream(tokenFile) << "file-token\n";
  RestConfig cfg;
  cfg.host = "http://127.0.0.1:" + std::to_string(port_);
  cfg.bearerTokenFile = tokenFile;
  auto c = RestClient::create(cfg);
  ASSERT_TRUE(c.ok());
  Request req;
  req.path = "/x";
  ASSERT_TRUE((*c)->send(req).ok());
  EXPECT_EQ(auth, "Bearer file-token");
}

// How many of a client's requests are on the wire at once follows its rate limit (client-go multiplexes them
// over HTTP/2 without a bound of its own): 6 at the default QPS of 20, qps/10 above that, 64 when unlimited.
// 16 callers at once; the server holds each request until the expected number are in flight together (or 10 s),
// then a little longer, so a pool larger than expected shows as more in flight. (The fake server's listen backlog
// is short: a connection may wait out a SYN retry of a second or three, hence the generous 10 s.)
TEST_F(FakeServer, RequestsInFlightFollowTheClientsQps) {
  server_.new_task_queue = [] { return new httplib::ThreadPool(40); };
  std::mutex mu;
  std::condition_variable cv;
  int inFlight = 0, most = 0, expect = 0;
  server_.Get("/api/v1/namespaces/ns/pods/p", [&](const httplib::Request&, httplib::Response& res) {
    {
      std::unique_lock l(mu);
      most = std::max(most, ++inFlight);
      cv.notify_all();
      cv.wait_for(l, std::chrono::seconds(10), [&] { return most >= expect; });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    {
      std::lock_guard l(mu);
      --inFlight;
    }
    res.set_content(R"({"metadata":{"name":"p"}})", "application/json");
  });
  start();
  auto mostInFlight = [&](float qps, int expected) {
    RestConfig cfg;
    cfg.host = "http://127.0.0.1:" + std::to_string(port_);
    cfg.qps = qps;
    cfg.burst = 100;
    auto c = RestClient::create(cfg, RealClock::get());
    EXPECT_TRUE(c.ok());
    {
      std::lock_guard l(mu);
      most = 0;
      expect = expected;
    }
    std::vector<std::thread> callers;
    for (int i = 0; i < 16; ++i)
      callers.emplace_back([&] { EXPECT_TRUE(get<api::core::v1::Pod>(**c, "ns", "p").ok()); });
    for (auto& t : callers) t.join();
    std::lock_guard l(mu);
    return most;
  };
  EXPECT_EQ(mostInFlight(20, 6), 6);
  EXPECT_EQ(mostInFlight(100, 10), 10);
  EXPECT_EQ(mostInFlight(-1, 16), 16);
}

}  // namespace
}  // namespace kcm::client
