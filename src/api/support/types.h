#pragma once
// Hand-written value types the generated API structs use, matching apimachinery's JSON behaviour:
//   Quantity (resource.Quantity), IntOrString (intstr), Time / MicroTime (metav1), RawJson (RawExtension,
//   FieldsV1), UnknownFields (members a struct does not know, kept verbatim for round trips).
// Light header: no JSON library here. Thread-safety: plain values.
#include <cstdint>
#include <memory>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/support/string.h"

namespace kcm::api {

class JsonWriter;

// An optional struct kept on the heap: Go's pointer-to-struct fields (e.g. Container.livenessProbe,
// Volume.configMap). Unset costs one pointer instead of the struct's full size inline, which is what keeps a
// cached Pod small. Value semantics (deep copy), with std::optional's interface.
template <class T>
class Box {
 public:
  Box() = default;
  Box(const T& v) : p_(std::make_unique<T>(v)) {}  // NOLINT: implicit like std::optional
  Box(T&& v) : p_(std::make_unique<T>(std::move(v))) {}  // NOLINT
  Box(const Box& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Box(Box&&) noexcept = default;
  Box& operator=(const Box& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  Box& operator=(Box&&) noexcept = default;
  Box& operator=(const T& v) {
    p_ = std::make_unique<T>(v);
    return *this;
  }
  Box& operator=(T&& v) {
    p_ = std::make_unique<T>(std::move(v));
    return *this;
  }

  bool has_value() const { return p_ != nullptr; }
  explicit operator bool() const { return p_ != nullptr; }
  T& operator*() { return *p_; }
  const T& operator*() const { return *p_; }
  T* operator->() { return p_.get(); }
  const T* operator->() const { return p_.get(); }
  T& value() { return *p_; }
  const T& value() const { return *p_; }
  template <class... A>
  T& emplace(A&&... a) {
    p_ = std::make_unique<T>(std::forward<A>(a)...);
    return *p_;
  }
  void reset() { p_.reset(); }

 private:
  std::unique_ptr<T> p_;
};

// A map with string keys stored as a vector sorted by key: the JSON maps of the API (labels, annotations,
// resource lists, ConfigMap data) are small, and a flat vector costs a fraction of std::map's per-node memory.
// Interface is the subset of std::map the code uses. Not thread-safe for writes, like std::map.
template <class V>
class StringMap {
 public:
  using value_type = std::pair<String, V>;
  using iterator = typename std::vector<value_type>::iterator;
  using const_iterator = typename std::vector<value_type>::const_iterator;

  StringMap() = default;
  StringMap(std::initializer_list<value_type> init) {
    for (const auto& kv : init) (*this)[kv.first] = kv.second;
  }
  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }
  iterator begin() { return v_.begin(); }
  iterator end() { return v_.end(); }
  const_iterator begin() const { return v_.begin(); }
  const_iterator end() const { return v_.end(); }
  void clear() { v_.clear(); }
  void reserve(size_t n) { v_.reserve(n); }
  void shrink_to_fit() { v_.shrink_to_fit(); }

  const_iterator find(std::string_view k) const {
    auto it = lower(k);
    return it != v_.end() && it->first == k ? const_iterator(it) : v_.end();
  }
  iterator find(std::string_view k) {
    auto it = lowerMut(k);
    return it != v_.end() && it->first == k ? it : v_.end();
  }
  size_t count(std::string_view k) const { return find(k) != v_.end() ? 1 : 0; }
  bool contains(std::string_view k) const { return count(k) != 0; }
  const V& at(std::string_view k) const {
    auto it = find(k);
    if (it == v_.end()) throw std::out_of_range("StringMap::at: " + std::string(k));
    return it->second;
  }
  V& operator[](std::string_view k) { return slot(k, false); }
  // operator[] for the decoder: a new key is interned (label and annotation keys repeat across objects).
  V& decodedSlot(std::string_view k) { return slot(k, true); }
  size_t erase(std::string_view k) {
    auto it = find(k);
    if (it == v_.end()) return 0;
    v_.erase(it);
    return 1;
  }
  bool operator==(const StringMap& o) const { return v_ == o.v_; }

 private:
  typename std::vector<value_type>::const_iterator lower(std::string_view k) const {
    size_t lo = 0, hi = v_.size();
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (v_[mid].first < k) lo = mid + 1; else hi = mid;
    }
    return v_.begin() + static_cast<std::ptrdiff_t>(lo);
  }
  iterator lowerMut(std::string_view k) { return v_.begin() + (lower(k) - v_.cbegin()); }
  V& slot(std::string_view k, bool intern) {
    // JSON from the apiserver arrives key-sorted (Go sorts map keys), so appends are the common case.
    if (v_.empty() || v_.back().first < k) return v_.emplace_back(intern ? String::interned(k) : String(k), V{}).second;
    auto it = lowerMut(k);
    if (it != v_.end() && it->first == k) return it->second;
    return v_.emplace(it, intern ? String::interned(k) : String(k), V{})->second;
  }
  std::vector<value_type> v_;
};

// resource.Quantity. Keeps the text it was decoded from (the apiserver sends canonical forms, so re-encoding is
// exact) and parses it on demand. Values are rounded up like Go's Value()/MilliValue().
class Quantity {
 public:
  Quantity() = default;
  // Parses "100m", "1Gi", "1e3", "0.5", ... Returns nullopt for text Go's ParseQuantity rejects.
  static std::optional<Quantity> parse(std::string_view s);
  static Quantity fromInt(int64_t v);        // decimalSI, "5", "5k" as Go canonicalises small cases
  static Quantity fromMilli(int64_t milli);  // "100m", or whole units when divisible
  const String& str() const { return s_; }
  bool isZero() const;
  int64_t value() const;       // ceil(q)
  int64_t milliValue() const;  // ceil(q * 1000)
  bool operator==(const Quantity& o) const { return milliValue() == o.milliValue(); }
  int compare(const Quantity& o) const;

