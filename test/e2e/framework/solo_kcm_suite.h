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
  static inline std::unique_ptr<KcmProcess> kcm_;
};

}  // namespace kcm::e2e
