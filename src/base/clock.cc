#include "base/clock.h"

#include <thread>

namespace kcm {

RealClock& RealClock::get() {
  static RealClock c;
  return c;
}

bool RealClock::sleepFor(Duration d, std::stop_token stop) {
  if (!stop.stop_possible()) {
    std::this_thread::sleep_for(d);
    return true;
  }
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock l(m);
  return !cv.wait_for(l, stop, d, [] { return false; }) && !stop.stop_requested();
}

}  // namespace kcm
