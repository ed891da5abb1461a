#pragma once
// A test suite sharing one solo kcm (startSoloKcm) across its tests, each test in its own namespace with a
// `default` ServiceAccount so pods are admitted. Suite supplies:
//   static constexpr const char* kControllers, kLogName;  static std::vector<std::string> extraFlags();
#include <memory>

#include "framework/framework.h"
#include "framework/kcm_process.h"

namespace kcm::e2e {

template <class Suite>
class SoloKcmSuite : public E2ETest {
 protected:
  static void SetUpTestSuite() { kcm_.reset(startSoloKcm(Suite::kControllers, Suite::extraFlags(), Suite::kLogName)); }
  static void TearDownTestSuite() { kcm_.reset(); }
  void SetUp() override {
    E2ETest::SetUp();
    apply(R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}})");
  }
  // Without a garbage collector in the suite, workloads are scaled to zero (and stray pods deleted) so their pods
  // are gone before the namespace is deleted. `kinds`: e.g. "deployment,rs".
  void scaleAllToZero(const std::string& kinds) {
    kubectl({"scale", kinds, "--all", "-n", ns(), "--replicas=0"});
    kubectl({"delete", "pods", "--all", "-n", ns(), "--wait=false"});
    waitFor([&] { return kubectl({"get", "pods", "-n", ns(), "-o", "name"}).out.empty(); }, 120s, 1s);
  }
  static inline std::unique_ptr<KcmProcess> kcm_;
};

}  // namespace kcm::e2e
