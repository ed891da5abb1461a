// validatingadmissionpolicy-status-controller on the real cluster: upstream's e2e cases
// (test/e2e/apimachinery/validatingadmissionpolicy.go "should type check validation expressions" and "should type
// check a CRD"): a policy whose expressions fit the matched kind's schema gets status.typeChecking without warnings,
// a type-confused one gets one warning per failing expression with upstream's field references and cel-go's
// texts; a policy changed later is checked again at its new generation.
#include <nlohmann/json.hpp>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class VAPStatus : public SoloKcmSuite<VAPStatus> {
 public:
  static constexpr const char* kControllers = "validatingadmissionpolicy-status-controller";
  static constexpr const char* kLogName = "kcm-vap-status";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  void TearDown() override {
    for (const auto& p : policies_) kubectl({"delete", "validatingadmissionpolicy", p, "--wait=false"});
    for (const auto& c : crds_) kubectl({"delete", "crd", c, "--wait=false"});
    SoloKcmSuite::TearDown();
  }
  // A policy for GROUP/v1 RESOURCE with these validations (a JSON array); returns its name.
  std::string policy(const std::string& suffix, const std::string& group, const std::string& resource,
                     const std::string& validations) {
    const std::string name = ns() + "." + suffix + ".example.com";
    apply(R"({"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":")" +
          name + R"("},"spec":{"matchConstraints":{"namespaceSelector":{"matchLabels":{"e2e-ns":")" + ns() +
          R"("}},"resourceRules":[{"apiGroups":[")" + group + R"("],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],)"
          R"("resources":[")" + resource + R"("]}]},"validations":)" + validations + "}}");
    policies_.push_back(name);
    return name;
  }
  // The policy once status.typeChecking is set (non-null marks completion, as upstream's test waits for).
  nlohmann::json checked(const std::string& name, int64_t generation = 1) {
    nlohmann::json p;
    const bool done = waitFor(
        [&] {
          ExecResult r = kubectl({"get", "validatingadmissionpolicy", name, "-o", "json"});
          if (!r.ok()) return false;
          p = nlohmann::json::parse(r.out, nullptr, false);
          return p.is_object() && p["status"].contains("typeChecking") &&
                 p["status"].value("observedGeneration", int64_t{0}) >= generation;
        },
        60s, 100ms);
    EXPECT_TRUE(done) << name << ": " << p.dump();
    return p;
  }
  static nlohmann::json warnings(const nlohmann::json& p) {
    return p["status"]["typeChecking"].value("expressionWarnings", nlohmann::json::array());
  }
  std::vector<std::string> policies_, crds_;
};

TEST_F(VAPStatus, TypeChecksValidationExpressions) {
  auto correct = checked(policy("correct-policy", "apps", "deployments", R"([{"expression":"object.spec.replicas > 1"}])"));
  EXPECT_TRUE(warnings(correct).empty()) << correct["status"].dump();
  EXPECT_EQ(correct["status"]["observedGeneration"], 1);

  auto confused = checked(policy("confused-policy", "apps", "deployments",
                                 R"([{"expression":"object.spec.replicas > '1'",)"
                                 R"("messageExpression":"'wants replicas > 1, got ' + object.spec.replicas"}])"));
  auto w = warnings(confused);
  ASSERT_EQ(w.size(), 2u) << confused["status"].dump();
  EXPECT_EQ(w[0]["fieldRef"], "spec.validations[0].expression");
  EXPECT_NE(w[0]["warning"].get<std::string>().find(
                "found no matching overload for '_>_' applied to '(int, string)'"), std::string::npos);
  EXPECT_EQ(w[0]["warning"],
            "apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_>_' applied to "
            "'(int, string)'\n | object.spec.replicas > '1'\n | .....................^\n");
  EXPECT_EQ(w[1]["fieldRef"], "spec.validations[0].messageExpression");
  EXPECT_NE(w[1]["warning"].get<std::string>().find(
                "found no matching overload for '_+_' applied to '(string, int)'"), std::string::npos);
}

TEST_F(VAPStatus, TypeChecksACRD) {
  const std::string group = "stable." + ns() + ".example.com";
  const std::string crd = "crontabs." + group;
  apply(R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":")" + crd +
        R"("},"spec":{"group":")" + group + R"(","scope":"Namespaced","names":{"plural":"crontabs","singular":"crontab",)"
        R"("kind":"CronTab","shortNames":["ct"]},"versions":[{"name":"v1","served":true,"storage":true,"schema":)"
        R"({"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{)"
        R"("cronSpec":{"type":"string"},"image":{"type":"string"},"replicas":{"type":"integer"}}}}}}}]}})");
  crds_.push_back(crd);
  ASSERT_TRUE(waitFor([&] { return kubectl({"get", "--raw", "/openapi/v3/apis/" + group + "/v1"}).ok(); }, 60s))
      << "the CRD's schema is published";

  auto correct = checked(policy("correct-crd-policy", group, "crontabs", R"([{"expression":"object.spec.replicas > 1"}])"));
  EXPECT_TRUE(warnings(correct).empty()) << correct["status"].dump();

  auto confused = checked(policy("confused-crd-policy", group, "crontabs",
                                 R"([{"expression":"object.spec.replicas > '1'"},)"
                                 R"({"expression":"object.spec.maxRetries < 10"}])"));
  auto w = warnings(confused);
  ASSERT_EQ(w.size(), 2u) << confused["status"].dump();
  EXPECT_EQ(w[0]["fieldRef"], "spec.validations[0].expression");
  EXPECT_NE(w[0]["warning"].get<std::string>().find(
                "found no matching overload for '_>_' applied to '(int, string)'"), std::string::npos);
  EXPECT_EQ(w[1]["fieldRef"], "spec.validations[1].expression");
  EXPECT_EQ(w[1]["warning"], group + "/v1, Kind=CronTab: ERROR: <input>:1:12: undefined field 'maxRetries'\n"
                                     " | object.spec.maxRetries < 10\n | ...........^\n");
}

TEST_F(VAPStatus, AChangedPolicyIsCheckedAgainAtItsNewGeneration) {
  const std::string name = policy("changing", "apps", "deployments", R"([{"expression":"object.spec.replicas > 1"}])");
  EXPECT_TRUE(warnings(checked(name)).empty());
  ExecResult r = kubectl({"patch", "validatingadmissionpolicy", name, "--type=json", "-p",
                          R"([{"op":"add","path":"/spec/validations/-","value":{"expression":"object.spec.paused + 1 == 2"}}])"});
  ASSERT_TRUE(r.ok()) << r.err;
  auto p = checked(name, 2);
  EXPECT_EQ(p["status"]["observedGeneration"], 2);
  auto w = warnings(p);
  ASSERT_EQ(w.size(), 1u) << p["status"].dump();
  EXPECT_EQ(w[0]["fieldRef"], "spec.validations[1].expression");
  EXPECT_NE(w[0]["warning"].get<std::string>().find("found no matching overload for '_+_' applied to '(bool, int)'"),
            std::string::npos);
  // Status written by the controller's field manager, nothing else.
  r = kubectl({"get", "validatingadmissionpolicy", name, "-o", "jsonpath={.metadata.managedFields[?(@.subresource==\"status\")].manager}"});
  EXPECT_EQ(r.out, "validatingadmissionpolicy-status");
}

}  // namespace
}  // namespace kcm::e2e
