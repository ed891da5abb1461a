#include "version/version.h"

#include <gtest/gtest.h>

#include <regex>

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

}  // namespace
}  // namespace kcm::version
