// pod-garbage-collector-controller on the real cluster, run alone by a kube-controller-manager without leader
// election and with --terminated-pod-gc-threshold=5.
#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class PodGC : public SoloKcmSuite<PodGC> {
 public:
  static constexpr const char* kControllers = "pod-garbage-collector-controller";
  static constexpr const char* kLogName = "kcm-podgc";
  static std::vector<std::string> extraFlags() { return {"--terminated-pod-gc-threshold=5"}; }

 protected:
  void createPod(const std::string& name, const std::string& nodeName = "") {
    std::string spec = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"("},"spec":{)" +
                       (nodeName.empty() ? "" : R"("nodeName":")" + nodeName + R"(",)") +
                       R"("containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}})";
    ASSERT_TRUE(kubectl({"create", "-n", ns(), "-f", "-"}, spec).ok());
  }
  std::vector<std::string> podNames() {
    std::vector<std::string> out;
    Json pods = kubectlJson({"get", "pods", "-n", ns()});
    if (pods.is_object())
      for (const Json& p : pods["items"]) out.push_back(p["metadata"]["name"]);
    return out;
  }
};

TEST_F(PodGC, TerminatedPodsOverTheThresholdAreDeletedOldestFirst) {
  // The older batch has names that sort last: deletion by name would keep them, by age removes them.
  for (int i = 0; i < 5; ++i) createPod("z-old-" + std::to_string(i));
  std::this_thread::sleep_for(1500ms);  // creationTimestamp has second precision
  for (int i = 0; i < 5; ++i) createPod("a-new-" + std::to_string(i));
  for (const auto& p : podNames())
    ASSERT_TRUE(kubectl({"patch", "pod", p, "-n", ns(), "--subresource=status", "--type=merge", "-p",
                         R"({"status":{"phase":"Succeeded"}})"}).ok());
  ASSERT_TRUE(waitFor([&] { return podNames().size() == 5; }, 60s)) << podNames().size() << "\n" << kcm_->log();
  for (const auto& p : podNames()) EXPECT_EQ(p.rfind("a-new-", 0), 0u) << p << " should have been deleted first";
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(podNames().size(), 5u);  // exactly down to the threshold
}

TEST_F(PodGC, PodsOfANodeThatNoLongerExistsAreDeletedAfterQuarantine) {
  createPod("orphan", "ghost-node-that-never-existed");
  createPod("kept");
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitFor([&] {
    auto names = podNames();
    return std::find(names.begin(), names.end(), "orphan") == names.end();
  }, 120s)) << kcm_->log();
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(took, 35.0) << "deleted before the 40 s quarantine";
  auto names = podNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "kept"), names.end());
  EXPECT_NE(kcm_->log().find("Found orphaned Pod assigned to the Node"), std::string::npos);
}

}  // namespace
}  // namespace kcm::e2e
