#pragma once
// Protobuf wire decoding for the generated API structs (api/gen/*_proto.cc): a reader over one message's bytes
// and `read` overloads that fill a member from one field. The apiserver's messages are proto2 as go-to-protobuf
// writes them: scalars as varints, strings/bytes/messages length-delimited, maps as repeated {key=1, value=2}
// entries, repeated scalars packed or not. A field's wire type must fit the member (else the decode fails);
// fields the struct does not have are skipped. Light: included by every generated decoder.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "api/support/string.h"
#include "api/support/types.h"
#include "api/support/utf8.h"

namespace kcm::api::proto {

inline constexpr std::string_view kEnvelopePrefix{"k8s\0", 4};

// Whether bytes are a protobuf answer ("k8s\0" + runtime.Unknown) rather than JSON.
inline bool isEnvelope(std::string_view b) { return b.substr(0, 4) == kEnvelopePrefix; }
// JSON watch lines start with '{' (or whitespace); a protobuf WatchEvent frame with its type field (tag 0x0a).
inline bool isWatchFrame(std::string_view b) { return !b.empty() && b.front() == '\x0a'; }

enum Wire : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };

struct Tag {
  uint32_t field = 0;
  uint32_t wire = 0;
};

class Reader {
 public:
  explicit Reader(std::string_view b)
      : p_(reinterpret_cast<const uint8_t*>(b.data())), end_(p_ + b.size()) {}
  // The next field's tag; false at the end of the message or on malformed input (then ok() is false).
  bool next(Tag& t) {
    if (p_ == end_) return false;
    uint64_t k;
    if (!varint(k) || (k >> 3) == 0 || (k >> 3) > UINT32_MAX) return fail();
    t.field = static_cast<uint32_t>(k >> 3);
    t.wire = static_cast<uint32_t>(k & 7);
    return true;
  }
  bool ok() const { return ok_; }
  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return fail();
      uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return fail();
  }
  bool bytes(std::string_view& out) {
    uint64_t n;
    if (!varint(n) || n > static_cast<uint64_t>(end_ - p_)) return fail();
    out = std::string_view(reinterpret_cast<const char*>(p_), static_cast<size_t>(n));
    p_ += n;
    return true;
  }
  bool fixed(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) return fail();
    p_ += n;
    return true;
  }
  bool skip(const Tag& t);
  bool fail() { return ok_ = false; }
  bool atEnd() const { return p_ == end_; }
  std::string_view rest() const { return {reinterpret_cast<const char*>(p_), static_cast<size_t>(end_ - p_)}; }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

struct Envelope {
  std::string_view apiVersion, kind, raw;
};

// Unwraps "k8s\0" + runtime.Unknown. False when malformed or content-encoded (the apiserver sends none).
bool unwrap(std::string_view b, Envelope& out);

// One watch frame (metav1.WatchEvent): its type and the bytes of its object (RawExtension.raw).
bool splitWatchEvent(std::string_view frame, std::string& type, std::string_view& object);

// Scalars and strings.
// Text from the wire with each byte that starts no valid UTF-8 sequence made U+FFFD (Go keeps the bytes and its JSON
// encoder replaces them; doing it on the way in keeps what we write back equal to what we read): b itself when it
// is valid, else the repaired copy kept in `scratch`.
inline std::string_view validText(std::string_view b, std::string& scratch) {
  if (utf8::valid(b)) return b;
  scratch = utf8::toValid(b);
  return scratch;
}
inline String internedText(std::string_view b) {
  std::string scratch;
  return String::interned(validText(b, scratch));
}

bool read(Reader& r, const Tag& t, int32_t& out);
bool read(Reader& r, const Tag& t, int64_t& out);
bool read(Reader& r, const Tag& t, bool& out);
bool read(Reader& r, const Tag& t, double& out);
bool read(Reader& r, const Tag& t, String& out);
bool read(Reader& r, const Tag& t, std::string& out);  // bytes
bool readInterned(Reader& r, const Tag& t, String& out);
// The hand-written types (resource.Quantity, intstr.IntOrString, metav1.Time/MicroTime, RawExtension/FieldsV1).
bool read(Reader& r, const Tag& t, Quantity& out);
bool read(Reader& r, const Tag& t, IntOrString& out);
bool read(Reader& r, const Tag& t, Time& out);
bool read(Reader& r, const Tag& t, MicroTime& out);
bool read(Reader& r, const Tag& t, RawJson& out);

