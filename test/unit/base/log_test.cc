#include "base/log.h"

#include <gtest/gtest.h>

namespace kcm::log {
namespace {

TEST(Log, VModuleOverridesVerbosityPerFile) {
  setVerbosity(1);
  setVModule("leader_elector=4,work*=3");
  EXPECT_EQ(verbosityFor("/src/leaderelection/leader_elector.cc"), 4);
  EXPECT_EQ(verbosityFor("src/runtime/workqueue.cc"), 3);
  EXPECT_EQ(verbosityFor("src/app/controller_manager.cc"), 1);
  setVModule("");
  EXPECT_EQ(verbosityFor("src/runtime/workqueue.cc"), 1);
  setVerbosity(0);
}

TEST(Log, JsonFormatWritesOneObjectPerLine) {
  setJsonFormat(true);
  testing::internal::CaptureStdout();
  write('I', "/x/y/file.cc", 12, "\"Starting\" version=\"v1\"");
  std::string out = testing::internal::GetCapturedStdout();
  setJsonFormat(false);
  EXPECT_EQ(out.rfind("{\"ts\":", 0), 0u) << out;
  EXPECT_NE(out.find("\"caller\":\"file.cc:12\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"msg\":\"\\\"Starting\\\" version=\\\"v1\\\"\""), std::string::npos) << out;
  EXPECT_EQ(out.back(), '\n');
}

}  // namespace
}  // namespace kcm::log
