#include "api/support/codec.h"

#include <array>
#include <charconv>
#include <cmath>

namespace kcm::api::codec {

using ::simdjson::ondemand::json_type;

::simdjson::ondemand::parser& threadParser() {
  thread_local ::simdjson::ondemand::parser parser;
  return parser;
}

void releaseLargeParserBuffers() {
  auto& p = threadParser();
  if (p.capacity() > (4u << 20)) p = ::simdjson::ondemand::parser{};
}

bool compactJson(std::string_view in, std::string& out) {
  thread_local ::simdjson::dom::parser parser;
  const ::simdjson::padded_string padded(in);
  if (parser.parse(padded).error()) return false;
  out.resize(in.size());
  size_t n = 0;
  if (::simdjson::minify(in.data(), in.size(), out.data(), n)) return false;
  out.resize(n);
  return true;
}

error_code decodeValue(Value v, std::string& out) {
  std::string_view s;
  if (auto e = v.get_string().get(s)) return e;
  out.assign(s);
  return ::simdjson::SUCCESS;
}

error_code decodeValue(Value v, String& out) {
  std::string_view s;
  if (auto e = v.get_string().get(s)) return e;
  out.assign(s.data(), s.size());
  return ::simdjson::SUCCESS;
}

error_code decodeInterned(Value v, String& out) {
  std::string_view s;
  if (auto e = v.get_string().get(s)) return e;
  out = String::interned(s);
  return ::simdjson::SUCCESS;
}

error_code decodeValue(Value v, bool& out) { return v.get_bool().get(out); }

error_code decodeValue(Value v, int64_t& out) {
  if (auto e = v.get_int64().get(out)) {
    // Go accepts integral floats such as 1e3 for integer fields only through custom types; mirror its
    // strictness except for exact floating representations the apiserver never produces.
    double d;
    if (v.get_double().get(d) || std::floor(d) != d) return e;
    // 2^63 and beyond (or NaN) have no int64: out of range, not a cast with undefined behaviour.
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return ::simdjson::NUMBER_OUT_OF_RANGE;
    out = static_cast<int64_t>(d);
  }
  return ::simdjson::SUCCESS;
}

error_code decodeValue(Value v, int32_t& out) {
  int64_t x;
  if (auto e = decodeValue(v, x)) return e;
  if (x < INT32_MIN || x > INT32_MAX) return ::simdjson::NUMBER_OUT_OF_RANGE;
  out = static_cast<int32_t>(x);
  return ::simdjson::SUCCESS;
}

error_code decodeValue(Value v, double& out) { return v.get_double().get(out); }

error_code decodeValue(Value v, Quantity& out) {
  json_type t;
  if (auto e = v.type().get(t)) return e;
  std::string_view s;
  if (t == json_type::string) {
    if (auto e = v.get_string().get(s)) return e;
  } else if (t == json_type::number) {  // Quantity.UnmarshalJSON also takes a bare number
    s = v.raw_json_token();
    while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
      s.remove_suffix(1);
  } else {
    return ::simdjson::INCORRECT_TYPE;
  }
  auto q = Quantity::parse(s);
  if (!q) return ::simdjson::INCORRECT_TYPE;
  out = std::move(*q);
  return ::simdjson::SUCCESS;
}

error_code decodeValue(Value v, IntOrString& out) {
  json_type t;
  if (auto e = v.type().get(t)) return e;
  if (t == json_type::string) {
    out.isString = true;
    out.intVal = 0;
    return decodeValue(v, out.strVal);
  }
  out.isString = false;
  out.strVal.clear();
  return decodeValue(v, out.intVal);
}

error_code decodeValue(Value v, Time& out) {
  std::string_view s;
  if (auto e = v.get_string().get(s)) return e;
  auto t = Time::parse(s);  // "" too is an error, as Go's time.Parse (a zero time is null)
  if (!t) return ::simdjson::INCORRECT_TYPE;
  out = *t;
  return ::simdjson::SUCCESS;
}

error_code decodeValue(Value v, MicroTime& out) {
  std::string_view s;
  if (auto e = v.get_string().get(s)) return e;
  auto t = MicroTime::parse(s);  // "" too is an error, as Go's time.Parse (a zero time is null)
  if (!t) return ::simdjson::INCORRECT_TYPE;
  out = *t;
  return ::simdjson::SUCCESS;
}

error_code decodeValue(Value v, RawJson& out) {
  UnknownFields tmp;
  if (auto e = tmp.capture("", v)) return e;
  out.json = tmp.fields()->front().second;
  return ::simdjson::SUCCESS;
}

error_code decodeBytes(Value v, std::string& out) {
  std::string_view s;
  if (auto e = v.get_string().get(s)) return e;
  if (!base64Decode(s, out)) return ::simdjson::INCORRECT_TYPE;
  return ::simdjson::SUCCESS;
}

void encodeValue(JsonWriter& w, const Quantity& v) { w.value(std::string_view(v.str().empty() ? "0" : v.str())); }

void encodeValue(JsonWriter& w, const IntOrString& v) {
  if (v.isString)
    w.value(std::string_view(v.strVal));
  else
    w.value(v.intVal);
}

void encodeValue(JsonWriter& w, const Time& v) {
  if (v.isZero())
    w.null();
  else
    w.value(v.rfc3339());
}

void encodeValue(JsonWriter& w, const MicroTime& v) {
  if (v.isZero())
    w.null();
  else
    w.value(v.rfc3339Micro());
}

void encodeValue(JsonWriter& w, const RawJson& v) {
  if (v.empty())
    w.null();
  else
    w.raw(v.json);
}

void encodeBytes(JsonWriter& w, const std::string& v) { w.value(base64Encode(v)); }

namespace {
constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += kB64[n >> 18];
    out += kB64[(n >> 12) & 63];
    out += kB64[(n >> 6) & 63];
    out += kB64[n & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t n = uint8_t(in[i]) << 16;
    out += kB64[n >> 18];
    out += kB64[(n >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += kB64[n >> 18];
    out += kB64[(n >> 12) & 63];
    out += kB64[(n >> 6) & 63];
    out += '=';
  }
  return out;
}

bool base64Decode(std::string_view in, std::string& out) {
  // Go's encoding/json uses StdEncoding (padded); be lenient about missing padding only.
  static const auto table = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    for (int k = 0; k < 64; ++k) t[static_cast<uint8_t>(kB64[k])] = static_cast<int8_t>(k);
    return t;
  }();
  out.clear();
  out.reserve(in.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (char c : in) {
    if (c == '=') {
      ++pad;
      continue;
    }
    if (pad) return false;
    int8_t d = table[static_cast<uint8_t>(c)];
    if (d < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return pad <= 2;
}

}  // namespace kcm::api::codec
