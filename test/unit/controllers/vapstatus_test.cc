// validatingadmissionpolicy-status-controller (upstream pkg/controller/validatingadmissionpolicystatus's
// controller_test.go and the apiserver's typechecking_test.go cases) over the fake apiserver: the kinds to check
// come from resource rules (wildcards and subresources skipped, at most 10, sorted), each failing expression gives
// one warning per kind, and the status is applied only when the generation moved.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/gen/admissionregistration_v1_json.h"
#include "controllers/validatingadmissionpolicystatus/controller.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::validatingadmissionpolicystatus {
namespace {

using testing::FakeApiServer;
using namespace std::chrono_literals;

const char* kAppsV1 = R"({"components": {"schemas": {
  "io.k8s.api.apps.v1.Deployment": {"type": "object",
    "x-kubernetes-group-version-kind": [{"group": "apps", "version": "v1", "kind": "Deployment"}],
    "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
      "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}},
  "io.k8s.api.apps.v1.ReplicaSet": {"type": "object",
    "x-kubernetes-group-version-kind": [{"group": "apps", "version": "v1", "kind": "ReplicaSet"}],
    "properties": {"spec": {"type": "object", "properties": {"replicas": {"type": "string"}}}}},
  "io.k8s.api.apps.v1.Limits": {"type": "object",
    "x-kubernetes-group-version-kind": [{"group": "apps", "version": "v1", "kind": "Limits"}],
    "properties": {"max": {"type": "integer"}}}
}}})";

class TypeCheckerTest : public ::testing::Test {
 protected:
  TypeChecker checker{
      [this](const std::string& g, const std::string& v, const std::string& r) -> Result<std::vector<GroupVersionKind>> {
        lookups.push_back(g + "/" + v + "/" + r);
        if (g == "apps" && v == "v1" && r == "deployments") return std::vector<GroupVersionKind>{{g, v, "Deployment"}};
        if (g == "apps" && v == "v1" && r == "replicasets") return std::vector<GroupVersionKind>{{g, v, "ReplicaSet"}};
        if (g == "apps" && v == "v1" && r == "limits") return std::vector<GroupVersionKind>{{g, v, "Limits"}};
        if (g == "" && v == "v1" && r.rfind("things", 0) == 0)
          return std::vector<GroupVersionKind>{{"", "v1", "Thing" + r.substr(6)}};
        return Status(StatusCode::kNotFound, "no matches");
      },
      [this] { ++resets; },
      [](const std::string& g, const std::string& v) -> Result<nlohmann::json> {
        if (g == "apps" && v == "v1") return nlohmann::json::parse(kAppsV1);
        return Status(StatusCode::kNotFound, "schema not found");
      }};
  std::vector<std::string> lookups;
  int resets = 0;

  static ValidatingAdmissionPolicy policy(std::vector<std::string> resources, std::vector<std::string> exprs) {
    ValidatingAdmissionPolicy p;
    p.metadata.name = "p";
    api::admissionregistration::v1::MatchResources m;
    api::admissionregistration::v1::NamedRuleWithOperations rule;
    rule.apiGroups = {"apps"};
    rule.apiVersions = {"v1"};
    rule.resources.assign(resources.begin(), resources.end());
    m.resourceRules.push_back(rule);
    p.spec.matchConstraints = m;
    for (auto& e : exprs) {
      api::admissionregistration::v1::Validation v;
      v.expression = e;
      p.spec.validations.push_back(v);
    }
    return p;
  }
};

TEST_F(TypeCheckerTest, OneWarningPerFailingExpressionWithEveryKindsIssues) {
  auto p = policy({"replicasets", "deployments"}, {"object.spec.replicas > 1", "has(object.spec)"});
  p.spec.validations[1].messageExpression = "'n=' + object.spec.replicas";
  auto w = checker.Check(p);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].fieldRef, "spec.validations[0].expression");
  EXPECT_EQ(w[0].warning,
            "apps/v1, Kind=ReplicaSet: ERROR: <input>:1:22: found no matching overload for '_>_' applied to "
            "'(string, int)'\n | object.spec.replicas > 1\n | .....................^\n");
  EXPECT_EQ(w[1].fieldRef, "spec.validations[1].messageExpression");
  EXPECT_EQ(w[1].warning,
            "apps/v1, Kind=Deployment: ERROR: <input>:1:6: found no matching overload for '_+_' applied to "
            "'(string, int)'\n | 'n=' + object.spec.replicas\n | .....^\n");
  EXPECT_EQ(lookups, (std::vector<std::string>{"apps/v1/deployments", "apps/v1/replicasets"})) << "sorted";
}

TEST_F(TypeCheckerTest, TwoKindsFailingJoinTheirTexts) {
  auto w = checker.Check(policy({"deployments", "replicasets"}, {"object.spec.replicas == true"}));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].warning,
            "apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_==_' applied to "
            "'(int, bool)'\n | object.spec.replicas == true\n | .....................^\n\n"
            "apps/v1, Kind=ReplicaSet: ERROR: <input>:1:22: found no matching overload for '_==_' applied to "
            "'(string, bool)'\n | object.spec.replicas == true\n | .....................^\n");
}

TEST_F(TypeCheckerTest, WildcardsSubresourcesAndUnknownResourcesAreNotChecked) {
  EXPECT_TRUE(checker.typesToCheck(policy({"*"}, {})).empty());
  EXPECT_TRUE(checker.typesToCheck(policy({"deployments/status"}, {})).empty());
  EXPECT_TRUE(checker.Check(policy({"*"}, {"object.nonsense > 'x'"})).empty());
  lookups.clear();
  EXPECT_TRUE(checker.typesToCheck(policy({"nothere", "alsonot"}, {})).empty());
  EXPECT_EQ(resets, 1) << "the REST mapper is reset at most once per policy";
  EXPECT_EQ(lookups.size(), 3u);
  auto wild = policy({"deployments"}, {});
  wild.spec.matchConstraints->resourceRules[0].apiVersions = {"*"};
  EXPECT_TRUE(checker.typesToCheck(wild).empty());
}

