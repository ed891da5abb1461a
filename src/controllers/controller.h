#pragma once
// Controller: what the manager builds from a descriptor's init function, owns, starts (concurrently, each after
// its jittered --controller-start-interval, as upstream's RunControllers) and stops in reverse start order.
// Building registers the controller's informers and may talk to the apiserver (discovery, a CA file); run()
// only starts its loops on the shared executor and returns.
#include <functional>
#include <memory>
#include <stop_token>

namespace kcm::controllers {

class Controller {
 public:
  virtual ~Controller() = default;
  // Starts the loops; returns at once. They end when `stop` is requested.
  virtual void run(std::stop_token stop) = 0;
  // Ends the controller: once it returns, none of its work runs or will run.
  virtual void shutdown() = 0;
};

// Adapts one of our controller classes: `start` calls its run(workers, stop); shutdown() drops the manager's
// reference (the class's destructor stops and drains it; a debug page may hold a weak_ptr meanwhile).
template <class T>
class ControllerLoop final : public Controller {
 public:
  using StartFn = std::function<void(T&, std::stop_token)>;
  ControllerLoop(std::shared_ptr<T> impl, StartFn start) : impl_(std::move(impl)), start_(std::move(start)) {}
  void run(std::stop_token stop) override {
    if (impl_) start_(*impl_, stop);
  }
  void shutdown() override { impl_.reset(); }

 private:
  std::shared_ptr<T> impl_;
  StartFn start_;
};

template <class T>
std::unique_ptr<Controller> newControllerLoop(std::shared_ptr<T> impl, typename ControllerLoop<T>::StartFn start) {
  return std::make_unique<ControllerLoop<T>>(std::move(impl), std::move(start));
}

}  // namespace kcm::controllers
