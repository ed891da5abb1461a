#include "framework/framework.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

namespace kcm::e2e {
namespace {

// A crash of the test binary loses its JSON report; say which test was running and which signal it was before
// the default action (core, exit status) takes over, so the lane's log names the culprit.
void reportCrash(int sig) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  char line[512];
  int n = std::snprintf(line, sizeof line, "\n*** e2e: signal %d (%s) in %s.%s\n", sig, strsignal(sig),
                        info ? info->test_suite_name() : "<no test>", info ? info->name() : "");
  if (n > 0) (void)!write(STDERR_FILENO, line, std::min<size_t>(static_cast<size_t>(n), sizeof line - 1));
  signal(sig, SIG_DFL);
  raise(sig);
}

[[maybe_unused]] const bool kCrashReporter = [] {
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) signal(sig, reportCrash);
  return true;
}();

}  // namespace

const Cluster& Cluster::get() {
  static const Cluster c = [] {
    Cluster c;
    const char* kc = std::getenv("KUBECONFIG");
    const char* dir = std::getenv("CLUSTER_DIR");
    if (!kc || !dir) {
      std::fprintf(stderr,
                   "e2e: KUBECONFIG and CLUSTER_DIR must be set; run through test/e2e/run.sh "
                   "or eval \"$(hack/cluster.sh env NAME)\"\n");
      std::exit(2);
    }
    c.kubeconfig = kc;
    c.dir = dir;
    return c;
  }();
  return c;
}

ExecResult kubectl(const std::vector<std::string>& args, const std::string& input, std::chrono::seconds timeout) {
  std::vector<std::string> argv = {"kubectl", "--kubeconfig=" + Cluster::get().kubeconfig};
  argv.insert(argv.end(), args.begin(), args.end());
  return exec(argv, input, timeout);
}

std::vector<Json> eventsWithReason(const std::string& ns, const std::string& reason) {
  std::vector<Json> out;
  ExecResult r = kubectl({"get", "events", "-n", ns, "-o", "json"});
  if (!r.ok()) return out;
  const Json list = Json::parse(r.out, nullptr, false);  // kept alive for the loop
  if (!list.is_object()) return out;
  const Json items = list.value("items", Json::array());
  for (const Json& e : items)
    if (e.value("reason", "") == reason) out.push_back(e);
  return out;
}

Json kubectlJson(const std::vector<std::string>& args) {
  std::vector<std::string> a = args;
  a.push_back("-o");
  a.push_back("json");
  ExecResult r = kubectl(a);
  if (!r.ok()) {
    ADD_FAILURE() << "kubectl failed (exit " << r.exitCode << "): " << r.err;
    return nullptr;
  }
  Json j = Json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) ADD_FAILURE() << "kubectl printed no JSON: " << r.out.substr(0, 500);
  return j;
}

bool waitFor(const std::function<bool()>& probe, std::chrono::milliseconds timeout,
             std::chrono::milliseconds interval) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (probe()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(interval);
  }
}

std::string conditionStatus(const Json& obj, const std::string& type) {
  if (!obj.is_object() || !obj.contains("status")) return "";
  const Json& st = obj["status"];
  if (!st.contains("conditions")) return "";
  for (const Json& c : st["conditions"])
    if (c.value("type", "") == type) return c.value("status", "");
  return "";
}

void E2ETest::SetUp() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string base = std::string(info->test_suite_name()) + "-" + info->name();
  std::string name;
  for (char ch : base) {
    char c = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  }
  name = "e2e-" + name.substr(0, 40);
  while (!name.empty() && name.back() == '-') name.pop_back();
  static std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(getpid()));
  const char* alphabet = "bcdfghjklmnpqrstvwxz2456789";
  name += '-';
  for (int i = 0; i < 5; ++i) name += alphabet[rng() % 27];
  ns_ = name;
  ExecResult r = kubectl({"create", "namespace", ns_});
  ASSERT_TRUE(r.ok()) << "creating namespace " << ns_ << ": " << r.err;
}

void E2ETest::TearDown() {
  if (ns_.empty()) return;
  // Without a namespace controller the namespace stays Terminating; the suite's cluster goes away anyway.
  ExecResult r = kubectl({"delete", "namespace", ns_, "--wait=false", "--ignore-not-found"});
  if (!r.ok()) std::fprintf(stderr, "cleanup: deleting namespace %s: %s\n", ns_.c_str(), r.err.c_str());
}

Json createLegacyTokenSecret(const std::string& ns, const std::string& sa, std::chrono::seconds timeout) {
  kubectl({"apply", "-n", ns, "-f", "-"},
          R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":")" + sa + R"("}})");
  kubectl({"apply", "-n", ns, "-f", "-"},
          R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":")" + sa + R"(-token",
            "annotations":{"kubernetes.io/service-account.name":")" + sa +
              R"("}},"type":"kubernetes.io/service-account-token"})");
  Json secret;
  const bool filled = waitFor([&] {
    secret = kubectlJson({"get", "secret", sa + "-token", "-n", ns});
    return secret.is_object() && secret.contains("data") && secret["data"].contains("token");
  }, timeout);
  return filled ? secret : Json();
}

void E2ETest::apply(const std::string& manifest) {
  ExecResult r = kubectl({"apply", "-n", ns_, "-f", "-"}, manifest);
  ASSERT_TRUE(r.ok()) << "kubectl apply failed: " << r.err << "\n" << manifest;
}

}  // namespace kcm::e2e
