#include "api/support/utf8.h"

#include <cstdint>
#include <cstring>

namespace kcm::api::utf8 {

size_t sequenceLength(std::string_view s, size_t i) {
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

namespace {
// Index of the first invalid byte, or s.size(). ASCII is skipped eight bytes at a time.
size_t firstInvalid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (i + 8 <= s.size()) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = sequenceLength(s, i);
    if (n == 0) return i;
    i += n;
  }
  return s.size();
}
}  // namespace

bool valid(std::string_view s) { return firstInvalid(s) == s.size(); }

std::string toValid(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  size_t i = firstInvalid(s);
  out.append(s.data(), i);
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : sequenceLength(s, i);
    if (n == 0) {
      out += "\xef\xbf\xbd";
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace kcm::api::utf8
