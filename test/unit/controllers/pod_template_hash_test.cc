// The pod-template-hash against upstream's: testdata/pod_template_hash/golden.json holds templates with the hash
// upstream's controller.ComputeHash gives them and the text it hashed, produced by
// hack/update-pod-template-hash.sh (Go, at the pinned Kubernetes release) from cases.json.
#include "controllers/util/pod_template_hash.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "api/gen/core_v1_codec.h"
#include "api/support/codec.h"
#include "controllers/deployment/util/deployment_util.h"

namespace kcm::controllers {
namespace {

using api::core::v1::PodTemplateSpec;

nlohmann::json readGolden() {
  std::ifstream f(std::string(KCM_TESTDATA_DIR) + "/controllers/testdata/pod_template_hash/golden.json");
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// Where two dumps first differ, with some context: a whole dump is kilobytes on one line.
std::string firstDifference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  const size_t from = i > 80 ? i - 80 : 0;
  return "at byte " + std::to_string(i) + "\n  want: ..." + want.substr(from, 200) + "\n  got:  ..." +
         got.substr(from, 200);
}

TEST(PodTemplateHash, MatchesUpstreamOnEveryGoldenTemplate) {
  const nlohmann::json golden = readGolden();
  ASSERT_TRUE(golden.is_array());
  EXPECT_GE(golden.size(), 20u);
  for (const auto& c : golden) {
    const std::string name = c.at("name");
    SCOPED_TRACE(name);
    PodTemplateSpec t;
    ASSERT_TRUE(api::decodeJson(c.at("template").get<std::string>(), t).ok());
    std::optional<int32_t> collisionCount;
    if (!c.at("collisionCount").is_null()) collisionCount = c.at("collisionCount").get<int32_t>();

    const std::string dump = podTemplateDumpForHash(t);
    const std::string want = c.at("dump");
    EXPECT_EQ(dump, want) << firstDifference(want, dump);
    // "wire" cases: JSON Go decodes differently from protobuf, which is what upstream reads (see cases.json).
    const std::string wantHash = c.value("expect", "") == "wire" ? c.at("wireHash") : c.at("hash");
    EXPECT_EQ(computeHash(t, collisionCount), wantHash);
  }
}

TEST(PodTemplateHash, TheDeploymentControllersHashIsUpstreams) {
  const nlohmann::json golden = readGolden();
  for (const auto& c : golden) {
    if (c.at("name") != "as-served-by-apiserver") continue;
    PodTemplateSpec t;
    ASSERT_TRUE(api::decodeJson(c.at("template").get<std::string>(), t).ok());
    EXPECT_EQ(deploymentutil::computeHash(t, std::nullopt), c.at("hash").get<std::string>());
    return;
  }
  FAIL() << "golden case as-served-by-apiserver not found";
}

TEST(PodTemplateHash, CopiesHashAlikeAndAnyFieldChangesIt) {
  PodTemplateSpec t;
  ASSERT_TRUE(api::decodeJson(R"({"metadata":{"labels":{"app":"a"}},
    "spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"1"}}}]}})",
                              t)
                  .ok());
  const PodTemplateSpec copy = t;
  const std::string base = computeHash(t, std::nullopt);
  EXPECT_EQ(computeHash(copy, std::nullopt), base);

  PodTemplateSpec label = t;
  label.metadata.labels["app"] = "b";
  EXPECT_NE(computeHash(label, std::nullopt), base);
  PodTemplateSpec quantity = t;
  quantity.spec.containers[0].resources.limits["cpu"] = *api::Quantity::parse("1000m");  // equal, not identical
  EXPECT_NE(computeHash(quantity, std::nullopt), base);
  PodTemplateSpec pointer = t;
  pointer.spec.terminationGracePeriodSeconds = 0;  // set to zero differs from unset
  EXPECT_NE(computeHash(pointer, std::nullopt), base);
}

}  // namespace
}  // namespace kcm::controllers
