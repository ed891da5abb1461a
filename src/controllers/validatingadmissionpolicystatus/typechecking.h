#pragma once
// The ValidatingAdmissionPolicy type checker (upstream's k8s.io/apiserver/pkg/admission/plugin/policy/validating
// TypeChecker): for each kind the policy's matchConstraints.resourceRules resolve to (at most 10, no wildcards, no
// subresources, sorted by group, version, kind), every validation's expression and messageExpression is compiled
// with `object`/`oldObject` of that kind's schema type, `params` of the paramKind's (dyn when unresolvable),
// `request`, `namespaceObject`, `authorizer` and the policy's `variables`. Each failing expression gives one
// warning, "<group>/<version>, Kind=<kind>: <cel-go issues>\n" per kind, joined by "\n".
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/gen/admissionregistration_v1.h"
#include "base/status.h"
#include "cel/types.h"

namespace kcm::controllers::validatingadmissionpolicystatus {

using api::admissionregistration::v1::ExpressionWarning;
using api::admissionregistration::v1::ValidatingAdmissionPolicy;

struct GroupVersionKind {
  std::string group, version, kind;
  bool empty() const { return group.empty() && version.empty() && kind.empty(); }
  // schema.GroupVersionKind.String: "apps/v1, Kind=Deployment", "/v1, Kind=Pod".
  std::string toString() const { return group + "/" + version + ", Kind=" + kind; }
  auto operator<=>(const GroupVersionKind&) const = default;
};

class TypeChecker {
 public:
  // The REST mapper's KindsFor for a fully specified group/version/resource (an error when it is not served).
  using KindsFor = std::function<Result<std::vector<GroupVersionKind>>(const std::string& group,
                                                                        const std::string& version,
                                                                        const std::string& resource)>;
  // The OpenAPI v3 document of a group-version (NotFound when the apiserver publishes none).
  using OpenAPIDocument = std::function<Result<nlohmann::json>(const std::string& group, const std::string& version)>;

  TypeChecker(KindsFor kindsFor, std::function<void()> resetMapper, OpenAPIDocument document);

  // Check: the warnings for the policy's validations, in order.
  std::vector<ExpressionWarning> Check(const ValidatingAdmissionPolicy& policy);

  // typesToCheck: the kinds the policy's resource rules name.
  std::vector<GroupVersionKind> typesToCheck(const ValidatingAdmissionPolicy& policy);

 private:
  cel::TypePtr declType(const GroupVersionKind& gvk);

  KindsFor kindsFor_;
  std::function<void()> resetMapper_;
  OpenAPIDocument document_;
};

// The types of `request` and `namespaceObject` (plugin/cel BuildRequestType, BuildNamespaceType).
cel::TypePtr BuildRequestType();
cel::TypePtr BuildNamespaceType();

}  // namespace kcm::controllers::validatingadmissionpolicystatus
