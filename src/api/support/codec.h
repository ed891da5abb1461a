#pragma once
// JSON codec building blocks for the generated API code, on simdjson's On-Demand API: values are decoded
// straight into structs while the parser walks the text, so no DOM is built, not even for a 10k-item list.
// Include only from .cc files (simdjson.h is large). Thread-safety: functions are reentrant; a parser is
// thread_local.
#include <simdjson.h>

#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "api/support/base64.h"
#include "api/support/json_writer.h"
#include "api/support/types.h"
#include "base/status.h"

namespace kcm::api {

template <class V>
auto UnknownFields::capture(std::string_view key, V& value) {
  ::simdjson::ondemand::json_type t;
  if (auto e = value.type().get(t)) return e;
  std::string_view raw;
  if (t == ::simdjson::ondemand::json_type::object) {
    ::simdjson::ondemand::object o;
    if (auto e = value.get_object().get(o)) return e;
    if (auto e = o.raw_json().get(raw)) return e;
  } else if (t == ::simdjson::ondemand::json_type::array) {
    ::simdjson::ondemand::array a;
    if (auto e = value.get_array().get(a)) return e;
    if (auto e = a.raw_json().get(raw)) return e;
  } else {
    raw = value.raw_json_token();
    while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\t' || raw.back() == '\r'))
      raw.remove_suffix(1);
  }
  add(key, raw);
  return ::simdjson::SUCCESS;
}

namespace codec {

using ::simdjson::error_code;
using Value = ::simdjson::ondemand::value;

inline bool isNull(Value& v) {
  ::simdjson::ondemand::json_type t;
  return !v.type().get(t) && t == ::simdjson::ondemand::json_type::null;
}

error_code decodeValue(Value v, std::string& out);
error_code decodeValue(Value v, String& out);
// A string field whose values repeat across objects (images, condition types, label values): interned.
error_code decodeInterned(Value v, String& out);
error_code decodeValue(Value v, bool& out);
error_code decodeValue(Value v, int32_t& out);
error_code decodeValue(Value v, int64_t& out);
error_code decodeValue(Value v, double& out);
error_code decodeValue(Value v, Quantity& out);
error_code decodeValue(Value v, IntOrString& out);
error_code decodeValue(Value v, Time& out);
error_code decodeValue(Value v, MicroTime& out);
error_code decodeValue(Value v, RawJson& out);
// A []byte field: base64 text, decoded.
error_code decodeBytes(Value v, std::string& out);

template <class T, class F>
error_code decodeArray(Value v, std::vector<T>& out, F&& elem) {
  ::simdjson::ondemand::array arr;
  if (auto e = v.get_array().get(arr)) return e;
  out.clear();
  for (auto item : arr) {
    Value iv;
    if (auto e = item.get(iv)) return e;
    if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no bool& elements
      bool b = false;
      if (!isNull(iv))
        if (auto e = elem(iv, b)) return e;
      out.push_back(b);
    } else {
      T& t = out.emplace_back();
      if (isNull(iv)) continue;
      if (auto e = elem(iv, t)) return e;
    }
  }
  // Growth leaves up to half the capacity unused; cached objects live long, so give it back.
  if (out.capacity() > out.size() + out.size() / 8 + 1) out.shrink_to_fit();
  return ::simdjson::SUCCESS;
}

template <class T, class F>
error_code decodeMap(Value v, StringMap<T>& out, F&& elem) {
  ::simdjson::ondemand::object obj;
  if (auto e = v.get_object().get(obj)) return e;
  out.clear();
  for (auto field : obj) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return e;
    Value fv;
    if (auto e = field.value().get(fv)) return e;
    T& t = out.decodedSlot(key);
    if (isNull(fv)) continue;
    if (auto e = elem(fv, t)) return e;
  }
  out.shrink_to_fit();
  return ::simdjson::SUCCESS;
}

