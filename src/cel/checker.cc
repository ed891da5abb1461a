#include "cel/checker.h"

#include <functional>
#include <set>

namespace kcm::cel {
namespace {

using Mapping = std::map<std::string, TypePtr>;

bool isReservedWord(const std::string& s) {
  static const std::set<std::string> kReserved = {
      "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if",
      "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"};
  return kReserved.count(s) > 0;
}

bool isOptional(const TypePtr& t) { return t->kind == Kind::kOpaque && t->name == "optional_type"; }

// cel-go substitute: type parameters replaced by their bindings; unbound ones by dyn when asked.
TypePtr substitute(const Mapping& m, const TypePtr& t, bool paramsToDyn) {
  if (t->kind == Kind::kTypeParam) {
    auto it = m.find(t->name);
    if (it != m.end()) return substitute(m, it->second, paramsToDyn);
    return paramsToDyn ? dynType() : t;
  }
  if (t->params.empty()) return t;
  auto copy = std::make_shared<Type>(*t);
  for (auto& p : copy->params) p = substitute(m, p, paramsToDyn);
  return copy;
}

// cel-go isEqualOrLessSpecific.
bool lessSpecific(const TypePtr& a, const TypePtr& b) {
  if (a->kind == Kind::kDyn || a->kind == Kind::kTypeParam) return true;
  if (b->kind == Kind::kDyn || b->kind == Kind::kTypeParam) return false;
  if (a->kind != b->kind) return false;
  switch (a->kind) {
    case Kind::kList:
    case Kind::kMap:
    case Kind::kOpaque:
    case Kind::kType:
      if (a->name != b->name || a->params.size() != b->params.size()) return false;
      for (size_t i = 0; i < a->params.size(); ++i)
        if (!lessSpecific(a->params[i], b->params[i])) return false;
      return true;
    default:
      return exactlyEqual(a, b);
  }
}

TypePtr mostGeneral(const TypePtr& a, const TypePtr& b) { return lessSpecific(a, b) ? a : b; }

// The occurs check: whether type parameter `p` does not appear within `t`.
bool notReferencedIn(const Mapping& m, const TypePtr& p, const TypePtr& t) {
  if (exactlyEqual(p, t)) return false;
  if (t->kind == Kind::kTypeParam) {
    auto it = m.find(t->name);
    return it == m.end() || notReferencedIn(m, p, it->second);
  }
  for (const auto& q : t->params)
    if (!notReferencedIn(m, p, q)) return false;
  return true;
}

bool assignable(Mapping& m, const TypePtr& t1, const TypePtr& t2);

// cel-go isValidTypeSubstitution: may t1 stand for type parameter t2? Returns {valid, hadSubstitution}.
std::pair<bool, bool> validSubstitution(Mapping& m, const TypePtr& t1, const TypePtr& t2) {
  if (t1->kind == t2->kind && exactlyEqual(t1, t2)) return {true, true};
  auto it = m.find(t2->name);
  if (it != m.end()) {
    const TypePtr sub = it->second;
    if (t1->kind == sub->kind && exactlyEqual(t1, sub)) return {true, true};
    if (assignable(m, t1, sub)) {
      TypePtr general = mostGeneral(t1, sub);
      if (notReferencedIn(m, t2, general)) m[t2->name] = general;
      return {true, true};
    }
    return {false, true};
  }
  if (notReferencedIn(m, t2, t1)) {
    m[t2->name] = t1;
    return {true, false};
  }
  return {false, false};
}

bool nullable(const TypePtr& t) {
  switch (t->kind) {
    case Kind::kOpaque:
    case Kind::kObject:
    case Kind::kDuration:
    case Kind::kTimestamp:
    case Kind::kNull: return true;
    default: return false;
  }
}

// cel-go internalIsAssignable: may a value of t1 be used where t2 is expected (binding parameters in m)?
bool assignable(Mapping& m, const TypePtr& t1, const TypePtr& t2) {
  if (t2->kind == Kind::kTypeParam) {
    auto [valid, had] = validSubstitution(m, t1, t2);
    if (valid) return true;
    if (had) return false;
  }
  if (t1->kind == Kind::kTypeParam) return validSubstitution(m, t2, t1).first;
  if (isDynOrError(t1) || isDynOrError(t2)) return true;
  if (t1->kind == Kind::kNull) return nullable(t2);
  switch (t1->kind) {
    case Kind::kObject: return t2->kind == Kind::kObject && t1->name == t2->name;
    case Kind::kType: return t2->kind == Kind::kType;
    case Kind::kOpaque:
    case Kind::kList:
    case Kind::kMap:
      if (t1->kind != t2->kind || t1->name != t2->name || t1->params.size() != t2->params.size()) return false;
      for (size_t i = 0; i < t1->params.size(); ++i)
        if (!assignable(m, t1->params[i], t2->params[i])) return false;
      return true;
    default: return t1->kind == t2->kind;
  }
}

class Checker {
 public:
  Checker(const std::map<std::string, TypePtr>& variables) : variables_(variables) {}

