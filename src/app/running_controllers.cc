#include "app/running_controllers.h"

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>

#include "base/log.h"
#include "options/typed_options.h"

namespace kcm::app {

using log::quote;

Status controllerHealth(ControllerHealth& h, const std::string& name) {
  std::lock_guard l(h.mu);
  if (!h.alive || !h.informersStartedAt) return Status::Ok();
  if (std::chrono::steady_clock::now() - *h.informersStartedAt < kInformerSyncGrace) return Status::Ok();
  for (auto* inf : h.informersOf[name]) {
    if (inf->hasSynced()) continue;
    std::string err = inf->lastListError();
    return Status(StatusCode::kUnavailable,
                  "informer for " + inf->description() + " has not synced" + (err.empty() ? "" : ": " + err));
  }
  return Status::Ok();
}

void RunningControllers::add(std::string name, std::unique_ptr<controllers::Controller> c) {
  built_.push_back({std::move(name), std::move(c)});
}

void RunningControllers::startAll(std::chrono::nanoseconds interval, std::stop_token stop) {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> jitter(1.0, 2.0);
  for (auto& b : built_) {
    if (interval.count() <= 0) {
      start(b, stop);
      continue;
    }
    auto delay = std::chrono::duration_cast<Clock::Duration>(interval * jitter(rng));
    std::lock_guard l(mu_);
    timers_.push_back(RealClock::get().scheduleAfter(delay, [this, &b, stop] { start(b, stop); }));
  }
}

void RunningControllers::shutdownAll() {
  std::vector<Clock::TimerId> timers;
  {
    std::lock_guard l(mu_);
    timers.swap(timers_);
    stopping_ = true;
  }
  for (auto id : timers) RealClock::get().cancel(id);
  std::vector<Built*> order;
  {
    std::lock_guard l(mu_);
    order = started_;
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    (*it)->controller->shutdown();
    KLOG_V(1, "\"Controller terminated\" controller=" + quote((*it)->name));
  }
  built_.clear();
}

std::vector<std::string> RunningControllers::runningNames() {
  std::lock_guard l(mu_);
  std::vector<std::string> names;
  for (auto* b : started_) names.push_back(b->name);
  return names;
}

void RunningControllers::start(Built& b, std::stop_token stop) {
  {
    std::lock_guard l(mu_);
    if (stopping_ || stop.stop_requested()) return;
    started_.push_back(&b);
  }
  KLOG_V(1, "\"Controller starting...\" controller=" + quote(b.name));
  b.controller->run(stop);
  if (onStart_) onStart_(b.name);
}

void shutdownWithin(controllers::ControllerContext& ctx, RunningControllers& running, std::chrono::nanoseconds timeout) {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::thread t([&] {
    ctx.informerFactory->shutdown();
    running.shutdownAll();
    std::lock_guard l(m);
    done = true;
    cv.notify_all();
  });
  std::unique_lock l(m);
  auto finished = [&] { return done; };
  if (timeout.count() == 0) cv.wait(l, finished);
  if (!cv.wait_for(l, timeout, finished)) {
    std::string names;
    for (const auto& n : running.runningNames()) names += (names.empty() ? "" : " ") + n;
    KLOG_INFO("\"Controller shutdown timeout reached\" timeout=" + quote(options::formatDuration(timeout)) +
              " runningControllers=[" + names + "]");
    KLOG_ERROR("\"command failed\" err=\"controller shutdown timeout reached\"");
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(1);
  }
  l.unlock();
  t.join();
  KLOG_INFO("\"All controllers terminated\"");
}


}  // namespace kcm::app
