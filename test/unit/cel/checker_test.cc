// The CEL type checker against cel-go's texts for the cases upstream's ValidatingAdmissionPolicy type-checking
// tests and e2e test check (k8s.io/apiserver/pkg/admission/plugin/policy/validating/typechecking_test.go,
// test/e2e/apimachinery/validatingadmissionpolicy.go), and the language features policies use.
#include <gtest/gtest.h>

#include "cel/checker.h"

namespace kcm::cel {
namespace {

TypePtr deploymentType() {
  auto container = object("D.spec.template.spec.containers.@idx",
                          {{"name", stringType()}, {"image", stringType()}, {"ports", listOf(intType())}});
  auto podSpec = object("D.spec.template.spec", {{"containers", listOf(container)}});
  auto tmpl = object("D.spec.template", {{"spec", podSpec}});
  auto spec = object("D.spec", {{"replicas", intType()}, {"paused", boolType()}, {"template", tmpl},
                                {"__namespace__", stringType()}, {"strategy", dynType()}});
  auto meta = object("D.metadata", {{"name", stringType()},
                                    {"labels", mapOf(stringType(), stringType())},
                                    {"creationTimestamp", timestampType()}});
  return object("D", {{"spec", spec}, {"metadata", meta}, {"apiVersion", stringType()}});
}

std::map<std::string, TypePtr> env() {
  return {{"object", deploymentType()}, {"oldObject", deploymentType()}, {"params", dynType()},
          {"variables", object("kubernetes.variables", {{"replicas", intType()}})}};
}

std::string issues(const std::string& expr) { return compile(expr, env()).issues; }
std::string typeOfExpr(const std::string& expr) {
  auto r = compile(expr, env());
  return r.type ? format(r.type) : "<error: " + r.issues + ">";
}

TEST(CelChecker, UpstreamsE2ETypeConfusionTexts) {
  EXPECT_EQ(issues("object.spec.replicas > 1"), "");
  EXPECT_EQ(issues("object.spec.replicas > '1'"),
            "ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'\n"
            " | object.spec.replicas > '1'\n"
            " | .....................^");
  EXPECT_EQ(issues("'wants replicas > 1, got ' + object.spec.replicas"),
            "ERROR: <input>:1:28: found no matching overload for '_+_' applied to '(string, int)'\n"
            " | 'wants replicas > 1, got ' + object.spec.replicas\n"
            " | ...........................^");
  EXPECT_EQ(issues("object.spec.maxRetries < 10"),
            "ERROR: <input>:1:12: undefined field 'maxRetries'\n"
            " | object.spec.maxRetries < 10\n"
            " | ...........^");
}

TEST(CelChecker, ErrorsAreSortedByPositionAndDoNotCascade) {
  EXPECT_EQ(issues("object.spec.nope.deeper == 1 && object.spec.replicas == 'x'"),
            "ERROR: <input>:1:12: undefined field 'nope'\n"
            " | object.spec.nope.deeper == 1 && object.spec.replicas == 'x'\n"
            " | ...........^\n"
            "ERROR: <input>:1:54: found no matching overload for '_==_' applied to '(int, string)'\n"
            " | object.spec.nope.deeper == 1 && object.spec.replicas == 'x'\n"
            " | .....................................................^");
}

TEST(CelChecker, OperatorsAndNumericComparisons) {
  EXPECT_EQ(typeOfExpr("object.spec.replicas + 1"), "int");
  EXPECT_EQ(typeOfExpr("object.spec.replicas > 1.5"), "bool");   // cross-type numeric comparison
  EXPECT_NE(issues("object.spec.replicas == 1.5"), "");         // but equality needs one type
  EXPECT_EQ(typeOfExpr("object.spec.paused ? 1 : 2"), "int");
  EXPECT_EQ(typeOfExpr("-object.spec.replicas"), "int");
  EXPECT_EQ(typeOfExpr("!object.spec.paused"), "bool");
  EXPECT_EQ(typeOfExpr("object.metadata.creationTimestamp - duration('1h')"), "timestamp");
  EXPECT_EQ(typeOfExpr("object.spec.replicas in [1, 2, 3]"), "bool");
  EXPECT_EQ(typeOfExpr("'app' in object.metadata.labels"), "bool");
  EXPECT_EQ(typeOfExpr("object.metadata.labels['app']"), "string");
  EXPECT_EQ(typeOfExpr("object.spec.template.spec.containers[0].name"), "string");
  EXPECT_EQ(issues("object.spec.paused && 1"),
            "ERROR: <input>:1:23: expected type 'bool' but found 'int'\n"
            " | object.spec.paused && 1\n"
            " | ......................^");
  EXPECT_EQ(issues("object.spec.replicas.foo"),
            "ERROR: <input>:1:21: type 'int' does not support field selection\n"
            " | object.spec.replicas.foo\n"
            " | ....................^");
}

TEST(CelChecker, MacrosExpandAsCelGoDoes) {
  EXPECT_EQ(typeOfExpr("object.spec.template.spec.containers.all(c, c.name != '')"), "bool");
  EXPECT_EQ(typeOfExpr("object.spec.template.spec.containers.map(c, c.name)"), "list(string)");
  EXPECT_EQ(typeOfExpr("object.spec.template.spec.containers.filter(c, c.image.startsWith('x'))"),
            "list(D.spec.template.spec.containers.@idx)");
  EXPECT_EQ(typeOfExpr("object.spec.template.spec.containers.exists_one(c, c.name == 'a')"), "bool");
  EXPECT_EQ(typeOfExpr("object.metadata.labels.exists(k, k.startsWith('a'))"), "bool");
  EXPECT_EQ(typeOfExpr("object.metadata.labels.all(k, v, v != k)"), "bool");
  EXPECT_EQ(typeOfExpr("has(object.spec.replicas)"), "bool");
  EXPECT_EQ(issues("object.spec.template.spec.containers.all(c, c.image)"),
            "ERROR: <input>:1:46: expected type 'bool' but found 'string'\n"
            " | object.spec.template.spec.containers.all(c, c.image)\n"
            " | .............................................^");
  EXPECT_EQ(issues("has(object.spec.nope)"),
            "ERROR: <input>:1:4: undefined field 'nope'\n"
            " | has(object.spec.nope)\n"
            " | ...^");
  EXPECT_NE(issues("object.spec.template.spec.containers.map(c, c.name).exists(n, n == 1)"), "");
  EXPECT_EQ(issues("object.spec.replicas.all(x, true)"),
            "ERROR: <input>:1:12: expression of type 'int' cannot be range of a comprehension (must be list, map, "
            "or dynamic)\n | object.spec.replicas.all(x, true)\n | ...........^");
}

TEST(CelChecker, LiteralsAreHomogeneous) {
  EXPECT_EQ(typeOfExpr("[1, 2]"), "list(int)");
  EXPECT_EQ(typeOfExpr("{'a': 1}"), "map(string, int)");
  EXPECT_EQ(issues("[1, 'a']"),
            "ERROR: <input>:1:5: expected type 'int' but found 'string'\n | [1, 'a']\n | ....^");
  EXPECT_EQ(typeOfExpr("[]"), "list(dyn)");
  // The homogeneous-literal validator, once the expression type-checks: dyn next to int is refused too.
  EXPECT_EQ(issues("[object.spec.strategy, 1]"),
            "ERROR: <input>:1:24: expected type 'dyn' but found 'int'\n | [object.spec.strategy, 1]\n | .......................^");
  EXPECT_EQ(issues("{'a': object.spec.strategy, 'b': 1}"),
            "ERROR: <input>:1:34: expected type 'dyn' but found 'int'\n | {'a': object.spec.strategy, 'b': 1}\n | .................................^");
  EXPECT_EQ(issues("'%s %d'.format([object.spec.strategy, 1])"), "") << "format's arguments are exempt";
}

TEST(CelChecker, DynParamsVariablesAndFunctionLibraries) {
  EXPECT_EQ(issues("params.maxReplicas > object.spec.replicas"), "");
  EXPECT_EQ(typeOfExpr("variables.replicas * 2"), "int");
  EXPECT_EQ(issues("variables.missing"),
            "ERROR: <input>:1:10: undefined field 'missing'\n | variables.missing\n | .........^");
  EXPECT_EQ(typeOfExpr("object.spec.strategy.type"), "dyn");
  EXPECT_EQ(typeOfExpr("size(object.spec.template.spec.containers)"), "int");
  EXPECT_EQ(typeOfExpr("object.metadata.name.size()"), "int");
  EXPECT_EQ(typeOfExpr("object.metadata.name.split('-')"), "list(string)");
  EXPECT_EQ(typeOfExpr("quantity('1Gi').isGreaterThan(quantity('1Mi'))"), "bool");
  EXPECT_EQ(typeOfExpr("sets.contains([1], [object.spec.replicas])"), "bool");
  EXPECT_EQ(typeOfExpr("optional.of(1).orValue(2)"), "int");
  EXPECT_EQ(typeOfExpr("object.?spec.?replicas.orValue(1)"), "int");
  EXPECT_EQ(typeOfExpr("type(object.spec.replicas) == int"), "bool");
  EXPECT_EQ(typeOfExpr("object.?spec.?replicas.optMap(r, r * 2).orValue(0)"), "int");
  EXPECT_EQ(typeOfExpr("object.?spec.optFlatMap(s, s.?replicas)"), "optional_type(int)");
  EXPECT_EQ(typeOfExpr("object.spec.template.spec.containers.sortBy(c, c.name)"),
            "list(D.spec.template.spec.containers.@idx)");
  EXPECT_EQ(issues("object.?spec.optMap(s, s.nope)"),
            "ERROR: <input>:1:25: undefined field 'nope'\n | object.?spec.optMap(s, s.nope)\n | ........................^");
  EXPECT_EQ(typeOfExpr("object.spec.__namespace__"), "string");
  EXPECT_EQ(typeOfExpr("object.spec.namespace"), "string") << "a keyword property is found by its escaped name";
  EXPECT_EQ(typeOfExpr("someUnmodelledLibraryFunction(object)"), "dyn");
  EXPECT_EQ(issues("size(object.spec.replicas)"),
            "ERROR: <input>:1:5: found no matching overload for 'size' applied to '(int)'\n"
            " | size(object.spec.replicas)\n | ....^");
  EXPECT_EQ(issues("object.spec.replicas.startsWith('a')"),
            "ERROR: <input>:1:32: found no matching overload for 'startsWith' applied to 'int.(string)'\n"
            " | object.spec.replicas.startsWith('a')\n | ...............................^");
  EXPECT_EQ(issues("nope > 1"),
            "ERROR: <input>:1:1: undeclared reference to 'nope' (in container '')\n | nope > 1\n | ^");
}

TEST(CelChecker, CaretLineCountsCodePointsAndWideCharacters) {
  EXPECT_EQ(issues("'é' + 1"), "ERROR: <input>:1:5: found no matching overload for '_+_' applied to '(string, int)'\n"
                               " | 'é' + 1\n | .\uff0e..^");
  EXPECT_EQ(issues("true &&\n  object.spec.replicas"),
            "ERROR: <input>:2:14: expected type 'bool' but found 'int'\n |   object.spec.replicas\n | .............^");
}

TEST(CelParser, SyntaxErrorsAreReported) {
  EXPECT_NE(issues("object.spec.replicas >"), "");
  EXPECT_NE(issues("(1"), "");
  EXPECT_NE(issues("has(1)"), "");
  EXPECT_NE(issues("'unterminated"), "");
  EXPECT_EQ(issues("r'raw\\d' + \"x\" + '''tri'ple''' + string(b'by')"), "");
}

}  // namespace
}  // namespace kcm::cel
