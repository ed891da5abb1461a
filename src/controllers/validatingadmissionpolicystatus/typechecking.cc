#include "controllers/validatingadmissionpolicystatus/typechecking.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "base/log.h"
#include "cel/checker.h"
#include "cel/schema_types.h"

namespace kcm::controllers::validatingadmissionpolicystatus {
namespace {

constexpr size_t kMaxTypesToCheck = 10;

using cel::TypePtr;

std::vector<std::string> withoutWildcards(const std::vector<std::string>& xs) {
  for (const auto& x : xs)
    if (x.find('*') != std::string::npos) return {};
  return xs;
}

// generateUniqueTypeName: the kind followed by the current time's nanoseconds within its second.
std::string uniqueTypeName(const std::string& kind) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::system_clock::now().time_since_epoch()).count() % 1000000000;
  return kind + std::to_string(ns);
}

// convertCelTypeToDeclType: a variable's compiled type as `variables.<name>` sees it; object and opaque types
// (and anything not primitive, list or map) become dyn.
TypePtr variableType(const TypePtr& t) {
  if (!t) return cel::dynType();
  switch (t->kind) {
    case cel::Kind::kBool:
    case cel::Kind::kBytes:
    case cel::Kind::kDouble:
    case cel::Kind::kDuration:
    case cel::Kind::kInt:
    case cel::Kind::kNull:
    case cel::Kind::kString:
    case cel::Kind::kTimestamp:
    case cel::Kind::kUint: return t;
    case cel::Kind::kList: return cel::listOf(variableType(t->params[0]));
    case cel::Kind::kMap: return cel::mapOf(variableType(t->params[0]), variableType(t->params[1]));
    default: return cel::dynType();
  }
}

struct TypeCheckingContext {
  std::vector<GroupVersionKind> gvks;
  std::vector<TypePtr> declTypes;
  bool hasParams = false;
  TypePtr paramType;  // null: dyn
};

// CheckExpression: the "<gvk>: <issues>\n" texts of the kinds the expression fails to compile for.
std::vector<std::string> checkExpression(const TypeCheckingContext& ctx, const ValidatingAdmissionPolicy& policy,
                                         const std::string& expression) {
  std::vector<std::string> results;
  for (size_t i = 0; i < ctx.gvks.size(); ++i) {
    std::map<std::string, TypePtr> vars = {
        {"object", ctx.declTypes[i]},
        {"oldObject", ctx.declTypes[i]},
        {"request", BuildRequestType()},
        {"namespaceObject", BuildNamespaceType()},
        {"authorizer", cel::opaque("kubernetes.authorization.Authorizer")},
    };
    if (ctx.hasParams) vars["params"] = ctx.paramType ? ctx.paramType : cel::dynType();
    std::map<std::string, TypePtr> variableFields;
    vars["variables"] = cel::object("kubernetes.variables", variableFields);
    for (const auto& v : policy.spec.variables) {
      cel::CompileResult r = cel::compile(v.expression, vars);
      variableFields[v.name] = variableType(r.type);
      vars["variables"] = cel::object("kubernetes.variables", variableFields);
    }
    cel::CompileResult r = cel::compile(expression, vars);
    if (!r.issues.empty()) results.push_back(ctx.gvks[i].toString() + ": " + r.issues + "\n");
  }
  return results;
}

std::string join(const std::vector<std::string>& xs) {
  std::string out;
  for (size_t i = 0; i < xs.size(); ++i) out += (i ? "\n" : "") + xs[i];
  return out;
}

}  // namespace

TypeChecker::TypeChecker(KindsFor kindsFor, std::function<void()> resetMapper, OpenAPIDocument document)
    : kindsFor_(std::move(kindsFor)), resetMapper_(std::move(resetMapper)), document_(std::move(document)) {}

std::vector<GroupVersionKind> TypeChecker::typesToCheck(const ValidatingAdmissionPolicy& p) {
  std::set<GroupVersionKind> gvks;
  if (!p.spec.matchConstraints || p.spec.matchConstraints->resourceRules.empty()) return {};
  bool refreshed = false;
  size_t count = 0;
  for (const auto& rule : p.spec.matchConstraints->resourceRules) {
    auto groups = withoutWildcards(api::toStdStrings(rule.apiGroups));
    auto versions = withoutWildcards(api::toStdStrings(rule.apiVersions));
    std::vector<std::string> resources;
    for (const auto& r : rule.resources)
      if (r.find_first_of("*/") == std::string::npos) resources.push_back(r);
    if (groups.empty() || versions.empty() || resources.empty()) continue;
    std::sort(groups.begin(), groups.end());
    std::sort(versions.begin(), versions.end());
    std::sort(resources.begin(), resources.end());
    for (const auto& g : groups)
      for (const auto& v : versions)
        for (const auto& r : resources) {
          auto kinds = kindsFor_(g, v, r);
          if (!kinds.ok()) {
            if (refreshed) continue;
            resetMapper_();
            refreshed = true;
            kinds = kindsFor_(g, v, r);
            if (!kinds.ok()) continue;
          }
          for (const auto& k : *kinds) {
            if (k.empty()) continue;
            gvks.insert(k);
            if (++count == kMaxTypesToCheck) return {gvks.begin(), gvks.end()};
          }
        }
  }
  return {gvks.begin(), gvks.end()};
}