  TypePtr run(const Expr& e) {
    TypePtr t = check(e);
    for (auto& [node, type] : types_) type = substitute(mapping_, type, true);
    return substitute(mapping_, t, true);
  }
  // The final type of a checked node.
  TypePtr typeOfNode(const Expr& e) const {
    auto it = types_.find(&e);
    return it == types_.end() ? dynType() : it->second;
  }
  std::vector<Issue>& errors() { return errors_; }

 private:
  void error(int offset, std::string msg) { errors_.push_back({offset, std::move(msg)}); }
  void typeMismatch(int offset, const TypePtr& expected, const TypePtr& actual) {
    error(offset, "expected type '" + format(substitute(mapping_, expected, true)) + "' but found '" +
                      format(substitute(mapping_, actual, true)) + "'");
  }
  bool isAssignable(const TypePtr& t1, const TypePtr& t2) {
    Mapping copy = mapping_;
    if (!assignable(copy, t1, t2)) return false;
    mapping_ = std::move(copy);
    return true;
  }
  TypePtr freshParam() { return typeParam("_var" + std::to_string(nextVar_++)); }

  TypePtr check(const Expr& e) {
    TypePtr t = checkNode(e);
    types_[&e] = t;
    return t;
  }

  TypePtr checkNode(const Expr& e) {
    switch (e.kind) {
      case ExprKind::kConst: return constType(e);
      case ExprKind::kIdent: return identType(e);
      case ExprKind::kSelect: return selectType(e);
      case ExprKind::kCall: return callType(e);
      case ExprKind::kList: return listType(e);
      case ExprKind::kMap: return mapType(e);
      case ExprKind::kComprehension: return comprehensionType(e);
    }
    return errorType();
  }

  static TypePtr constType(const Expr& e) {
    switch (e.constKind) {
      case ConstKind::kNull: return nullType();
      case ConstKind::kBool: return boolType();
      case ConstKind::kInt: return intType();
      case ConstKind::kUint: return uintType();
      case ConstKind::kDouble: return doubleType();
      case ConstKind::kString: return stringType();
      case ConstKind::kBytes: return bytesType();
    }
    return dynType();
  }

  const TypePtr* lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return &f->second;
    }
    auto v = variables_.find(name);
    return v == variables_.end() ? nullptr : &v->second;
  }

  TypePtr identType(const Expr& e) {
    if (const TypePtr* t = lookup(e.name)) return *t;
    static const std::map<std::string, TypePtr> kTypeNames = {
        {"int", intType()},       {"uint", uintType()},     {"double", doubleType()},
        {"bool", boolType()},     {"string", stringType()}, {"bytes", bytesType()},
        {"null_type", nullType()}, {"dyn", dynType()},
        {"list", listOf(dynType())}, {"map", mapOf(dynType(), dynType())},
        {"google.protobuf.Timestamp", timestampType()}, {"google.protobuf.Duration", durationType()},
    };
    if (auto it = kTypeNames.find(e.name); it != kTypeNames.end()) return typeOf(it->second);
    if (e.name == "type") return typeOf(typeOf(nullptr));
    error(e.offset, "undeclared reference to '" + e.name + "' (in container '')");
    return errorType();
  }

