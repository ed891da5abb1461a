#pragma once
// Durations and times as Go's time.Duration.String() prints them ("1m30s", "534.779536ms", "19h35m35.571460329s"): what
// upstream's flags, --help and log values show.
#include <chrono>
#include <string>

namespace kcm {

std::string goDuration(std::chrono::nanoseconds d);

// A wall-clock time as Go's time.Time.String() prints it in UTC, without the monotonic reading:
// "2026-12-06 02:44:24.174321813 +0000 UTC" (fraction trimmed, none for whole seconds).
std::string goTime(std::chrono::system_clock::time_point t);

}  // namespace kcm
