#pragma once
// CEL types of Kubernetes objects from their OpenAPI v3 schemas, as the apiserver's CEL library derives them
// (k8s.io/apiserver/pkg/cel/common.SchemaDeclType over schemas whose $refs are populated as resolver.PopulateRefs
// does, named by DeclType.MaybeAssignTypeName): objects with properties become object types with escaped field
// names, additionalProperties maps, arrays lists, int-or-string (extension or format) dyn, string formats byte/duration/date/date-time
// bytes/duration/timestamp. A schema without a usable type (Quantity's oneOf) yields no type, so the field that
// holds it is absent, as upstream.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cel/types.h"

namespace kcm::cel {

// apiservercel.Escape: a property name as a CEL identifier ("namespace" -> "__namespace__", "a-b" -> "a__dash__b");
// nullopt when it cannot be one.
std::optional<std::string> escapeFieldName(const std::string& name);

// The type of the kind `kind` of `group`/`version` in an OpenAPI v3 group-version document (its
// components.schemas, found by x-kubernetes-group-version-kind), its object types named `typeName`,
// `typeName.spec`, `typeName.spec.containers.@idx`, ... Null when the document has no schema for the kind or the
// schema has no CEL type.
TypePtr resolveKindType(const nlohmann::json& document, const std::string& group, const std::string& version,
                        const std::string& kind, const std::string& typeName);

}  // namespace kcm::cel
