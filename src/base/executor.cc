#include "base/executor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "base/log.h"

namespace kcm {

namespace {
void runGuarded(const Executor::Task& t) {
  try {
    t();
  } catch (const std::exception& e) {
    KLOG_ERROR("\"Observed a panic\" panic=" + log::quote(e.what()));
  } catch (...) {
    KLOG_ERROR("\"Observed a panic\" panic=\"unknown exception\"");
  }
}
}  // namespace

Executor::Executor(int core, int max, std::chrono::milliseconds idleTimeout)
    : core_(std::max(1, core)), max_(std::max(core_, max)), idleTimeout_(idleTimeout) {
  std::lock_guard l(mu_);
  for (int i = 0; i < core_; ++i) spawnLocked(true);
}

Executor::~Executor() {
  std::vector<std::thread> ts;
  uint64_t timer = 0;
  {
    std::lock_guard l(mu_);
    stopping_ = true;
    for (Idle* w : idleCore_) w->cv.notify_one();
    for (Idle* w : idleExtra_) w->cv.notify_one();
    ts.swap(threads_);
    timer = checkTimer_;
  }
  // A check still pending would run on a destroyed executor: cancel it (outside mu_, which it takes; once
  // cancel returns it is not running, and seeing stopping_ it schedules no other).
  if (timer) RealClock::get().cancel(timer);
  for (auto& t : ts)
    if (t.joinable()) t.join();
}

Executor& Executor::global() {
  static Executor* ex = [] {
    int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    int core = std::clamp(2 * cores, 2, 4);
    if (const char* e = std::getenv("KCM_EXECUTOR_THREADS"); e && std::atoi(e) > 0) core = std::atoi(e);
    return new Executor(core, 64);  // never destroyed: tasks may run until _exit
  }();
  return *ex;
}

void Executor::spawnLocked(bool core) {
  ++alive_;
  peak_.store(std::max(peak_.load(), alive_));
  threads_.emplace_back([this, core] { worker(core); });
}

void Executor::post(Task t) {
  {
    std::lock_guard l(mu_);
    q_.push_back(std::move(t));
    if (auto& stack = idleCore_.empty() ? idleExtra_ : idleCore_; !stack.empty()) {
      Idle* w = stack.back();
      stack.pop_back();
      w->woken = true;
      w->cv.notify_one();
    } else if (alive_ < max_ && !checkScheduled_ && !stopping_) {
      checkScheduled_ = true;
      // Scheduled under mu_ so the destructor always sees the id (the timer takes mu_ only when it fires).
      checkTimer_ = RealClock::get().scheduleAfter(std::chrono::milliseconds(2), [this] { checkStalled(); });
    }
  }
}

// Work is queued and no thread was free when it was posted: if nothing was taken from the queue for 2 ms, every
// thread is blocked; add one, and look again in 2 ms while work keeps waiting.
void Executor::checkStalled() {
  {
    std::lock_guard l(mu_);
    checkScheduled_ = false;
    checkTimer_ = 0;
    if (q_.empty() || stopping_) return;
    auto now = std::chrono::steady_clock::now();
    if (idleCore_.empty() && idleExtra_.empty() && alive_ < max_ && now - lastTake_ >= std::chrono::milliseconds(2)) spawnLocked(false);
    checkScheduled_ = alive_ < max_;
    if (checkScheduled_)
      checkTimer_ = RealClock::get().scheduleAfter(std::chrono::milliseconds(2), [this] { checkStalled(); });
  }
}

int Executor::threads() const {
  std::lock_guard l(mu_);
  return alive_;
}

void Executor::worker(bool core) {
  std::unique_lock l(mu_);
  while (true) {
    if (!q_.empty()) {
      Task t = std::move(q_.front());
      q_.pop_front();
      lastTake_ = std::chrono::steady_clock::now();
      l.unlock();
      runGuarded(t);
      t = nullptr;  // release captures outside the lock
      l.lock();
      continue;
    }
    if (stopping_) break;
    Idle me;
    auto& stack = core ? idleCore_ : idleExtra_;
    stack.push_back(&me);
    if (core) {
      me.cv.wait(l, [&] { return me.woken || stopping_; });
    } else if (!me.cv.wait_for(l, idleTimeout_, [&] { return me.woken || stopping_; })) {
      stack.erase(std::find(stack.begin(), stack.end(), &me));  // cold: leave
      break;
    }
    if (!me.woken) stack.erase(std::find(stack.begin(), stack.end(), &me));  // stopping
  }
  --alive_;
  if (stopping_) return;  // the destructor joins it
  // An extra thread leaving while the executor lives detaches itself: joining it lazily (at the next spawn) left
  // finished threads unjoined at exit, thread leaks to TSan. After the unlock below it touches nothing of ours.
  auto self = std::find_if(threads_.begin(), threads_.end(),
                           [id = std::this_thread::get_id()](const std::thread& t) { return t.get_id() == id; });
  if (self != threads_.end()) {
    self->detach();
    threads_.erase(self);
  }
}

// ---- Strand ----

struct Strand::State {
  std::mutex mu;
  std::condition_variable idleCv;
  std::deque<Executor::Task> q;
  bool scheduled = false;  // a drain task is posted or running
  bool running = false;
  std::thread::id runner;
};

Strand::Strand(Executor& ex) : st_(std::make_shared<State>()), ex_(ex) {}

Strand::~Strand() { drain(); }

namespace {
// Runs a bounded batch of the strand's tasks, then re-posts itself if more are left, so one busy strand cannot
// hold a pool thread for long.
void runStrand(const std::shared_ptr<Strand::State>& st, Executor& ex);
}  // namespace

void Strand::post(Executor::Task t) {
  bool schedule = false;
  {
    std::lock_guard l(st_->mu);
    st_->q.push_back(std::move(t));
    if (!st_->scheduled) st_->scheduled = schedule = true;
  }
  if (schedule) runStrand(st_, ex_);
}

namespace {
void runStrand(const std::shared_ptr<Strand::State>& state, Executor& ex) {
  ex.post([st = state, &ex] {
    for (int i = 0; i < 64; ++i) {
      Executor::Task task;
      {
        std::lock_guard l(st->mu);
        if (st->q.empty()) {
          st->scheduled = false;
          return;
        }
        task = std::move(st->q.front());
        st->q.pop_front();
        st->running = true;
        st->runner = std::this_thread::get_id();
      }
      runGuarded(task);
      task = nullptr;
      std::lock_guard l(st->mu);
      st->running = false;
      st->idleCv.notify_all();
    }
    runStrand(st, ex);  // still `scheduled`: continue as a fresh task
  });
}
}  // namespace

void Strand::drain() {
  std::unique_lock l(st_->mu);
  st_->q.clear();
  if (st_->running && st_->runner == std::this_thread::get_id()) return;
  st_->idleCv.wait(l, [&] { return !st_->running; });
}

size_t Strand::pending() const {
  std::lock_guard l(st_->mu);
  return st_->q.size() + (st_->running ? 1 : 0);
}

// ---- parallelFor ----

void parallelFor(size_t n, size_t maxInFlight, const std::function<void(size_t)>& fn, Executor& ex) {
  if (n == 0) return;
  maxInFlight = std::max<size_t>(1, std::min(maxInFlight, n));
  struct Shared {
    std::atomic<size_t> next{0};
    std::mutex mu;
    std::condition_variable cv;
    size_t active = 0;  // helpers inside the loop
  };
  auto sh = std::make_shared<Shared>();
  auto loop = [sh, n, &fn] {
    for (size_t i; (i = sh->next.fetch_add(1)) < n;) fn(i);
  };
  for (size_t h = 1; h < maxInFlight; ++h) {
    ex.post([sh, n, loop] {
      {
        std::lock_guard l(sh->mu);
        if (sh->next.load() >= n) return;  // the caller finished before this helper started: fn may be gone
        ++sh->active;
      }
      loop();
      std::lock_guard l(sh->mu);
      if (--sh->active == 0) sh->cv.notify_all();
    });
  }
  loop();
  std::unique_lock l(sh->mu);
  sh->cv.wait(l, [&] { return sh->active == 0; });
}

// ---- Periodic ----

struct Periodic::State : std::enable_shared_from_this<Periodic::State> {
  Clock* clock = nullptr;
  Clock::Duration period{};
  std::function<void()> fn;
  std::function<bool()> ready;
  Executor* ex = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  bool stopped = false, running = false;
  Clock* timerClock = nullptr;
  Clock::TimerId timer = 0;
  std::unique_ptr<std::stop_callback<std::function<void()>>> onStop;

