#include "version/version.h"

#include <gtest/gtest.h>

#include <regex>
#include <vector>

namespace kcm::version {
namespace {

TEST(Version, ReportsThePinnedKubernetesRelease) {
  const Info& i = get();
  EXPECT_TRUE(std::regex_match(i.gitVersion, std::regex(R"(v1\.\d+\.\d+)"))) << i.gitVersion;
  EXPECT_EQ(i.major, "1");
  EXPECT_EQ("v" + i.major + "." + i.minor + ".", i.gitVersion.substr(0, i.major.size() + i.minor.size() + 3));
  EXPECT_EQ(versionLine(), "Kubernetes " + i.gitVersion);
}

TEST(Version, UserAgentHasClientGoShape) {
  std::string ua = userAgent("kube-controller-manager", "replicaset-controller");
  EXPECT_TRUE(std::regex_match(
      ua, std::regex(R"(kube-controller-manager/v1\.\d+\.\d+ \(linux/amd64\) kubernetes/\w{1,7}/replicaset-controller)")))
      << ua;
  EXPECT_EQ(userAgent("kcm").find("/replicaset"), std::string::npos);
}

TEST(Version, RawIsUpstreamsInfoWithOurBuildLast) {
  const std::string raw = rawLine();
  // Go's %#v of component-base's version.Info: every field quoted, in its order.
  std::regex field(R"re((\w+):"([^"]*)")re");
  std::vector<std::string> names;
  for (auto it = std::sregex_iterator(raw.begin(), raw.end(), field); it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1]);
  EXPECT_EQ(names, (std::vector<std::string>{"Major", "Minor", "EmulationMajor", "EmulationMinor",
                                             "MinCompatibilityMajor", "MinCompatibilityMinor", "GitVersion",
                                             "GitCommit", "GitTreeState", "BuildDate", "GoVersion", "Compiler",
                                             "Platform", "Build"}));
  EXPECT_EQ(raw.rfind("version.Info{Major:\"1\", ", 0), 0u) << raw;
  EXPECT_NE(raw.find("GitVersion:\"" + get().gitVersion + "\""), std::string::npos) << raw;
  EXPECT_TRUE(std::regex_search(raw, std::regex(R"re(BuildDate:"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")re"))) << raw;
  EXPECT_TRUE(std::regex_search(raw, std::regex(R"re(GitTreeState:"(clean|dirty)")re"))) << raw;
  EXPECT_EQ(get().build.rfind("kcm-cpp ", 0), 0u) << get().build;
}

}  // namespace
}  // namespace kcm::version