  // A select chain of identifiers that names no variable (`sets`, `optional`, `strings.x`): its dotted name.
  bool qualifiedName(const Expr& e, std::string& out) const {
    if (e.kind == ExprKind::kIdent) {
      if (lookup(e.name)) return false;
      out = e.name;
      return true;
    }
    if (e.kind == ExprKind::kSelect && !e.testOnly && !e.optional && e.target) {
      std::string prefix;
      if (!qualifiedName(*e.target, prefix)) return false;
      out = prefix + "." + e.name;
      return true;
    }
    return false;
  }

  TypePtr selectType(const Expr& e) {
    TypePtr target = substitute(mapping_, check(*e.target), false);
    bool opt = isOptional(target);
    if (opt) target = target->params[0];
    TypePtr result;
    switch (target->kind) {
      case Kind::kMap: result = target->params[1]; break;
      case Kind::kObject: {
        auto it = target->fields.find(e.name);
        // The apiserver's type provider (recognizeKeywordAsFieldName) also finds a keyword-named property under
        // its escaped name: object.metadata.namespace is __namespace__.
        if (it == target->fields.end() && isReservedWord(e.name)) it = target->fields.find("__" + e.name + "__");
        if (it != target->fields.end()) {
          result = it->second;
        } else {
          error(e.offset, "undefined field '" + e.name + "'");
          result = errorType();
        }
        break;
      }
      case Kind::kTypeParam:
        isAssignable(dynType(), target);
        result = dynType();
        break;
      default:
        if (!isDynOrError(target))
          error(e.offset, "type '" + format(target) + "' does not support field selection");
        result = dynType();
    }
    if (e.testOnly) result = boolType();
    if (opt || e.optional) result = optionalOf(result);
    return result;
  }

  TypePtr callType(const Expr& e) {
    std::string fn = e.name;
    const Expr* target = e.target.get();
    const auto& table = standardFunctions();
    std::string qualified;
    if (target && qualifiedName(*target, qualified) && table.count(qualified + "." + fn)) {
      fn = qualified + "." + fn;
      target = nullptr;
    }
    std::vector<TypePtr> argTypes;
    std::vector<int> argOffsets;
    if (target) argTypes.push_back(check(*target)), argOffsets.push_back(target->offset);
    for (const auto& a : e.args) argTypes.push_back(check(*a)), argOffsets.push_back(a->offset);

    if (fn == "_&&_" || fn == "_||_") {
      bool bad = false;
      for (size_t i = 0; i < argTypes.size(); ++i)
        if (!isAssignable(argTypes[i], boolType())) typeMismatch(argOffsets[i], boolType(), argTypes[i]), bad = true;
      return bad ? errorType() : boolType();
    }
    auto it = table.find(fn);
    if (it == table.end()) return dynType();  // declared by the apiserver's environment, not modelled here

    TypePtr result;
    for (const Overload& o : it->second) {
      if (o.member != (target != nullptr) || o.args.size() != argTypes.size()) continue;
      // Fresh type variables for this overload's parameters.
      Mapping fresh;
      std::function<TypePtr(const TypePtr&)> inst = [&](const TypePtr& t) -> TypePtr {
        if (t->kind == Kind::kTypeParam) {
          auto [pos, inserted] = fresh.try_emplace(t->name);
          if (inserted) pos->second = freshParam();
          return pos->second;
        }
        if (t->params.empty()) return t;
        auto copy = std::make_shared<Type>(*t);
        for (auto& p : copy->params) p = inst(p);
        return copy;
      };
      std::vector<TypePtr> params;
      for (const auto& a : o.args) params.push_back(inst(a));
      TypePtr ret = inst(o.result);
      Mapping copy = mapping_;
      bool ok = true;
      for (size_t i = 0; i < params.size() && ok; ++i) ok = assignable(copy, argTypes[i], params[i]);
      if (!ok) continue;
      mapping_ = std::move(copy);
      TypePtr r = substitute(mapping_, ret, false);
      if (!result) result = r;
      else if (result->kind != Kind::kDyn && !exactlyEqual(r, result)) result = dynType();
    }
    if (result) return result;
    std::string sig;
    size_t first = 0;
    if (target) sig = format(substitute(mapping_, argTypes[0], true)) + ".", first = 1;
    sig += "(";
    for (size_t i = first; i < argTypes.size(); ++i)
      sig += (i > first ? ", " : "") + format(substitute(mapping_, argTypes[i], true));
    sig += ")";
    error(e.offset, "found no matching overload for '" + fn + "' applied to '" + sig + "'");
    return errorType();
  }

