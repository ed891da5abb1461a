#pragma once
// What the fuzz targets share: a property failure aborts with both sides printed, so libFuzzer keeps the input
// as a crash artifact (hack/fuzz.sh turns each into a regression seed under test/fuzz/corpus/<target>/).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/log_discard.h"

namespace kcm::fuzz {

[[noreturn]] inline void fail(const std::string& what, std::string_view a = {}, std::string_view b = {}) {
  std::fprintf(stderr, "fuzz property failed: %s\n--- first\n%.*s\n--- second\n%.*s\n", what.c_str(),
               static_cast<int>(a.size()), a.data(), static_cast<int>(b.size()), b.data());
  std::abort();
}

// Silences klog lines (the targets' subjects log their rejections) once per process.
inline void quietLogs() {
  static const bool once = [] {
    log::setDiscard(true);
    return true;
  }();
  (void)once;
}

}  // namespace kcm::fuzz
