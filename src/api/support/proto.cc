#include "api/support/proto.h"

#include <cstring>

#include "api/support/codec.h"
#include "api/support/utf8.h"

namespace kcm::api::proto {

bool Reader::skip(const Tag& t) {
  uint64_t v;
  std::string_view b;
  switch (t.wire) {
    case kVarint: return varint(v);
    case kFixed64: return fixed(8);
    case kLen: return bytes(b);
    case kFixed32: return fixed(4);
    default: return fail();  // groups (3, 4) are not used by the API
  }
}

namespace {

bool readVarint(Reader& r, const Tag& t, uint64_t& v) {
  if (t.wire != kVarint) return r.fail();
  return r.varint(v);
}

bool readLen(Reader& r, const Tag& t, std::string_view& b) {
  if (t.wire != kLen) return r.fail();
  return r.bytes(b);
}

// The fields of a small hand-decoded message: calls f(tag, reader) for each, skipping what f does not take.
template <class F>
bool eachField(Reader& r, const Tag& t, F&& f) {
  std::string_view b;
  if (!readLen(r, t, b)) return false;
  Reader m(b);
  Tag it;
  while (m.next(it)) {
    int took = f(it, m);
    if (took < 0) return r.fail();
    if (took == 0 && !m.skip(it)) return r.fail();
  }
  return m.ok() || r.fail();
}

}  // namespace

bool read(Reader& r, const Tag& t, int32_t& out) {
  uint64_t v;
  if (!readVarint(r, t, v)) return false;
  out = static_cast<int32_t>(static_cast<int64_t>(v));  // int32 is sign-extended to 64 bits on the wire
  return true;
}

bool read(Reader& r, const Tag& t, int64_t& out) {
  uint64_t v;
  if (!readVarint(r, t, v)) return false;
  out = static_cast<int64_t>(v);
  return true;
}

bool read(Reader& r, const Tag& t, bool& out) {
  uint64_t v;
  if (!readVarint(r, t, v)) return false;
  out = v != 0;
  return true;
}

bool read(Reader& r, const Tag& t, double& out) {
  if (t.wire != kFixed64) return r.fail();
  std::string_view before = r.rest();
  if (!r.fixed(8)) return false;
  uint64_t bits = 0;
  for (int i = 7; i >= 0; --i) bits = (bits << 8) | static_cast<uint8_t>(before[static_cast<size_t>(i)]);
  std::memcpy(&out, &bits, sizeof out);
  return true;
}

bool read(Reader& r, const Tag& t, String& out) {
  std::string_view b;
  if (!readLen(r, t, b)) return false;
  std::string scratch;
  out = String(validText(b, scratch));
  return true;
}

bool readInterned(Reader& r, const Tag& t, String& out) {
  std::string_view b;
  if (!readLen(r, t, b)) return false;
  out = internedText(b);
  return true;
}

bool read(Reader& r, const Tag& t, std::string& out) {
  std::string_view b;
  if (!readLen(r, t, b)) return false;
  out.assign(b);
  return true;
}

bool readRepeatedInterned(Reader& r, const Tag& t, std::vector<String>& out) {
  return readInterned(r, t, out.emplace_back());
}

// resource.Quantity {string = 1}: the canonical text, parsed as the JSON decoder parses it.
bool read(Reader& r, const Tag& t, Quantity& out) {
  std::string_view text;
  bool bad = false;
  if (!eachField(r, t, [&](const Tag& f, Reader& m) {
        if (f.field != 1) return 0;
        if (!readLen(m, f, text)) return -1;
        return 1;
      }))
    return false;
  if (auto q = Quantity::parse(text)) {
    out = *q;
  } else {
    bad = true;
  }
  return !bad || r.fail();
}

// intstr.IntOrString {type = 1 (0 int, 1 string), intVal = 2, strVal = 3}.
bool read(Reader& r, const Tag& t, IntOrString& out) {
  out = IntOrString{};
  return eachField(r, t, [&](const Tag& f, Reader& m) {
    uint64_t v;
    std::string_view s;
    switch (f.field) {
      case 1:
        if (!readVarint(m, f, v)) return -1;
        out.isString = v == 1;
        return 1;
      case 2:
        return read(m, f, out.intVal) ? 1 : -1;
      case 3: {
        if (!readLen(m, f, s)) return -1;
        std::string scratch;
        out.strVal = validText(s, scratch);
        return 1;
      }
      default:
        return 0;
    }
  });
}

// metav1.Time / MicroTime {seconds = 1, nanos = 2}; an empty message is the zero time (Go marshals zero as
// nothing), as JSON's null. False in `any` then.
static bool readTimestamp(Reader& r, const Tag& t, int64_t& seconds, int32_t& nanos, bool& any) {
  seconds = 0, nanos = 0, any = false;
  return eachField(r, t, [&](const Tag& f, Reader& m) {
    if (f.field == 1) return any = true, read(m, f, seconds) ? 1 : -1;
    if (f.field == 2) return any = true, read(m, f, nanos) ? 1 : -1;
    return 0;
  });
}

bool read(Reader& r, const Tag& t, Time& out) {
  int64_t seconds;
  int32_t nanos;
  bool any;
  if (!readTimestamp(r, t, seconds, nanos, any)) return false;
  out = any ? Time::fromUnix(seconds) : Time{};
  return true;
}

bool read(Reader& r, const Tag& t, MicroTime& out) {
  int64_t seconds;
  int32_t nanos;
  bool any;
  if (!readTimestamp(r, t, seconds, nanos, any)) return false;
  out = any ? MicroTime::fromUnixMicros(seconds * 1000000 + nanos / 1000) : MicroTime{};
  return true;
}

// runtime.RawExtension {raw = 1} and metav1.FieldsV1 {Raw = 1}: JSON bytes kept as text.
bool read(Reader& r, const Tag& t, RawJson& out) {
  out.json.clear();
  return eachField(r, t, [&](const Tag& f, Reader& m) {
    std::string_view b;
    if (f.field != 1) return 0;
    if (!readLen(m, f, b)) return -1;
    // Go keeps any bytes here and fails only when it encodes them; ours must be one JSON value, as from JSON.
    if (!b.empty() && !codec::compactJson(b, out.json)) return -1;
    return 1;
  });
}

}  // namespace kcm::api::proto