  void arm(Clock& c, Clock::Duration d) {  // under mu
    if (stopped) return;
    timerClock = &c;
    timer = c.scheduleAfter(d, [self = shared_from_this()] {
      {
        std::lock_guard l(self->mu);
        self->timer = 0;
        if (self->stopped) return;
        self->running = true;  // from now until the run ends: stop() waits
      }
      self->ex->post([self] { self->tick(); });
    });
  }
  void tick() {
    bool go = !ready || ready();
    if (go) fn();
    std::lock_guard l(mu);
    running = false;
    cv.notify_all();
    if (go) arm(*clock, period);
    else arm(RealClock::get(), std::chrono::milliseconds(100));
  }
  void stop() {
    Clock* c;
    Clock::TimerId t;
    {
      std::lock_guard l(mu);
      stopped = true;
      c = timerClock;
      t = timer;
      timer = 0;
    }
    if (t) c->cancel(t);
    std::unique_lock l(mu);
    cv.wait(l, [&] { return !running; });
  }
};

void Periodic::start(Clock& clock, Clock::Duration period, std::stop_token stop, std::function<void()> fn,
                     std::function<bool()> ready, Executor& ex) {
  this->stop();
  st_ = std::make_shared<State>();
  st_->clock = &clock;
  st_->period = period;
  st_->fn = std::move(fn);
  st_->ready = std::move(ready);
  st_->ex = &ex;
  {
    std::lock_guard l(st_->mu);
    st_->running = true;
  }
  ex.post([s = st_] { s->tick(); });  // the first run (or readiness check) at once
  st_->onStop = std::make_unique<std::stop_callback<std::function<void()>>>(
      stop, std::function<void()>([s = st_.get()] { s->stop(); }));
}

void Periodic::stop() {
  if (!st_) return;
  st_->onStop.reset();
  st_->stop();
}

}  // namespace kcm
