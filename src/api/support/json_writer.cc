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

void JsonWriter::string(std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  out_ += '"';
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    // Go's encoding/json escapes <, >, & too (HTML-safe); keep that so bytes match kubectl/client-go.
    if (c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&') continue;
    out_.append(s.data() + start, i - start);
    switch (c) {
      case '"': out_ += "\\\""; break;
      case '\\': out_ += "\\\\"; break;
      case '\n': out_ += "\\n"; break;
      case '\r': out_ += "\\r"; break;
      case '\t': out_ += "\\t"; break;
      default:
        out_ += "\\u00";
        out_ += kHex[c >> 4];
        out_ += kHex[c & 0xf];
    }
    start = i + 1;
  }
  out_.append(s.data() + start, s.size() - start);
  out_ += '"';
}

}  // namespace kcm::api