inline void encodeValue(JsonWriter& w, const std::string& v) { w.value(std::string_view(v)); }
inline void encodeValue(JsonWriter& w, const String& v) { w.value(v.view()); }
inline void encodeValue(JsonWriter& w, bool v) { w.value(v); }
inline void encodeValue(JsonWriter& w, int32_t v) { w.value(v); }
inline void encodeValue(JsonWriter& w, int64_t v) { w.value(v); }
inline void encodeValue(JsonWriter& w, double v) { w.value(v); }
void encodeValue(JsonWriter& w, const Quantity& v);
void encodeValue(JsonWriter& w, const IntOrString& v);
void encodeValue(JsonWriter& w, const Time& v);
void encodeValue(JsonWriter& w, const MicroTime& v);
void encodeValue(JsonWriter& w, const RawJson& v);
void encodeBytes(JsonWriter& w, const std::string& v);

template <class T, class F>
void encodeArray(JsonWriter& w, const std::vector<T>& v, F&& elem) {
  w.beginArray();
  for (const T& x : v) elem(w, x);
  w.endArray();
}

template <class T, class F>
void encodeMap(JsonWriter& w, const StringMap<T>& v, F&& elem) {
  w.beginObject();
  for (const auto& [k, x] : v) {
    w.key(k);
    elem(w, x);
  }
  w.endObject();
}

inline bool isZero(const Quantity& q) { return q.str().empty(); }
inline bool isZero(const IntOrString& v) { return !v.isString && v.intVal == 0; }
inline bool isZero(const Time& t) { return t.isZero(); }
inline bool isZero(const MicroTime& t) { return t.isZero(); }
inline bool isZero(const RawJson& r) { return r.empty(); }


// The thread's parser; documents must be consumed before the next parse on the same thread.
::simdjson::ondemand::parser& threadParser();
// One JSON value given as bytes (a RawExtension or FieldsV1 read from protobuf): its compact text (as Go's encoder
// writes a Marshaler's output) into out, or false when the bytes are not exactly one JSON value.
bool compactJson(std::string_view in, std::string& out);

// Gives back the parser's buffers after a large document (a full list), so a reflector thread does not keep
// tens of MB of structural index alive between relists.
void releaseLargeParserBuffers();

}  // namespace codec

// simdjson reads up to SIMDJSON_PADDING bytes past the text: a std::string whose capacity already has that
// room (the usual case for a response body that grew by doubling) is parsed in place, otherwise copied once.
class PaddedInput {
 public:
  explicit PaddedInput(std::string_view json) : copy_(json), view_(copy_) {}
  explicit PaddedInput(const std::string& json)
      : view_(json.capacity() >= json.size() + ::simdjson::SIMDJSON_PADDING
                  ? ::simdjson::padded_string_view(json.data(), json.size(), json.capacity())
                  : (copy_ = ::simdjson::padded_string(json), ::simdjson::padded_string_view(copy_))) {}
  ::simdjson::padded_string_view view() const { return view_; }

 private:
  ::simdjson::padded_string copy_;
  ::simdjson::padded_string_view view_;
};

// Decodes one JSON document into T (any generated type).
template <class T>
Status decodeJson(const PaddedInput& input, T& out) {
  ::simdjson::ondemand::document doc;
  if (auto e = codec::threadParser().iterate(input.view()).get(doc))
    return Status(StatusCode::kInvalidArgument, std::string("decoding JSON: ") + ::simdjson::error_message(e));
  ::simdjson::ondemand::value v;
  if (auto e = doc.get_value().get(v))
    return Status(StatusCode::kInvalidArgument, std::string("decoding JSON: ") + ::simdjson::error_message(e));
  auto e = decodeValue(v, out);
  codec::releaseLargeParserBuffers();
  if (e) return Status(StatusCode::kInvalidArgument, std::string("decoding JSON: ") + ::simdjson::error_message(e));
  return Status::Ok();
}

template <class T>
Status decodeJson(std::string_view json, T& out) {
  return decodeJson(PaddedInput(json), out);
}

template <class T>
Status decodeJson(const std::string& json, T& out) {
  return decodeJson(PaddedInput(json), out);
}

template <class T>
Status decodeJson(const char* json, T& out) {
  return decodeJson(PaddedInput(std::string_view(json)), out);
}

template <class T>
std::string encodeJson(const T& in) {
  std::string out;
  JsonWriter w(out);
  encodeValue(w, in);
  return out;
}

}  // namespace kcm::api
