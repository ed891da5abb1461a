#include "api/support/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace kcm::api {

void JsonWriter::value(int64_t v) {
  sep();
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, p);
  comma_ = true;
}

void JsonWriter::value(double v) {
  sep();
  if (!std::isfinite(v)) {
    out_ += "null";
  } else {
    char buf[32];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form, like Go
    out_.append(buf, p);
  }
  comma_ = true;
}

namespace {
// Length of the valid UTF-8 sequence starting at s[i] (a byte >= 0x80), or 0 when it is not one (Go's
// utf8.DecodeRuneInString: overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t utf8SequenceLength(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n;
  uint32_t cp;
  if (c >= 0xc2 && c <= 0xdf) n = 2, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef) n = 3, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3f);
  }
  if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
    return 0;
  return n;
}
}  // namespace

void JsonWriter::string(std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  out_ += '"';
  size_t start = 0;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      // As Go's encoding/json: U+2028/U+2029 escaped, invalid UTF-8 replaced by U+FFFD.
      const size_t n = utf8SequenceLength(s, i);
      if (n == 3 && c == 0xe2 && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
          (static_cast<unsigned char>(s[i + 2]) & 0xfe) == 0xa8) {
        out_.append(s.data() + start, i - start);
        out_ += static_cast<unsigned char>(s[i + 2]) == 0xa8 ? "\\u2028" : "\\u2029";
        i += 3;
        start = i;
      } else if (n == 0) {
        out_.append(s.data() + start, i - start);
        out_ += "\\ufffd";
        i += 1;
        start = i;
      } else {
        i += n;
      }
      continue;
    }
    // Go's encoding/json escapes <, >, & too (HTML-safe); keep that so bytes match kubectl/client-go.
    if (c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&') {
      ++i;
      continue;
    }
    out_.append(s.data() + start, i - start);
    switch (c) {
      case '"': out_ += "\\\""; break;
      case '\\': out_ += "\\\\"; break;
      case '\b': out_ += "\\b"; break;
      case '\f': out_ += "\\f"; break;
      case '\n': out_ += "\\n"; break;
      case '\r': out_ += "\\r"; break;
      case '\t': out_ += "\\t"; break;
      default:
        out_ += "\\u00";
        out_ += kHex[c >> 4];
        out_ += kHex[c & 0xf];
    }
    start = ++i;
  }
  out_.append(s.data() + start, s.size() - start);
  out_ += '"';
}

}  // namespace kcm::api
