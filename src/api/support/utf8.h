#pragma once
// UTF-8 as Go reads it (utf8.DecodeRuneInString): overlong forms, surrogates and code points above U+10FFFF are
// invalid. The JSON writer replaces each invalid byte by U+FFFD as Go's encoding/json does; the protobuf reader
// does the same on the way in, so a decoded string is valid UTF-8 whatever the wire format.
#include <cstddef>
#include <string>
#include <string_view>

namespace kcm::api::utf8 {

// Length of the valid sequence starting at s[i] (a byte >= 0x80), or 0 when it is not one.
size_t sequenceLength(std::string_view s, size_t i);

bool valid(std::string_view s);

// s with each byte that starts no valid sequence replaced by U+FFFD (EF BF BD).
std::string toValid(std::string_view s);

}  // namespace kcm::api::utf8