  // cel-go joinTypes with homogeneous aggregate literals.
  TypePtr join(const Expr& at, const TypePtr& previous, const TypePtr& current) {
    if (!previous) return current;
    if (isAssignable(previous, current)) return mostGeneral(previous, current);
    typeMismatch(at.offset, previous, current);
    return errorType();
  }

  static bool optionalIndex(const Expr& e, size_t i) {
    for (int k : e.optionalIndices)
      if (static_cast<size_t>(k) == i) return true;
    return false;
  }

  TypePtr unwrapOptional(const Expr& at, TypePtr t) {
    if (isOptional(t)) return t->params[0];
    if (t->kind != Kind::kDyn) typeMismatch(at.offset, optionalOf(t), t);
    return t;
  }

  TypePtr listType(const Expr& e) {
    TypePtr elems;
    for (size_t i = 0; i < e.args.size(); ++i) {
      TypePtr t = check(*e.args[i]);
      if (optionalIndex(e, i)) t = unwrapOptional(*e.args[i], t);
      elems = join(*e.args[i], elems, t);
    }
    return listOf(elems ? elems : freshParam());
  }

  TypePtr mapType(const Expr& e) {
    TypePtr keys, values;
    for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
      keys = join(*e.args[i], keys, check(*e.args[i]));
      TypePtr v = check(*e.args[i + 1]);
      if (optionalIndex(e, i / 2)) v = unwrapOptional(*e.args[i + 1], v);
      values = join(*e.args[i + 1], values, v);
    }
    return mapOf(keys ? keys : freshParam(), values ? values : freshParam());
  }

  TypePtr comprehensionType(const Expr& e) {
    TypePtr rangeChecked = check(*e.iterRange);
    TypePtr accu = check(*e.accuInit);
    TypePtr range = substitute(mapping_, rangeChecked, false);
    TypePtr v1, v2;
    const bool two = !e.iterVar2.empty();
    switch (range->kind) {
      case Kind::kList:
        v1 = range->params[0];
        if (two) v2 = v1, v1 = intType();
        break;
      case Kind::kMap:
        v1 = range->params[0];
        if (two) v2 = range->params[1];
        break;
      case Kind::kDyn:
      case Kind::kError:
      case Kind::kTypeParam:
        isAssignable(dynType(), range);
        v1 = dynType();
        if (two) v2 = dynType();
        break;
      default:
        error(e.iterRange->offset, "expression of type '" + format(range) +
                                       "' cannot be range of a comprehension (must be list, map, or dynamic)");
        v1 = errorType();
        if (two) v2 = errorType();
    }
    scopes_.push_back({{e.accuVar, accu}});
    scopes_.push_back({{e.iterVar, v1}});
    if (two) scopes_.back()[e.iterVar2] = v2;
    TypePtr cond = check(*e.loopCondition);
    if (!isAssignable(cond, boolType())) typeMismatch(e.loopCondition->offset, boolType(), cond);
    TypePtr step = check(*e.loopStep);
    if (!isAssignable(step, accu)) typeMismatch(e.loopStep->offset, accu, step);
    scopes_.pop_back();
    TypePtr result = check(*e.result);
    scopes_.pop_back();
    return substitute(mapping_, result, false);
  }

  const std::map<std::string, TypePtr>& variables_;
  std::map<const Expr*, TypePtr> types_;
  std::vector<std::map<std::string, TypePtr>> scopes_;
  Mapping mapping_;
  int nextVar_ = 0;
  std::vector<Issue> errors_;
};

