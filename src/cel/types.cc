#include "cel/types.h"

namespace kcm::cel {
namespace {

TypePtr simple(Kind k) {
  auto t = std::make_shared<Type>();
  t->kind = k;
  return t;
}

}  // namespace

#define KCM_CEL_SIMPLE(fn, kind)           \
  TypePtr fn() {                           \
    static const TypePtr t = simple(kind); \
    return t;                              \
  }
KCM_CEL_SIMPLE(dynType, Kind::kDyn)
KCM_CEL_SIMPLE(errorType, Kind::kError)
KCM_CEL_SIMPLE(nullType, Kind::kNull)
KCM_CEL_SIMPLE(boolType, Kind::kBool)
KCM_CEL_SIMPLE(intType, Kind::kInt)
KCM_CEL_SIMPLE(uintType, Kind::kUint)
KCM_CEL_SIMPLE(doubleType, Kind::kDouble)
KCM_CEL_SIMPLE(stringType, Kind::kString)
KCM_CEL_SIMPLE(bytesType, Kind::kBytes)
KCM_CEL_SIMPLE(timestampType, Kind::kTimestamp)
KCM_CEL_SIMPLE(durationType, Kind::kDuration)
#undef KCM_CEL_SIMPLE

TypePtr listOf(TypePtr elem) {
  auto t = std::make_shared<Type>();
  t->kind = Kind::kList;
  t->params = {std::move(elem)};
  return t;
}

TypePtr mapOf(TypePtr key, TypePtr value) {
  auto t = std::make_shared<Type>();
  t->kind = Kind::kMap;
  t->params = {std::move(key), std::move(value)};
  return t;
}

TypePtr typeOf(TypePtr of) {
  auto t = std::make_shared<Type>();
  t->kind = Kind::kType;
  if (of) t->params = {std::move(of)};
  return t;
}

TypePtr opaque(std::string name, std::vector<TypePtr> params) {
  auto t = std::make_shared<Type>();
  t->kind = Kind::kOpaque;
  t->name = std::move(name);
  t->params = std::move(params);
  return t;
}

TypePtr optionalOf(TypePtr t) { return opaque("optional_type", {std::move(t)}); }

TypePtr typeParam(std::string name) {
  auto t = std::make_shared<Type>();
  t->kind = Kind::kTypeParam;
  t->name = std::move(name);
  return t;
}

TypePtr object(std::string name, std::map<std::string, TypePtr> fields) {
  auto t = std::make_shared<Type>();
  t->kind = Kind::kObject;
  t->name = std::move(name);
  t->fields = std::move(fields);
  return t;
}

bool isDynOrError(const TypePtr& t) { return t->kind == Kind::kDyn || t->kind == Kind::kError; }

bool exactlyEqual(const TypePtr& a, const TypePtr& b) {
  if (a == b) return true;
  if (a->kind != b->kind || a->name != b->name || a->params.size() != b->params.size()) return false;
  for (size_t i = 0; i < a->params.size(); ++i)
    if (!exactlyEqual(a->params[i], b->params[i])) return false;
  return true;
}

std::string format(const TypePtr& t) {
  switch (t->kind) {
    case Kind::kDyn: return "dyn";
    case Kind::kError: return "!error!";
    case Kind::kNull: return "null";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kUint: return "uint";
    case Kind::kDouble: return "double";
    case Kind::kString: return "string";
    case Kind::kBytes: return "bytes";
    case Kind::kTimestamp: return "timestamp";
    case Kind::kDuration: return "duration";
    case Kind::kObject:
    case Kind::kTypeParam: return t->name;
    case Kind::kList: return "list(" + format(t->params[0]) + ")";
    case Kind::kMap: return "map(" + format(t->params[0]) + ", " + format(t->params[1]) + ")";
    case Kind::kType: return t->params.empty() ? "type" : "type(" + format(t->params[0]) + ")";
    case Kind::kOpaque: {
      if (t->params.empty()) return t->name;
      std::string s = t->name + "(";
      for (size_t i = 0; i < t->params.size(); ++i) s += (i ? ", " : "") + format(t->params[i]);
      return s + ")";
    }
  }
  return "";
}

}  // namespace kcm::cel