namespace kcm::api::proto {

bool unwrap(std::string_view b, Envelope& out) {
  if (b.substr(0, 4) != std::string_view("k8s\0", 4)) return false;
  Reader r(b.substr(4));
  Tag t;
  std::string_view encoding;
  while (r.next(t)) {
    if (t.field == 1 && t.wire == kLen) {  // runtime.TypeMeta
      std::string_view tm;
      if (!r.bytes(tm)) return false;
      Reader m(tm);
      Tag f;
      while (m.next(f)) {
        if (f.field == 1 && f.wire == kLen) {
          if (!m.bytes(out.apiVersion)) return false;
        } else if (f.field == 2 && f.wire == kLen) {
          if (!m.bytes(out.kind)) return false;
        } else if (!m.skip(f)) {
          return false;
        }
      }
      if (!m.ok()) return false;
    } else if (t.field == 2 && t.wire == kLen) {
      if (!r.bytes(out.raw)) return false;
    } else if (t.field == 3 && t.wire == kLen) {
      if (!r.bytes(encoding)) return false;
    } else if (!r.skip(t)) {
      return false;
    }
  }
  return r.ok() && encoding.empty();
}

bool splitWatchEvent(std::string_view frame, std::string& type, std::string_view& object) {
  Reader r(frame);
  Tag t;
  object = {};
  while (r.next(t)) {
    std::string_view b;
    if (t.field == 1 && t.wire == kLen) {
      if (!r.bytes(b)) return false;
      type.assign(b);
    } else if (t.field == 2 && t.wire == kLen) {  // RawExtension {raw = 1}
      if (!r.bytes(b)) return false;
      Reader x(b);
      Tag f;
      while (x.next(f)) {
        if (f.field == 1 && f.wire == kLen) {
          if (!x.bytes(object)) return false;
        } else if (!x.skip(f)) {
          return false;
        }
      }
      if (!x.ok()) return false;
    } else if (!r.skip(t)) {
      return false;
    }
  }
  return r.ok() && !type.empty();
}

}  // namespace kcm::api::proto
