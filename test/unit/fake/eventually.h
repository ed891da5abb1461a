#pragma once
// eventually(p): polls p every 10 ms for up to 5 s; true once p holds. For unit tests whose informers or workers
// run for real (against FakeApiServer): a bound on waiting, not a timing assertion.
#include <chrono>
#include <thread>

namespace kcm::testing {

template <class P>
bool eventually(P p, std::chrono::milliseconds within = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    if (p()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return p();
}

}  // namespace kcm::testing