TEST_F(TypeCheckerTest, AtMostTenKinds) {
  ValidatingAdmissionPolicy p = policy({}, {});
  auto& rule = p.spec.matchConstraints->resourceRules[0];
  rule.apiGroups = {""};
  for (int i = 0; i < 12; ++i) rule.resources.push_back("things" + std::to_string(10 + i));
  auto kinds = checker.typesToCheck(p);
  ASSERT_EQ(kinds.size(), 10u);
  EXPECT_EQ(kinds.front().toString(), "/v1, Kind=Thing10");
  EXPECT_EQ(kinds.back().toString(), "/v1, Kind=Thing19");
}

TEST_F(TypeCheckerTest, ParamsAndVariables) {
  auto p = policy({"deployments"}, {"object.spec.replicas <= params.max", "variables.r > 'a'", "params.nope"});
  p.spec.paramKind = api::admissionregistration::v1::ParamKind{};
  p.spec.paramKind->apiVersion = "apps/v1";
  p.spec.paramKind->kind = "Limits";
  api::admissionregistration::v1::Variable v;
  v.name = "r";
  v.expression = "object.spec.replicas";
  p.spec.variables.push_back(v);
  auto w = checker.Check(p);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].fieldRef, "spec.validations[1].expression");
  EXPECT_NE(w[0].warning.find("'_>_' applied to '(int, string)'"), std::string::npos) << w[0].warning;
  EXPECT_EQ(w[1].fieldRef, "spec.validations[2].expression");
  EXPECT_NE(w[1].warning.find("undefined field 'nope'"), std::string::npos) << w[1].warning;
  p.spec.paramKind->kind = "Unknown";  // unresolvable: params is dyn
  EXPECT_EQ(checker.Check(p).size(), 1u);
}

class StatusControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addResource({"admissionregistration.k8s.io", "v1", "validatingadmissionpolicies",
                         "ValidatingAdmissionPolicy", false,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
  }
  ValidatingAdmissionPolicy add(int64_t generation, int64_t observed, const std::string& expr) {
    ValidatingAdmissionPolicy p;
    p.metadata.name = "policy";
    p.metadata.generation = generation;
    p.status.observedGeneration = observed;
    api::admissionregistration::v1::MatchResources m;
    api::admissionregistration::v1::NamedRuleWithOperations rule;
    rule.apiGroups = {"apps"}, rule.apiVersions = {"v1"}, rule.resources = {"deployments"};
    m.resourceRules.push_back(rule);
    p.spec.matchConstraints = m;
    api::admissionregistration::v1::Validation v;
    v.expression = expr;
    p.spec.validations.push_back(v);
    auto stored = server->add(p);
    factory.forType<ValidatingAdmissionPolicy>().store().upsert(
        "policy", std::make_shared<const ValidatingAdmissionPolicy>(stored));
    return stored;
  }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  std::shared_ptr<TypeChecker> checker = std::make_shared<TypeChecker>(
      [](const std::string& g, const std::string& v, const std::string&) -> Result<std::vector<GroupVersionKind>> {
        return std::vector<GroupVersionKind>{{g, v, "Deployment"}};
      },
      [] {}, [](const std::string&, const std::string&) -> Result<nlohmann::json> { return nlohmann::json::parse(kAppsV1); });
  Controller controller{server->client(), factory.forType<ValidatingAdmissionPolicy>(), checker, clock};
};

TEST_F(StatusControllerTest, AppliesObservedGenerationAndWarningsAsItsFieldManager) {
  add(2, 1, "object.spec.replicas > '1'");
  ASSERT_TRUE(controller.sync("policy").status.ok());
  auto patches = server->actionsFor("patch", "validatingadmissionpolicies/status");
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].patchType, "application/apply-patch+yaml");
  auto body = nlohmann::json::parse(patches[0].body);
  EXPECT_EQ(body["status"]["observedGeneration"], 2);
  ASSERT_EQ(body["status"]["typeChecking"]["expressionWarnings"].size(), 1u);
  EXPECT_EQ(body["status"]["typeChecking"]["expressionWarnings"][0]["fieldRef"], "spec.validations[0].expression");
  bool manager = false, force = false;
  for (const auto& [k, v] : patches[0].query) {
    manager |= k == "fieldManager" && v == "validatingadmissionpolicy-status";
    force |= k == "force" && v == "true";
  }
  EXPECT_TRUE(manager && force);
}

TEST_F(StatusControllerTest, NoWarningsIsAnEmptyTypeCheckingAndAnUpToDatePolicyIsLeftAlone) {
  add(1, 0, "object.spec.replicas > 1");
  ASSERT_TRUE(controller.sync("policy").status.ok());
  auto patches = server->actionsFor("patch", "validatingadmissionpolicies/status");
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(patches[0].body)["status"]["typeChecking"], nlohmann::json::object());
  add(3, 3, "object.spec.replicas > '1'");
  ASSERT_TRUE(controller.sync("policy").status.ok());
  EXPECT_EQ(server->actionsFor("patch", "validatingadmissionpolicies/status").size(), 1u);
  EXPECT_TRUE(controller.sync("gone").status.ok());
}

}  // namespace
}  // namespace kcm::controllers::validatingadmissionpolicystatus
