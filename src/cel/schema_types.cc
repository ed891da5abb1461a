#include "cel/schema_types.h"

#include <set>

namespace kcm::cel {
namespace {

constexpr const char* kRefPrefix = "#/components/schemas/";

class Converter {
 public:
  explicit Converter(const nlohmann::json& schemas) : schemas_(schemas) {}

  // resolver.PopulateRefs for one node: a $ref (direct or inside allOf) is replaced by the referenced schema; a
  // reference to a schema already being expanded becomes {type: object}.
  const nlohmann::json* resolve(const nlohmann::json& s, std::string& pushedRef) {
    std::string ref = refOf(s);
    if (ref.empty()) return &s;
    if (visiting_.count(ref)) return &kOpenObject();
    auto name = ref.rfind(kRefPrefix, 0) == 0 ? ref.substr(std::char_traits<char>::length(kRefPrefix)) : ref;
    auto it = schemas_.find(name);
    if (it == schemas_.end()) return nullptr;
    visiting_.insert(ref);
    pushedRef = ref;
    return &*it;
  }

  TypePtr declType(const nlohmann::json& raw, bool resourceRoot, const std::string& name) {
    std::string pushed;
    const nlohmann::json* s = resolve(raw, pushed);
    if (!s) return nullptr;
    TypePtr t = declTypeResolved(*s, resourceRoot, name);
    if (!pushed.empty()) visiting_.erase(pushed);
    return t;
  }

 private:
  static const nlohmann::json& kOpenObject() {
    static const nlohmann::json o = {{"type", "object"}};
    return o;
  }

  static std::string refOf(const nlohmann::json& s) {
    if (!s.is_object()) return "";
    if (auto r = s.find("$ref"); r != s.end() && r->is_string()) return r->get<std::string>();
    if (auto a = s.find("allOf"); a != s.end() && a->is_array())
      for (const auto& sub : *a)
        if (std::string r = refOf(sub); !r.empty()) return r;
    return "";
  }

  static bool flag(const nlohmann::json& s, const char* key) {
    auto it = s.find(key);
    return it != s.end() && it->is_boolean() && it->get<bool>();
  }

  static std::string typeOfSchema(const nlohmann::json& s) {
    auto it = s.find("type");
    if (it == s.end()) return "";
    if (it->is_string()) return it->get<std::string>();
    if (it->is_array() && !it->empty() && (*it)[0].is_string()) return (*it)[0].get<std::string>();
    return "";
  }

  std::string propType(const nlohmann::json& props, const char* name) {
    auto it = props.find(name);
    if (it == props.end()) return "";
    std::string pushed;
    const nlohmann::json* p = resolve(*it, pushed);
    std::string t = p ? typeOfSchema(*p) : "";
    if (!pushed.empty()) visiting_.erase(pushed);
    return t;
  }

  // common.WithTypeAndObjectMeta: unless the schema already has string kind/apiVersion and an object metadata
  // with string name and generateName, they are set to exactly those.
  bool hasTypeAndObjectMeta(const nlohmann::json& s) {
    auto props = s.find("properties");
    if (props == s.end() || !props->is_object()) return false;
    if (propType(*props, "kind") != "string" || propType(*props, "apiVersion") != "string") return false;
    auto meta = props->find("metadata");
    if (meta == props->end()) return false;
    std::string pushed;
    const nlohmann::json* m = resolve(*meta, pushed);
    bool ok = m && typeOfSchema(*m) == "object";
    if (ok) {
      auto mp = m->find("properties");
      ok = mp != m->end() && mp->is_object() && propType(*mp, "name") == "string" &&
           propType(*mp, "generateName") == "string";
    }
    if (!pushed.empty()) visiting_.erase(pushed);
    return ok;
  }

