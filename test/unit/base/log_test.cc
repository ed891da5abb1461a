#include "base/log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

// component-base's JSON logger: msg and one field per key, "v" on info lines only, numbers and booleans typed,
// everything on stderr.
TEST(Log, JsonFormatWritesUpstreamsFields) {
  setJsonFormat(true);
  testing::internal::CaptureStderr();
  write('I', "/x/y/file.cc", 12, "\"Starting\" version=\"v1\" workers=5 ok=true detail={a b}", 2);
  write('E', "/x/y/file.cc", 13, "\"Unhandled Error\" err=\"sync \\\"ns/x\\\" failed\" logger=\"UnhandledError\"");
  write('I', "/x/y/file.cc", 14, "FLAG: --v=\"4\"", 1);
  std::string out = testing::internal::GetCapturedStderr();
  setJsonFormat(false);
  std::vector<std::string> lines;
  for (size_t p = 0, n; (n = out.find('\n', p)) != std::string::npos; p = n + 1) lines.push_back(out.substr(p, n - p));
  ASSERT_EQ(lines.size(), 3u) << out;
  EXPECT_EQ(lines[0].rfind("{\"ts\":", 0), 0u) << out;
  EXPECT_NE(lines[0].find(",\"caller\":\"file.cc:12\",\"msg\":\"Starting\",\"v\":2,\"version\":\"v1\",\"workers\":5,"
                          "\"ok\":true,\"detail\":\"{a b}\"}"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find("\"msg\":\"Unhandled Error\",\"err\":\"sync \\\"ns/x\\\" failed\",\"logger\":\"UnhandledError\"}"),
            std::string::npos)
      << lines[1];
  EXPECT_EQ(lines[1].find("\"v\":"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("\"msg\":\"FLAG: --v=\\\"4\\\"\",\"v\":1}"), std::string::npos) << lines[2];
  // ts is in milliseconds since the epoch, as zap's epoch-millis encoder writes it.
  EXPECT_GT(std::stod(lines[0].substr(6)), 1.7e12);
}

}  // namespace
}  // namespace kcm::log