 private:
  explicit Quantity(std::string_view s) : s_(s) {}
  String s_;
};

// intstr.IntOrString.
struct IntOrString {
  bool isString = false;
  int32_t intVal = 0;
  std::string strVal;
  static IntOrString fromInt(int32_t v) { return IntOrString{false, v, {}}; }
  static IntOrString fromString(std::string v) { return IntOrString{true, 0, std::move(v)}; }
  bool operator==(const IntOrString&) const = default;
};

// intstr.GetScaledValueFromIntOrPercent: an int as is, "N%" of total rounded up or down. nullopt when malformed.
std::optional<int> getScaledValueFromIntOrPercent(const IntOrString& v, int total, bool roundUp);

// metav1.Time: second precision, RFC3339 in UTC on the wire; the zero value encodes as null.
struct Time {
  static constexpr int64_t kZero = INT64_MIN;
  int64_t unixSeconds = kZero;
  bool isZero() const { return unixSeconds == kZero; }
  static Time fromUnix(int64_t s) { return Time{s}; }
  static Time now();
  // Accepts RFC3339 with any offset and optional fraction (dropped, as Go's metav1.Time does).
  static std::optional<Time> parse(std::string_view s);
  std::string rfc3339() const;  // "2006-01-02T15:04:05Z"
  auto operator<=>(const Time&) const = default;
};

// metav1.MicroTime: microsecond precision, "2006-01-02T15:04:05.000000Z".
struct MicroTime {
  static constexpr int64_t kZero = INT64_MIN;
  int64_t unixMicros = kZero;
  bool isZero() const { return unixMicros == kZero; }
  static MicroTime fromUnixMicros(int64_t us) { return MicroTime{us}; }
  static MicroTime now();
  static std::optional<MicroTime> parse(std::string_view s);
  std::string rfc3339Micro() const;
  auto operator<=>(const MicroTime&) const = default;
};

// Arbitrary JSON kept as text (runtime.RawExtension, metav1.FieldsV1). Empty = absent.
struct RawJson {
  std::string json;
  bool empty() const { return json.empty(); }
  bool operator==(const RawJson&) const = default;
};

// Object members a generated struct does not know (fields newer than our schema). Null when there are none,
// so it costs one pointer per struct. Copyable.
class UnknownFields {
 public:
  UnknownFields() = default;
  UnknownFields(const UnknownFields& o)
      : fields_(o.fields_ ? std::make_unique<Fields>(*o.fields_) : nullptr) {}
  UnknownFields& operator=(const UnknownFields& o) {
    if (this != &o) fields_ = o.fields_ ? std::make_unique<Fields>(*o.fields_) : nullptr;
    return *this;
  }
  UnknownFields(UnknownFields&&) noexcept = default;
  UnknownFields& operator=(UnknownFields&&) noexcept = default;

  bool empty() const { return !fields_ || fields_->empty(); }
  // (key, raw JSON value) pairs in document order.
  using Fields = std::vector<std::pair<std::string, std::string>>;
  const Fields* fields() const { return fields_.get(); }
  void add(std::string_view key, std::string_view rawJson);
  void emit(JsonWriter& w) const;

  // Defined in codec.h (needs simdjson); declared here as a template to keep this header light.
  template <class V>
  auto capture(std::string_view key, V& value);

 private:
  std::unique_ptr<Fields> fields_;
};

}  // namespace kcm::api

namespace kcm::api {
// REST facts of a typed object (group, version, plural resource, kind, namespaced, list type), specialised by
// the generated headers for every top-level kind the schema serves.
template <class T>
struct ResourceTraits;
}  // namespace kcm::api
