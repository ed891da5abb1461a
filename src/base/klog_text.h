#pragma once
// Reading klog's structured text back: `"message" key="value" n=3 obj={...} block=<\n...\n >`. Used by the JSON
// log format (which re-emits our text lines as fields) and by tests that compare log lines with upstream's.
#include <cstddef>
#include <string_view>

namespace kcm::log {

// The end of the value that starts at s[i]: a quoted string (escapes honoured), a multi-line block "<\n...\n >",
// or a bare token (Go's printed {...} / [...] values kept whole, spaces inside included).
size_t klogValueEnd(std::string_view s, size_t i);

}  // namespace kcm::log
