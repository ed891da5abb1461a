// The function declarations of the Kubernetes CEL base environment at the pin, as overload signatures written in
// a small notation: "int, int -> int" (global), ".string, string -> bool" (member: the first type is the
// receiver). One upper-case letter is a type parameter; list(T), map(K, V), optional(T), type(T); any other name
// is an opaque type (kubernetes.Quantity, net.IP, ...).
#include <cctype>

#include "cel/checker.h"

namespace kcm::cel {
namespace {

class SpecParser {
 public:
  explicit SpecParser(const std::string& s) : s_(s) {}

  Overload overload() {
    Overload o;
    skip();
    if (peek() == '.') ++i_, o.member = true;
    skip();
    if (!at("->")) {
      o.args.push_back(type());
      for (skip(); peek() == ','; skip()) ++i_, o.args.push_back(type());
    }
    skip();
    i_ += 2;  // "->"
    o.result = type();
    return o;
  }

 private:
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  bool at(const char* p) const { return s_.compare(i_, std::char_traits<char>::length(p), p) == 0; }
  void skip() {
    while (i_ < s_.size() && s_[i_] == ' ') ++i_;
  }
  std::string name() {
    skip();
    size_t b = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' || s_[i_] == '_')) ++i_;
    return s_.substr(b, i_ - b);
  }
  std::vector<TypePtr> params() {
    std::vector<TypePtr> out;
    skip();
    if (peek() != '(') return out;
    ++i_;
    out.push_back(type());
    for (skip(); peek() == ','; skip()) ++i_, out.push_back(type());
    ++i_;  // ')'
    return out;
  }
  TypePtr type() {
    const std::string n = name();
    if (n.size() == 1 && std::isupper(static_cast<unsigned char>(n[0]))) return typeParam(n);
    if (n == "int") return intType();
    if (n == "uint") return uintType();
    if (n == "double") return doubleType();
    if (n == "bool") return boolType();
    if (n == "string") return stringType();
    if (n == "bytes") return bytesType();
    if (n == "null") return nullType();
    if (n == "dyn") return dynType();
    if (n == "timestamp") return timestampType();
    if (n == "duration") return durationType();
    auto p = params();
    if (n == "list") return listOf(p.at(0));
    if (n == "map") return mapOf(p.at(0), p.at(1));
    if (n == "optional") return optionalOf(p.at(0));
    if (n == "type") return typeOf(p.empty() ? nullptr : p[0]);
    return opaque(n, std::move(p));
  }

