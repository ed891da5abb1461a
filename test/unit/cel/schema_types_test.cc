// CEL types from OpenAPI v3 documents as the apiserver derives them: $ref/allOf populated, recursion cut to an
// open object, int-or-string dyn, formats, escaped property names, typeless schemas (Quantity's oneOf) dropped,
// embedded resources and the resource root given kind/apiVersion/metadata, names assigned along the path.
#include <gtest/gtest.h>

#include "cel/checker.h"
#include "cel/schema_types.h"

namespace kcm::cel {
namespace {

const char* kDocument = R"({
  "components": {"schemas": {
    "io.example.v1.Widget": {
      "type": "object",
      "x-kubernetes-group-version-kind": [{"group": "example.io", "version": "v1", "kind": "Widget"}],
      "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"allOf": [{"$ref": "#/components/schemas/io.meta.ObjectMeta"}], "default": {}},
        "spec": {"$ref": "#/components/schemas/io.example.v1.WidgetSpec"}
      }
    },
    "io.example.v1.WidgetSpec": {
      "type": "object",
      "properties": {
        "replicas": {"type": "integer", "format": "int32"},
        "ratio": {"type": "number"},
        "port": {"$ref": "#/components/schemas/io.intstr.IntOrString"},
        "maxSurge": {"allOf": [{"$ref": "#/components/schemas/io.intstr.BuiltinIntOrString"}]},
        "limits": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/io.Quantity"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "data": {"type": "string", "format": "byte"},
        "timeout": {"type": "string", "format": "duration"},
        "since": {"type": "string", "format": "date-time"},
        "namespace": {"type": "string"},
        "a-b": {"type": "string"},
        "9lives": {"type": "string"},
        "items": {"type": "array", "items": {"$ref": "#/components/schemas/io.example.v1.WidgetSpec"}},
        "raw": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"x": {"type": "boolean"}}},
        "flag": {"type": "boolean"}
      }
    },
    "io.meta.ObjectMeta": {"type": "object", "properties": {
      "name": {"type": "string"}, "generateName": {"type": "string"},
      "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
    "io.intstr.IntOrString": {"type": "string", "format": "int-or-string", "x-kubernetes-int-or-string": true},
    "io.intstr.BuiltinIntOrString": {"format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]},
    "io.Quantity": {"oneOf": [{"type": "string"}, {"type": "number"}]}
  }}})";

TypePtr widget() {
  static const TypePtr t =
      resolveKindType(nlohmann::json::parse(kDocument), "example.io", "v1", "Widget", "Widget123");
  return t;
}

std::string typeAt(const std::string& expr) {
  auto r = compile(expr, {{"object", widget()}});
  return r.type ? format(r.type) : r.issues;
}

TEST(CelSchemaTypes, FieldsFollowTheSchema) {
  ASSERT_TRUE(widget());
  EXPECT_EQ(format(widget()), "Widget123");
  EXPECT_EQ(typeAt("object.spec"), "Widget123.spec");
  EXPECT_EQ(typeAt("object.spec.replicas"), "int");
  EXPECT_EQ(typeAt("object.spec.ratio"), "double");
  EXPECT_EQ(typeAt("object.spec.port"), "dyn");
  EXPECT_EQ(typeAt("object.spec.maxSurge"), "dyn") << "built-in types mark int-or-string by format only";
  EXPECT_EQ(typeAt("object.spec.labels"), "map(string, string)");
  EXPECT_EQ(typeAt("object.spec.data"), "bytes");
  EXPECT_EQ(typeAt("object.spec.timeout"), "duration");
  EXPECT_EQ(typeAt("object.spec.since"), "timestamp");
  EXPECT_EQ(typeAt("object.spec.__namespace__"), "string");
  EXPECT_EQ(typeAt("object.spec.a__dash__b"), "string");
  EXPECT_EQ(typeAt("object.metadata.labels"), "map(string, string)");
  EXPECT_EQ(typeAt("object.spec.raw.metadata.name"), "string") << "embedded resources get kind/apiVersion/metadata";
  EXPECT_EQ(typeAt("object.spec.raw.x"), "bool");
}

TEST(CelSchemaTypes, RecursionBecomesAnOpenObjectAndTypelessSchemasAreDropped) {
  EXPECT_EQ(typeAt("object.spec.items"), "list(Widget123.spec.items.@idx)");
  EXPECT_NE(typeAt("object.spec.items[0].replicas").find("undefined field 'replicas'"), std::string::npos)
      << "a reference back to WidgetSpec is {type: object}";
  EXPECT_NE(typeAt("object.spec.limits").find("undefined field 'limits'"), std::string::npos)
      << "a map of Quantity (oneOf, no type) has no CEL type, so the field is absent";
  EXPECT_NE(typeAt("object.spec.9lives").find("Syntax error"), std::string::npos);
}

TEST(CelSchemaTypes, UnknownKindsAndEscaping) {
  EXPECT_FALSE(resolveKindType(nlohmann::json::parse(kDocument), "example.io", "v1", "Gadget", "G"));
  EXPECT_FALSE(resolveKindType(nlohmann::json::object(), "example.io", "v1", "Widget", "W"));
  EXPECT_EQ(escapeFieldName("namespace"), std::optional<std::string>("__namespace__"));
  EXPECT_EQ(escapeFieldName("a__b"), std::optional<std::string>("a__underscores__b"));
  EXPECT_EQ(escapeFieldName("x.y/z"), std::optional<std::string>("x__dot__y__slash__z"));
  EXPECT_EQ(escapeFieldName("9lives"), std::nullopt);
  EXPECT_EQ(escapeFieldName("a b"), std::nullopt);
}

}  // namespace
}  // namespace kcm::cel
