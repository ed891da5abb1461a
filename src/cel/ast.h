#pragma once
// The CEL abstract syntax tree the parser builds and the checker walks (cel-go common/ast, reduced to what type
// checking needs). Macros (has, all, exists, exists_one, map, filter and the two-variable forms) are expanded by
// the parser into comprehensions, as cel-go does, so the checker reports their errors the same way.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kcm::cel {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind { kConst, kIdent, kSelect, kCall, kList, kMap, kComprehension };
enum class ConstKind { kNull, kBool, kInt, kUint, kDouble, kString, kBytes };

struct Expr {
  ExprKind kind = ExprKind::kConst;
  int64_t id = 0;
  int offset = 0;  // in code points from the start of the source: where errors about this node point
  ConstKind constKind = ConstKind::kNull;
  std::string name;          // ident name, selected field, called function
  bool testOnly = false;     // select inside has()
  bool optional = false;     // select written a.?b
  ExprPtr target;            // select operand, member call receiver
  std::vector<ExprPtr> args; // call arguments, list elements, map keys and values interleaved
  std::vector<int> optionalIndices;  // list elements / map entries written with '?'
  // Comprehension.
  std::string iterVar, iterVar2, accuVar;
  ExprPtr iterRange, accuInit, loopCondition, loopStep, result;
};

}  // namespace kcm::cel
