#include "api/support/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "api/support/utf8.h"

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


void JsonWriter::string(std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  out_ += '"';
  size_t start = 0;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      // As Go's encoding/json: U+2028/U+2029 escaped, invalid UTF-8 replaced by U+FFFD.
      const size_t n = utf8::sequenceLength(s, i);
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
