// ttl-after-finished-controller on the real cluster, as upstream test/e2e/apps/ttl_after_finished.go checks it: a
// finished Job with ttlSecondsAfterFinished is deleted that long after it finished, its pods first (foreground
// propagation, carried out by the garbage collector). No job-controller runs here: the test finishes the Jobs itself
// through the status subresource (SuccessCriteriaMet, then Complete, as the apiserver requires).
#include <ctime>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class TTLAfterFinished : public SoloKcmSuite<TTLAfterFinished> {
 public:
  static constexpr const char* kControllers = "ttl-after-finished-controller,garbage-collector-controller";
  static constexpr const char* kLogName = "kcm-ttl-after-finished";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  static std::string rfc3339(std::time_t t) {
    char buf[32];
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
  }
  // A Job that runs nothing here (no job-controller), with `ttl` when not empty; returns its UID.
  std::string job(const std::string& name, const std::string& ttl) {
    apply(R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":")" + name + R"("},"spec":{)" +
          (ttl.empty() ? "" : R"("ttlSecondsAfterFinished":)" + ttl + ",") +
          R"("template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}})");
    return kubectl({"get", "job", name, "-n", ns(), "-o", "jsonpath={.metadata.uid}"}).out;
  }
  void finish(const std::string& name) {
    const std::time_t now = std::time(nullptr);
    const std::string t = rfc3339(now), start = rfc3339(now - 5);
    ExecResult r = kubectl({"patch", "job", name, "-n", ns(), "--subresource=status", "--type=merge", "-p",
                            R"({"status":{"startTime":")" + start + R"(","completionTime":")" + t +
                                R"(","succeeded":1,"conditions":[{"type":"SuccessCriteriaMet","status":"True",)"
                                R"("lastTransitionTime":")" + t + R"("},{"type":"Complete","status":"True",)"
                                R"("lastTransitionTime":")" + t + R"("}]}})"});
    ASSERT_TRUE(r.ok()) << r.err;
  }
  bool exists(const std::string& kind, const std::string& name) {
    return kubectl({"get", kind, name, "-n", ns(), "-o", "name"}).ok();
  }
};

// "job should be deleted once it finishes after TTL seconds", with a pod of the Job deleted first.
TEST_F(TTLAfterFinished, AFinishedJobAndItsPodsGoAfterTheTTL) {
  const std::string uid = job("done", "3");
  apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"done-worker","ownerReferences":[{"apiVersion":"batch/v1",
    "kind":"Job","name":"done","uid":")" + uid + R"(","controller":true,"blockOwnerDeletion":true}]},
    "spec":{"nodeName":"kwok-node-0","restartPolicy":"Never","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}})");
  job("unfinished", "0");
  finish("done");
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(1500ms);
  EXPECT_TRUE(exists("job", "done")) << "deleted before its 3 s TTL";
  EXPECT_TRUE(waitFor([&] { return !exists("job", "done"); }, 30s));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(secs, 2.0);
  EXPECT_FALSE(exists("pod", "done-worker"));
  EXPECT_TRUE(exists("job", "unfinished"));  // a TTL alone does nothing
}

// A TTL lowered on a finished Job takes effect; without a TTL a finished Job stays.
TEST_F(TTLAfterFinished, ALoweredTTLIsRespectedAndNoTTLKeepsTheJob) {
  job("later", "3600");
  job("kept", "");
  finish("later");
  finish("kept");
  std::this_thread::sleep_for(2s);
  EXPECT_TRUE(exists("job", "later"));
  ASSERT_TRUE(kubectl({"patch", "job", "later", "-n", ns(), "--type=merge", "-p",
                       R"({"spec":{"ttlSecondsAfterFinished":0}})"})
                  .ok());
  EXPECT_TRUE(waitFor([&] { return !exists("job", "later"); }, 30s));
  EXPECT_TRUE(exists("job", "kept"));
}

}  // namespace
}  // namespace kcm::e2e
