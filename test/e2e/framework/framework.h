#pragma once
// E2E framework: drives the real local control plane started by hack/cluster.sh through kubectl,
// and gives each test its own namespace (deleted afterwards, even when the test fails).
// Environment (from `hack/cluster.sh env NAME`): KUBECONFIG (admin), CLUSTER_DIR, and PATH with the
// pinned kubectl first.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/subprocess.h"

namespace kcm::e2e {

using Json = nlohmann::json;
using ::kcm::ExecResult;
using ::kcm::exec;
using namespace std::chrono_literals;

// Cluster facts read from the environment; aborts the test binary when they are missing.
struct Cluster {
  std::string kubeconfig;
  std::string dir;
  static const Cluster& get();
};

// `kubectl <args>` against the suite's cluster (admin identity).
ExecResult kubectl(const std::vector<std::string>& args, const std::string& input = "",
                   std::chrono::seconds timeout = 60s);
// `kubectl <args> -o json`, parsed; fails the current test (and returns null) when kubectl fails.
Json kubectlJson(const std::vector<std::string>& args);

// The Events of namespace `ns` with this reason (none when kubectl fails).
std::vector<Json> eventsWithReason(const std::string& ns, const std::string& reason);

// Polls `probe` every `interval` until it returns true or `timeout` passes. Returns whether it became true.
bool waitFor(const std::function<bool()>& probe, std::chrono::milliseconds timeout,
             std::chrono::milliseconds interval = 250ms);

// Condition `type` of an object's status.conditions, or "" when absent.
std::string conditionStatus(const Json& obj, const std::string& type);

// ServiceAccount `sa` and its legacy token Secret "<sa>-token" in `ns`; the Secret once the token controller filled
// data.token, or null after `timeout`.
Json createLegacyTokenSecret(const std::string& ns, const std::string& sa, std::chrono::seconds timeout);

// Base fixture: a fresh namespace per test.
class E2ETest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // `kubectl apply -n <ns> -f -` with the given YAML/JSON.
  void apply(const std::string& manifest);
  const std::string& ns() const { return ns_; }

 private:
  std::string ns_;
};

}  // namespace kcm::e2e
