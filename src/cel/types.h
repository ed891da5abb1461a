#pragma once
// CEL types as the type checker sees them (cel-go common/types.Type): primitives, list/map, object types with
// named fields (Kubernetes schemas become these), opaque types (optional_type, kubernetes.Quantity, ...), type
// parameters for generic overloads, dyn and the error type. Types are immutable and shared.
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kcm::cel {

enum class Kind {
  kDyn, kError, kNull, kBool, kInt, kUint, kDouble, kString, kBytes, kTimestamp, kDuration,
  kList, kMap, kObject, kType, kOpaque, kTypeParam,
};

struct Type;
using TypePtr = std::shared_ptr<const Type>;

struct Type {
  Kind kind = Kind::kDyn;
  std::string name;                       // object, opaque and type-parameter names
  std::vector<TypePtr> params;            // list: elem; map: key, value; type: its type; opaque: parameters
  std::map<std::string, TypePtr> fields;  // object: field name -> type
};

TypePtr dynType();
TypePtr errorType();
TypePtr nullType();
TypePtr boolType();
TypePtr intType();
TypePtr uintType();
TypePtr doubleType();
TypePtr stringType();
TypePtr bytesType();
TypePtr timestampType();
TypePtr durationType();
TypePtr listOf(TypePtr elem);
TypePtr mapOf(TypePtr key, TypePtr value);
TypePtr typeOf(TypePtr t);  // type(t); null: the plain "type"
TypePtr opaque(std::string name, std::vector<TypePtr> params = {});
TypePtr optionalOf(TypePtr t);
TypePtr typeParam(std::string name);
TypePtr object(std::string name, std::map<std::string, TypePtr> fields);

bool isDynOrError(const TypePtr& t);
// Same type, structurally (objects and opaques by name).
bool exactlyEqual(const TypePtr& a, const TypePtr& b);
// cel-go's FormatCELType: "int", "list(string)", "map(string, int)", "optional_type(int)", an object's name.
std::string format(const TypePtr& t);

}  // namespace kcm::cel