  const std::string& s_;
  size_t i_ = 0;
};

using Table = std::map<std::string, std::vector<Overload>>;

void add(Table& t, const std::string& fn, std::initializer_list<const char*> specs) {
  for (const char* s : specs) t[fn].push_back(SpecParser(s).overload());
}

void comparisons(Table& t) {
  for (const char* op : {"_<_", "_<=_", "_>_", "_>=_"})
    add(t, op, {"bool, bool -> bool", "int, int -> bool", "int, double -> bool", "int, uint -> bool",
                "uint, uint -> bool", "uint, double -> bool", "uint, int -> bool", "double, double -> bool",
                "double, int -> bool", "double, uint -> bool", "string, string -> bool", "bytes, bytes -> bool",
                "timestamp, timestamp -> bool", "duration, duration -> bool"});
}

void standard(Table& t) {
  add(t, "_?_:_", {"bool, A, A -> A"});
  add(t, "!_", {"bool -> bool"});
  add(t, "@not_strictly_false", {"bool -> bool"});
  add(t, "_==_", {"A, A -> bool"});
  add(t, "_!=_", {"A, A -> bool"});
  add(t, "_+_", {"bytes, bytes -> bytes", "double, double -> double", "duration, duration -> duration",
                 "duration, timestamp -> timestamp", "timestamp, duration -> timestamp", "int, int -> int",
                 "list(A), list(A) -> list(A)", "string, string -> string", "uint, uint -> uint"});
  add(t, "_-_", {"double, double -> double", "duration, duration -> duration", "int, int -> int",
                 "timestamp, duration -> timestamp", "timestamp, timestamp -> duration", "uint, uint -> uint"});
  add(t, "_*_", {"double, double -> double", "int, int -> int", "uint, uint -> uint"});
  add(t, "_/_", {"double, double -> double", "int, int -> int", "uint, uint -> uint"});
  add(t, "_%_", {"int, int -> int", "uint, uint -> uint"});
  add(t, "-_", {"double -> double", "int -> int"});
  comparisons(t);
  add(t, "_[_]", {"list(A), int -> A", "map(K, V), K -> V"});
  add(t, "@in", {"A, list(A) -> bool", "A, map(A, B) -> bool"});
  add(t, "in", {"A, list(A) -> bool", "A, map(A, B) -> bool"});
  add(t, "size", {"bytes -> int", ".bytes -> int", "list(A) -> int", ".list(A) -> int", "map(A, B) -> int",
                  ".map(A, B) -> int", "string -> int", ".string -> int"});
  add(t, "type", {"A -> type(A)"});
  add(t, "bool", {"bool -> bool", "string -> bool"});
  add(t, "bytes", {"bytes -> bytes", "string -> bytes"});
  add(t, "double", {"double -> double", "int -> double", "string -> double", "uint -> double"});
  add(t, "duration", {"duration -> duration", "string -> duration"});
  add(t, "dyn", {"A -> dyn"});
  add(t, "int", {"int -> int", "double -> int", "duration -> int", "string -> int", "timestamp -> int",
                 "uint -> int"});
  add(t, "string", {"string -> string", "bool -> string", "bytes -> string", "double -> string",
                    "duration -> string", "int -> string", "timestamp -> string", "uint -> string",
                    "net.IP -> string", "net.CIDR -> string"});
  add(t, "timestamp", {"timestamp -> timestamp", "int -> timestamp", "string -> timestamp"});
  add(t, "uint", {"uint -> uint", "double -> uint", "int -> uint", "string -> uint"});
  add(t, "contains", {".string, string -> bool"});
  add(t, "endsWith", {".string, string -> bool"});
  add(t, "startsWith", {".string, string -> bool"});
  add(t, "matches", {"string, string -> bool", ".string, string -> bool"});
  for (const char* f : {"getFullYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek"})
    add(t, f, {".timestamp -> int", ".timestamp, string -> int"});
  for (const char* f : {"getHours", "getMinutes", "getSeconds", "getMilliseconds"})
    add(t, f, {".timestamp -> int", ".timestamp, string -> int", ".duration -> int"});
  // Internal helpers of expanded macros.
  add(t, "cel.@mapInsert", {"map(K, V), K, V -> map(K, V)", "map(K, V), map(K, V) -> map(K, V)"});
}

void extensions(Table& t) {
  // ext.Strings v2
  add(t, "charAt", {".string, int -> string"});
  add(t, "indexOf", {".string, string -> int", ".string, string, int -> int", ".list(A), A -> int"});
  add(t, "lastIndexOf", {".string, string -> int", ".string, string, int -> int", ".list(A), A -> int"});
  add(t, "lowerAscii", {".string -> string"});
  add(t, "upperAscii", {".string -> string"});
  add(t, "replace", {".string, string, string -> string", ".string, string, string, int -> string"});
  add(t, "split", {".string, string -> list(string)", ".string, string, int -> list(string)"});
  add(t, "substring", {".string, int -> string", ".string, int, int -> string"});
  add(t, "trim", {".string -> string"});
  add(t, "join", {".list(string) -> string", ".list(string), string -> string"});
  add(t, "format", {".string, list(dyn) -> string"});
  add(t, "strings.quote", {"string -> string"});
  add(t, "reverse", {".string -> string", ".list(A) -> list(A)"});
  // ext.Sets
  add(t, "sets.contains", {"list(A), list(A) -> bool"});
  add(t, "sets.equivalent", {"list(A), list(A) -> bool"});
  add(t, "sets.intersects", {"list(A), list(A) -> bool"});
  // ext.Lists v3
  add(t, "slice", {".list(A), int, int -> list(A)"});
  add(t, "flatten", {".list(list(A)) -> list(A)", ".list(dyn), int -> list(dyn)"});
  add(t, "lists.range", {"int -> list(int)"});
  add(t, "distinct", {".list(A) -> list(A)"});
  add(t, "sort", {".list(A) -> list(A)"});
  add(t, "first", {".list(A) -> optional(A)"});
  add(t, "@sortByAssociatedKeys", {".list(A), list(B) -> list(A)"});
  add(t, "last", {".list(A) -> optional(A)"});
  // Kubernetes lists
  add(t, "isSorted", {".list(A) -> bool"});
  add(t, "sum", {".list(int) -> int", ".list(uint) -> uint", ".list(double) -> double",
                 ".list(duration) -> duration"});
  add(t, "min", {".list(A) -> A"});
  add(t, "max", {".list(A) -> A"});
  // Kubernetes regex, URLs
  add(t, "find", {".string, string -> string"});
  add(t, "findAll", {".string, string -> list(string)", ".string, string, int -> list(string)"});
  add(t, "url", {"string -> kubernetes.URL"});
  add(t, "isURL", {"string -> bool"});
  for (const char* f : {"getScheme", "getHost", "getHostname", "getPort", "getEscapedPath"})
    add(t, f, {".kubernetes.URL -> string"});
  add(t, "getQuery", {".kubernetes.URL -> map(string, list(string))"});
  // Kubernetes authz (and selectors)
  add(t, "path", {".kubernetes.authorization.Authorizer, string -> kubernetes.authorization.PathCheck"});
  add(t, "group", {".kubernetes.authorization.Authorizer, string -> kubernetes.authorization.GroupCheck"});
  add(t, "serviceAccount",
      {".kubernetes.authorization.Authorizer, string, string -> kubernetes.authorization.Authorizer"});
  add(t, "resource", {".kubernetes.authorization.GroupCheck, string -> kubernetes.authorization.ResourceCheck"});
  for (const char* f : {"subresource", "namespace", "name", "fieldSelector", "labelSelector"})
    add(t, f, {".kubernetes.authorization.ResourceCheck, string -> kubernetes.authorization.ResourceCheck"});
  add(t, "check", {".kubernetes.authorization.PathCheck, string -> kubernetes.authorization.Decision",
                   ".kubernetes.authorization.ResourceCheck, string -> kubernetes.authorization.Decision"});
  add(t, "allowed", {".kubernetes.authorization.Decision -> bool"});
  add(t, "errored", {".kubernetes.authorization.Decision -> bool"});
  add(t, "reason", {".kubernetes.authorization.Decision -> string"});
  add(t, "error", {".kubernetes.authorization.Decision -> string"});
  // Kubernetes quantity
  add(t, "quantity", {"string -> kubernetes.Quantity"});
  add(t, "isQuantity", {"string -> bool"});
  add(t, "sign", {".kubernetes.Quantity -> int"});
  add(t, "isInteger", {".kubernetes.Quantity -> bool"});
  add(t, "asInteger", {".kubernetes.Quantity -> int"});
  add(t, "asApproximateFloat", {".kubernetes.Quantity -> double"});
  add(t, "add", {".kubernetes.Quantity, kubernetes.Quantity -> kubernetes.Quantity",
                 ".kubernetes.Quantity, int -> kubernetes.Quantity"});
  add(t, "sub", {".kubernetes.Quantity, kubernetes.Quantity -> kubernetes.Quantity",
                 ".kubernetes.Quantity, int -> kubernetes.Quantity"});
  add(t, "isGreaterThan", {".kubernetes.Quantity, kubernetes.Quantity -> bool",
                           ".kubernetes.Semver, kubernetes.Semver -> bool"});
  add(t, "isLessThan", {".kubernetes.Quantity, kubernetes.Quantity -> bool",
                        ".kubernetes.Semver, kubernetes.Semver -> bool"});
  add(t, "compareTo", {".kubernetes.Quantity, kubernetes.Quantity -> int",
                       ".kubernetes.Semver, kubernetes.Semver -> int"});
  // Kubernetes IP and CIDR
  add(t, "ip", {"string -> net.IP", ".net.CIDR -> net.IP"});
  add(t, "isIP", {"string -> bool"});
  add(t, "ip.isCanonical", {"string -> bool"});
  add(t, "family", {".net.IP -> int"});
  for (const char* f : {"isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast"})
    add(t, f, {".net.IP -> bool"});
  add(t, "cidr", {"string -> net.CIDR"});
  add(t, "isCIDR", {"string -> bool"});
  add(t, "containsIP", {".net.CIDR, string -> bool", ".net.CIDR, net.IP -> bool"});
  add(t, "containsCIDR", {".net.CIDR, string -> bool", ".net.CIDR, net.CIDR -> bool"});
  add(t, "masked", {".net.CIDR -> net.CIDR"});
  add(t, "prefixLength", {".net.CIDR -> int"});
  // Kubernetes format
  add(t, "format.named", {"string -> optional(kubernetes.NamedFormat)"});
  for (const char* f : {"format.dns1123Label", "format.dns1123Subdomain", "format.dns1035Label", "format.qualifiedName",
                        "format.dns1123LabelPrefix", "format.dns1123SubdomainPrefix", "format.dns1035LabelPrefix",
                        "format.labelValue", "format.uri", "format.uuid", "format.byte", "format.date",
                        "format.datetime"})
    add(t, f, {"-> kubernetes.NamedFormat"});
  add(t, "validate", {".kubernetes.NamedFormat, string -> optional(list(string))"});
  // Kubernetes semver
  add(t, "semver", {"string -> kubernetes.Semver", "string, bool -> kubernetes.Semver"});
  add(t, "isSemver", {"string -> bool", "string, bool -> bool"});
  for (const char* f : {"major", "minor", "patch"}) add(t, f, {".kubernetes.Semver -> int"});
  // Optional types
  add(t, "optional.of", {"A -> optional(A)"});
  add(t, "optional.ofNonZeroValue", {"A -> optional(A)"});
  add(t, "optional.none", {"-> optional(A)"});
  add(t, "hasValue", {".optional(A) -> bool"});
  add(t, "value", {".optional(A) -> A"});
  add(t, "or", {".optional(A), optional(A) -> optional(A)"});
  add(t, "orValue", {".optional(A), A -> A"});
  add(t, "_[?_]", {"list(A), int -> optional(A)", "map(K, V), K -> optional(V)",
                   "optional(list(A)), int -> optional(A)", "optional(map(K, V)), K -> optional(V)"});
  add(t, "_[_]", {"optional(list(A)), int -> optional(A)", "optional(map(K, V)), K -> optional(V)"});
}

}  // namespace

const std::map<std::string, std::vector<Overload>>& standardFunctions() {
  static const Table table = [] {
    Table t;
    standard(t);
    extensions(t);
    return t;
  }();
  return table;
}

}  // namespace kcm::cel
