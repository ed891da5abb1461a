#pragma once
// Unpadded URL-safe base64, as Go's encoding/base64.RawURLEncoding: JWS and JWT segments.
#include <string>
#include <string_view>

#include "api/support/base64.h"

namespace kcm::api::codec {

inline std::string base64RawUrlEncode(std::string_view in) {
  std::string s = base64Encode(in);
  for (char& c : s) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  while (!s.empty() && s.back() == '=') s.pop_back();
  return s;
}

}  // namespace kcm::api::codec