  TypePtr declTypeResolved(const nlohmann::json& in, bool resourceRoot, const std::string& name) {
    // Built-in types mark int-or-string by format, CRDs by the extension.
    auto format = in.find("format");
    if (flag(in, "x-kubernetes-int-or-string") || (format != in.end() && *format == "int-or-string"))
      return dynType();
    const nlohmann::json* s = &in;
    nlohmann::json withMeta;
    if (resourceRoot && !hasTypeAndObjectMeta(in)) {
      withMeta = in;
      const nlohmann::json str = {{"type", "string"}};
      withMeta["properties"]["kind"] = str;
      withMeta["properties"]["apiVersion"] = str;
      withMeta["properties"]["metadata"] = {
          {"type", "object"}, {"properties", {{"name", str}, {"generateName", str}}}};
      s = &withMeta;
    }
    const std::string type = typeOfSchema(*s);
    if (type == "array") {
      auto items = s->find("items");
      if (items == s->end() || !items->is_object()) return nullptr;
      TypePtr elem = declType(*items, flag(*items, "x-kubernetes-embedded-resource"), name + ".@idx");
      return elem ? listOf(elem) : nullptr;
    }
    if (type == "object") {
      if (auto ap = s->find("additionalProperties"); ap != s->end() && ap->is_object()) {
        TypePtr value = declType(*ap, flag(*ap, "x-kubernetes-embedded-resource"), name + ".@elem");
        return value ? mapOf(stringType(), value) : nullptr;
      }
      std::map<std::string, TypePtr> fields;
      if (auto props = s->find("properties"); props != s->end() && props->is_object()) {
        for (const auto& [prop, schema] : props->items()) {
          auto escaped = escapeFieldName(prop);
          if (!escaped) continue;
          if (TypePtr ft = declType(schema, flag(schema, "x-kubernetes-embedded-resource"), name + "." + *escaped))
            fields[*escaped] = ft;
        }
      }
      return object(name, std::move(fields));
    }
    if (type == "string") {
      auto f = s->find("format");
      const std::string format = f != s->end() && f->is_string() ? f->get<std::string>() : "";
      if (format == "byte") return bytesType();
      if (format == "duration") return durationType();
      if (format == "date" || format == "date-time") return timestampType();
      return stringType();
    }
    if (type == "boolean") return boolType();
    if (type == "number") return doubleType();
    if (type == "integer") return intType();
    return nullptr;
  }

  const nlohmann::json& schemas_;
  std::set<std::string> visiting_;
};

std::string stringField(const nlohmann::json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

bool validChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

std::optional<std::string> escapeFieldName(const std::string& name) {
  static const std::set<std::string> kReserved = {
      "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if",
      "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"};
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return std::nullopt;
  if (kReserved.count(name)) return "__" + name + "__";
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '_' && i + 1 < name.size() && name[i + 1] == '_') {
      out += "__underscores__";
      ++i;
    } else if (c == '.') {
      out += "__dot__";
    } else if (c == '-') {
      out += "__dash__";
    } else if (c == '/') {
      out += "__slash__";
    } else if (validChar(c)) {
      out += c;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

TypePtr resolveKindType(const nlohmann::json& document, const std::string& group, const std::string& version,
                        const std::string& kind, const std::string& typeName) {
  auto comps = document.find("components");
  if (comps == document.end() || !comps->is_object()) return nullptr;
  auto schemas = comps->find("schemas");
  if (schemas == comps->end() || !schemas->is_object()) return nullptr;
  for (const auto& [ref, schema] : schemas->items()) {
    auto gvks = schema.find("x-kubernetes-group-version-kind");
    if (gvks == schema.end() || !gvks->is_array()) continue;
    for (const auto& g : *gvks) {
      if (stringField(g, "group") != group || stringField(g, "version") != version || stringField(g, "kind") != kind)
        continue;
      Converter c(*schemas);
      return c.declType(nlohmann::json{{"$ref", kRefPrefix + ref}}, true, typeName);
    }
  }
  return nullptr;
}

}  // namespace kcm::cel
