#pragma once
// Durations as Go's time.Duration.String() prints them ("1m30s", "534.779536ms", "19h35m35.571460329s"): what
// upstream's flags, --help and log values show.
#include <chrono>
#include <string>

namespace kcm {

std::string goDuration(std::chrono::nanoseconds d);

}  // namespace kcm