// cel-go's homogeneous aggregate literal validator (run on an expression that type-checked): the elements of a
// list literal, and the keys and the values of a map literal, must have equivalent types (dyn next to int is
// not); literals inside a call to `format` are exempt.
void validateHomogeneousLiterals(const Expr& e, const Checker& c, bool exempt, std::vector<Issue>& errors) {
  const bool inFormat = exempt || (e.kind == ExprKind::kCall && e.name == "format");
  auto elemType = [&](const Expr& x, bool optional) {
    TypePtr t = c.typeOfNode(x);
    return optional && isOptional(t) ? t->params[0] : t;
  };
  auto mismatch = [&](const Expr& at, const TypePtr& expected, const TypePtr& actual) {
    errors.push_back({at.offset, "expected type '" + format(expected) + "' but found '" + format(actual) + "'"});
  };
  if (!exempt && e.kind == ExprKind::kList) {
    TypePtr first;
    for (size_t i = 0; i < e.args.size(); ++i) {
      bool opt = false;
      for (int k : e.optionalIndices) opt |= static_cast<size_t>(k) == i;
      TypePtr t = elemType(*e.args[i], opt);
      if (!first) {
        first = t;
      } else if (!exactlyEqual(first, t)) {
        mismatch(*e.args[i], first, t);
        break;
      }
    }
  }
  if (!exempt && e.kind == ExprKind::kMap) {
    TypePtr key, value;
    for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
      bool opt = false;
      for (int k : e.optionalIndices) opt |= static_cast<size_t>(k) == i / 2;
      TypePtr kt = c.typeOfNode(*e.args[i]), vt = elemType(*e.args[i + 1], opt);
      if (!key) {
        key = kt, value = vt;
        continue;
      }
      if (!exactlyEqual(key, kt)) mismatch(*e.args[i], key, kt);
      if (!exactlyEqual(value, vt)) mismatch(*e.args[i + 1], value, vt);
    }
  }
  for (const Expr* child : {e.target.get(), e.iterRange.get(), e.accuInit.get(), e.loopCondition.get(),
                            e.loopStep.get(), e.result.get()})
    if (child) validateHomogeneousLiterals(*child, c, inFormat, errors);
  for (const auto& a : e.args) validateHomogeneousLiterals(*a, c, inFormat, errors);
}

}  // namespace

CheckResult check(const Expr& expr, const std::map<std::string, TypePtr>& variables) {
  Checker c(variables);
  CheckResult r;
  r.type = c.run(expr);
  r.errors = std::move(c.errors());
  if (r.errors.empty()) validateHomogeneousLiterals(expr, c, false, r.errors);
  return r;
}

CompileResult compile(const std::string& expression, const std::map<std::string, TypePtr>& variables) {
  Source src(expression);
  CompileResult out;
  ParseResult p = parse(src);
  if (!p.errors.empty()) {
    out.issues = formatIssues(src, std::move(p.errors));
    return out;
  }
  CheckResult c = check(*p.expr, variables);
  if (!c.errors.empty()) {
    out.issues = formatIssues(src, std::move(c.errors));
    return out;
  }
  out.type = c.type;
  return out;
}

}  // namespace kcm::cel