// A *metav1.Time, *FieldsV1 or *RawExtension: an empty message (the zero time, no raw bytes) is what Go's JSON
// encoder writes as null and what reads back as unset; it is unset here from the start, so the object encodes as it
// decodes.
template <class T>
  requires(std::is_same_v<T, Time> || std::is_same_v<T, MicroTime> || std::is_same_v<T, RawJson>)
bool read(Reader& r, const Tag& t, std::optional<T>& out) {
  if (!read(r, t, out.emplace())) return false;
  if constexpr (std::is_same_v<T, RawJson>) {
    if (out->json.empty()) out.reset();
  } else if (out->isZero()) {
    out.reset();
  }
  return true;
}

// A nested message: decodeProto(bytes, T&) of T's generated group, found by argument-dependent lookup.
template <class T>
  requires std::is_class_v<T>
bool read(Reader& r, const Tag& t, T& out) {
  std::string_view b;
  if (t.wire != kLen || !r.bytes(b)) return r.fail();
  if (!decodeProto(b, out)) return r.fail();
  return true;
}

template <class T>
inline constexpr bool kPackable = std::is_arithmetic_v<T>;

// One element of a repeated field; scalars also as a packed run.
template <class E>
bool readRepeated(Reader& r, const Tag& t, std::vector<E>& out) {
  if constexpr (kPackable<E>) {
    if (t.wire == kLen) {
      std::string_view b;
      if (!r.bytes(b)) return false;
      Reader q(b);
      const Tag inner{t.field, std::is_same_v<E, double> ? uint32_t{kFixed64} : uint32_t{kVarint}};
      while (!q.atEnd()) {
        E v{};
        if (!read(q, inner, v)) return r.fail();
        out.push_back(v);
      }
      return true;
    }
    E v{};
    if (!read(r, t, v)) return false;
    out.push_back(v);
    return true;
  } else {
    return read(r, t, out.emplace_back());
  }
}
bool readRepeatedInterned(Reader& r, const Tag& t, std::vector<String>& out);

// A repeated item list wrapped in a message of its own (authentication's ExtraValue: `repeated string items = 1`),
// how go-to-protobuf writes a map whose values are lists.
template <class E>
bool readWrapped(Reader& r, const Tag& t, std::vector<E>& out) {
  std::string_view b;
  if (t.wire != kLen || !r.bytes(b)) return r.fail();
  Reader w(b);
  Tag it;
  while (w.next(it)) {
    if (it.field == 1) {
      if (!readRepeated(w, it, out)) return r.fail();
    } else if (!w.skip(it)) {
      return r.fail();
    }
  }
  return w.ok() || r.fail();
}

template <class V>
struct IsVector : std::false_type {};
template <class E>
struct IsVector<std::vector<E>> : std::true_type {};

// One map entry {key = 1, value = 2}. Keys are interned as the JSON decoder does, string values too.
template <class V>
bool readMap(Reader& r, const Tag& t, StringMap<V>& out) {
  std::string_view b;
  if (t.wire != kLen || !r.bytes(b)) return r.fail();
  Reader e(b);
  Tag it;
  std::string_view key;
  std::optional<std::pair<Tag, std::string_view>> value;  // the value's bytes, decoded once the key is known
  while (e.next(it)) {
    if (it.field == 1 && it.wire == kLen) {
      if (!e.bytes(key)) return r.fail();
    } else if (it.field == 2) {
      std::string_view before = e.rest();
      if (!e.skip(it)) return r.fail();
      value.emplace(it, before.substr(0, before.size() - e.rest().size()));
    } else if (!e.skip(it)) {
      return r.fail();
    }
  }
  if (!e.ok()) return r.fail();
  std::string scratch;
  key = validText(key, scratch);
  V& slot = out.decodedSlot(key);
  if (!value) return true;  // a zero value
  Reader v(value->second);
  bool ok;
  if constexpr (IsVector<V>::value)
    ok = readWrapped(v, value->first, slot);
  else if constexpr (std::is_same_v<V, String>)
    ok = readInterned(v, value->first, slot);
  else
    ok = read(v, value->first, slot);
  return ok || r.fail();
}

}  // namespace kcm::api::proto
