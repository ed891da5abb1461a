#pragma once
// What the manager owns once it leads (upstream's RunControllers and the per-controller health checks): the built
// controllers, started concurrently with jitter and stopped in reverse start order, what /healthz/<controller>
// reads, and the shutdown bounded by --controller-shutdown-timeout.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "controllers/context.h"
#include "controllers/controller.h"
#include "informers/factory.h"

namespace kcm::app {

// What /healthz/<controller> reads: the informers each controller's init asked for. Shared with the checks, which
// the server may run after the context is gone (alive turns false first, under the lock).
struct ControllerHealth {
  std::mutex mu;
  bool alive = true;
  std::optional<std::chrono::steady_clock::time_point> informersStartedAt;
  std::map<std::string, std::vector<informers::InformerBase*>> informersOf;
};

// Beyond upstream's ping checks: a controller is unhealthy while an informer it needs has not synced, once the
// informers have had kInformerSyncGrace to do so; the reason names the informer and its last list error.
constexpr std::chrono::seconds kInformerSyncGrace{10};

// Ok, or why the controller is unhealthy (an informer it needs has not synced kInformerSyncGrace after start).
Status controllerHealth(ControllerHealth& h, const std::string& name);

// The built controllers, owned by the manager: started concurrently (upstream's RunControllers), each after
// wait.Jitter(--controller-start-interval, 1.0) on the shared timer, and stopped in reverse start order.
class RunningControllers {
 public:
  void add(std::string name, std::unique_ptr<controllers::Controller> c);
  void startAll(std::chrono::nanoseconds interval, std::stop_token stop);
  // Called with each controller's name once it has started; set before startAll.
  void setOnStart(std::function<void(const std::string&)> f) { onStart_ = std::move(f); }
  // Pending starts are cancelled; started controllers shut down, the last started first.
  void shutdownAll();
  std::vector<std::string> runningNames();

 private:
  struct Built {
    std::string name;
    std::unique_ptr<controllers::Controller> controller;
  };
  void start(Built& b, std::stop_token stop);

  std::vector<Built> built_;  // filled before startAll, not resized afterwards
  std::mutex mu_;
  std::vector<Clock::TimerId> timers_;
  std::vector<Built*> started_;
  bool stopping_ = false;
  std::function<void(const std::string&)> onStart_;
};

// Stops what OnStartedLeading started: the informers (their handlers drained), then the controllers in reverse
// start order. Upstream waits at most --controller-shutdown-timeout for its controllers (zero: for ever); past
// it the command fails ("controller shutdown timeout reached", exit 1) without waiting further.
void shutdownWithin(controllers::ControllerContext& ctx, RunningControllers& running, std::chrono::nanoseconds timeout);

}  // namespace kcm::app