TypePtr TypeChecker::declType(const GroupVersionKind& gvk) {
  auto doc = document_(gvk.group, gvk.version);
  if (!doc.ok()) {
    if (doc.status().code() != StatusCode::kNotFound)
      KLOG_V(2, "\"internal error: schema resolution failure\" err=" + log::quote(doc.status().message()) +
                    " gvk=" + log::quote(gvk.toString()));
    return nullptr;
  }
  return cel::resolveKindType(*doc, gvk.group, gvk.version, gvk.kind, uniqueTypeName(gvk.kind));
}

std::vector<ExpressionWarning> TypeChecker::Check(const ValidatingAdmissionPolicy& policy) {
  TypeCheckingContext ctx;
  for (const auto& gvk : typesToCheck(policy)) {
    TypePtr t = declType(gvk);
    if (!t) continue;
    ctx.gvks.push_back(gvk);
    ctx.declTypes.push_back(t);
  }
  if (policy.spec.paramKind) {
    GroupVersionKind p;
    const std::string& av = policy.spec.paramKind->apiVersion;
    // schema.ParseGroupVersion: "v1" is the core group; more than one "/" is an error.
    const auto slash = av.find('/');
    const bool ok = slash == std::string::npos || av.find('/', slash + 1) == std::string::npos;
    if (av == "/") {
    } else if (ok && slash == std::string::npos) {
      p.version = av;
    } else if (ok) {
      p.group = av.substr(0, slash), p.version = av.substr(slash + 1);
    }
    p.kind = policy.spec.paramKind->kind;
    if (ok && !p.empty()) {
      ctx.hasParams = true;
      ctx.paramType = declType(p);
    }
  }
  std::vector<ExpressionWarning> warnings;
  for (size_t i = 0; i < policy.spec.validations.size(); ++i) {
    const auto& v = policy.spec.validations[i];
    const std::string ref = "spec.validations[" + std::to_string(i) + "]";
    if (auto r = checkExpression(ctx, policy, v.expression); !r.empty()) {
      ExpressionWarning w;
      w.fieldRef = ref + ".expression";
      w.warning = join(r);
      warnings.push_back(std::move(w));
    }
    if (v.messageExpression.empty()) continue;
    if (auto r = checkExpression(ctx, policy, v.messageExpression); !r.empty()) {
      ExpressionWarning w;
      w.fieldRef = ref + ".messageExpression";
      w.warning = join(r);
      warnings.push_back(std::move(w));
    }
  }
  return warnings;
}

TypePtr BuildRequestType() {
  static const TypePtr t = [] {
    auto s = cel::stringType();
    auto gvk = cel::object("kubernetes.GroupVersionKind", {{"group", s}, {"version", s}, {"kind", s}});
    auto gvr = cel::object("kubernetes.GroupVersionResource", {{"group", s}, {"version", s}, {"resource", s}});
    auto user = cel::object("kubernetes.UserInfo", {{"username", s},
                                                    {"uid", s},
                                                    {"groups", cel::listOf(s)},
                                                    {"extra", cel::mapOf(s, cel::listOf(s))}});
    return cel::object("kubernetes.AdmissionRequest",
                       {{"kind", gvk}, {"resource", gvr}, {"subResource", s}, {"requestKind", gvk},
                        {"requestResource", gvr}, {"requestSubResource", s}, {"name", s}, {"namespace", s},
                        {"operation", s}, {"userInfo", user}, {"dryRun", cel::boolType()},
                        {"options", cel::dynType()}});
  }();
  return t;
}

TypePtr BuildNamespaceType() {
  static const TypePtr t = [] {
    auto s = cel::stringType();
    auto ts = cel::timestampType();
    auto strings = cel::listOf(s);
    auto spec = cel::object("kubernetes.NamespaceSpec", {{"finalizers", strings}});
    auto condition = cel::object("kubernetes.NamespaceCondition", {{"status", s},
                                                                   {"type", s},
                                                                   {"lastTransitionTime", ts},
                                                                   {"message", s},
                                                                   {"reason", s}});
    auto status = cel::object("kubernetes.NamespaceStatus", {{"conditions", cel::listOf(condition)}, {"phase", s}});
    auto metadata = cel::object("kubernetes.NamespaceMetadata", {{"name", s},
                                                                 {"generateName", s},
                                                                 {"namespace", s},
                                                                 {"labels", cel::mapOf(s, s)},
                                                                 {"annotations", cel::mapOf(s, s)},
                                                                 {"UID", s},
                                                                 {"creationTimestamp", ts},
                                                                 {"deletionGracePeriodSeconds", cel::intType()},
                                                                 {"deletionTimestamp", ts},
                                                                 {"generation", cel::intType()},
                                                                 {"resourceVersion", s},
                                                                 {"finalizers", strings}});
    return cel::object("kubernetes.Namespace", {{"metadata", metadata}, {"spec", spec}, {"status", status}});
  }();
  return t;
}

}  // namespace kcm::controllers::validatingadmissionpolicystatus
