#pragma once
// The CEL type checker (cel-go checker/checker.go): types every node of a parsed expression against declared
// variables and function overloads, with cel-go's unification of type parameters, and reports the same errors
// ("found no matching overload for '_>_' applied to '(int, string)'", "undefined field 'x'", ...).
//
// Functions: the standard library and the libraries of Kubernetes' CEL base environment at the pin (strings v2,
// sets, lists, regex, URLs, authz, quantity, IP, CIDR, format, semver, optional types; cross-type numeric
// comparisons; homogeneous aggregate literals). A call to a function the table does not declare is typed dyn
// without an error: the apiserver has already refused policies whose functions are undeclared.
#include <map>
#include <string>
#include <vector>

#include "cel/ast.h"
#include "cel/parser.h"
#include "cel/types.h"

namespace kcm::cel {

struct Overload {
  bool member = false;           // receiver style: args[0] is the receiver
  std::vector<TypePtr> args;
  TypePtr result;
};

// Function name -> overloads, for the environment above.
const std::map<std::string, std::vector<Overload>>& standardFunctions();

struct CheckResult {
  TypePtr type;               // the expression's type (unresolved type parameters as dyn)
  std::vector<Issue> errors;  // empty when it type-checks
};

// Types `expr` with `variables` in scope.
CheckResult check(const Expr& expr, const std::map<std::string, TypePtr>& variables);

// Parses and checks; the errors, if any, formatted as cel-go's Issues.String() (empty when it compiles).
struct CompileResult {
  TypePtr type;        // null when it does not compile
  std::string issues;  // "ERROR: <input>:1:22: ..." lines
};
CompileResult compile(const std::string& expression, const std::map<std::string, TypePtr>& variables);

}  // namespace kcm::cel
