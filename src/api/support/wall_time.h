#pragma once
// metav1.Time / MicroTime stamps read from an injected Clock, so controllers that record times (conditions,
// deletion deadlines, pod ages) can be driven by a FakeClock in tests.
#include <chrono>

#include "api/support/types.h"
#include "base/clock.h"

namespace kcm::api {

inline Time timeNow(const Clock& c) {
  return Time::fromUnix(
      std::chrono::duration_cast<std::chrono::seconds>(c.wallNow().time_since_epoch()).count());
}

inline MicroTime microTimeNow(const Clock& c) {
  return MicroTime::fromUnixMicros(
      std::chrono::duration_cast<std::chrono::microseconds>(c.wallNow().time_since_epoch()).count());
}

}  // namespace kcm::api
