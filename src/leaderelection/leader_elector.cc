#include "leaderelection/leader_elector.h"

#include "base/uuid.h"

#include "api/support/wall_time.h"

#include <unistd.h>

#include <cstdio>
#include <random>
#include <thread>

#include "api/gen/coordination_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "base/metrics.h"

namespace kcm::leaderelection {
using log::quote;

using api::coordination::v1::Lease;

std::string defaultIdentity() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return std::string(host) + "_" + newUUID();
}

LeaderElector::LeaderElector(std::shared_ptr<client::RestClient> client, Config config, Clock& clock)
    : client_(std::move(client)), cfg_(std::move(config)), clock_(clock) {}

std::string LeaderElector::observedHolder() const {
  std::lock_guard l(mu_);
  return observedHolder_;
}

bool LeaderElector::healthy(Clock::Duration tolerance) const {
  if (!leader_.load()) return true;
  std::lock_guard l(mu_);
  return clock_.now() - lastRenew_ <= cfg_.leaseDuration + tolerance;
}

bool LeaderElector::tryAcquireOrRenew() {
  const int32_t leaseSecs =
      static_cast<int32_t>(std::chrono::duration_cast<std::chrono::seconds>(cfg_.leaseDuration).count());
  const Clock::TimePoint started = clock_.now();
  auto now = api::microTimeNow(clock_);
  auto got = client::get<Lease>(*client_, cfg_.lockNamespace, cfg_.lockName);
  if (!got.ok()) {
    if (got.status().code() != StatusCode::kNotFound) {
      KLOG_ERROR("\"Error retrieving lease lock\" err=" + quote(got.status().message()) + " lock=" + quote(desc()));
      return false;
    }
    Lease lease;
    lease.metadata.name = cfg_.lockName;
    lease.metadata.namespace_ = cfg_.lockNamespace;
    lease.spec.holderIdentity = cfg_.identity;
    lease.spec.leaseDurationSeconds = leaseSecs;
    lease.spec.acquireTime = now;
    lease.spec.renewTime = now;
    lease.spec.leaseTransitions = 0;
    auto created = client::create(*client_, cfg_.lockNamespace, lease);
    if (!created.ok()) {
      KLOG_ERROR("\"Error initially creating lease lock\" err=" + quote(created.status().message()) +
                 " lock=" + quote(desc()));
      return false;
    }
    return recordOwnWrite(now, created->metadata, started);
  }
  Lease lease = std::move(got).value();
  {
    std::lock_guard l(mu_);
    leaseMeta_ = lease.metadata;
  }
  const std::string holder = lease.spec.holderIdentity.value_or("");
  const std::string renew = lease.spec.renewTime ? lease.spec.renewTime->rfc3339Micro() : "";
  {
    std::lock_guard l(mu_);
    if (holder != observedHolder_ || renew != observedRenewTime_) {
      // The record changed: that is the moment we measure its expiry from, on our own clock.
      if (holder != observedHolder_ && cfg_.onNewLeader && !holder.empty()) cfg_.onNewLeader(holder);
      observedHolder_ = holder;
      observedRenewTime_ = renew;
      observedTime_ = clock_.now();
    }
    int64_t duration = lease.spec.leaseDurationSeconds.value_or(leaseSecs);
    bool expired = clock_.now() > observedTime_ + std::chrono::seconds(duration);
    if (!holder.empty() && holder != cfg_.identity && !expired) return false;  // someone else holds it
  }
  if (holder != cfg_.identity) {
    lease.spec.leaseTransitions = lease.spec.leaseTransitions.value_or(0) + (holder.empty() ? 0 : 1);
    lease.spec.acquireTime = now;
  }
  lease.spec.holderIdentity = cfg_.identity;
  lease.spec.leaseDurationSeconds = leaseSecs;
  lease.spec.renewTime = now;
  auto updated = client::update(*client_, lease);  // resourceVersion precondition: a racing writer gets Conflict
  if (!updated.ok()) {
    KLOG_ERROR("\"Failed to update lease\" err=" + quote(updated.status().message()) + " lock=" + quote(desc()));
    return false;
  }
  return recordOwnWrite(now, updated->metadata, started);
}

bool LeaderElector::recordOwnWrite(const api::MicroTime& now, const api::meta::v1::ObjectMeta& written,
                                   Clock::TimePoint started) {
  if (cfg_.fence) cfg_.fence->openUntil(started + cfg_.renewDeadline);
  std::lock_guard l(mu_);
  leaseMeta_ = written;
  observedHolder_ = cfg_.identity;
  observedRenewTime_ = now.rfc3339Micro();
  observedTime_ = lastRenew_ = clock_.now();
  return true;
}

void LeaderElector::run(std::stop_token stop) {
  auto& status = metrics::Registry::global().gauge(
      "leader_election_master_status",
      "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. "
      "'name' is the string used to identify the lease. Please make sure to group by name.",
      {{"name", cfg_.lockName}});
  status.set(0);
  KLOG_INFO("\"Attempting to acquire leader lease...\" lock=" + quote(desc()));
  std::mt19937_64 rng(std::random_device{}());
  while (!stop.stop_requested()) {
    if (tryAcquireOrRenew()) break;
    // client-go waits retryPeriod x [1, 2.2); we jitter less (x [1, 1.2)) and also wake exactly when the
    // observed record expires, so a standby takes over about leaseDuration after the leader's last renewal
    // instead of up to two retry periods later.
    auto wait = std::chrono::duration_cast<Clock::Duration>(cfg_.retryPeriod * (1.0 + 0.2 * (rng() % 1000) / 1000.0));
    {
      std::lock_guard l(mu_);
      if (!observedHolder_.empty() && observedHolder_ != cfg_.identity) {
        auto untilExpiry = observedTime_ + cfg_.leaseDuration + std::chrono::milliseconds(50) - clock_.now();
        if (untilExpiry > Clock::Duration::zero() && untilExpiry < wait) wait = untilExpiry;
      }
    }
    if (!clock_.sleepFor(wait, stop)) break;
  }
  if (stop.stop_requested()) {
    // client-go's Run calls OnStoppedLeading on every return, also when the lease was never acquired.
    if (cfg_.onStoppedLeading) cfg_.onStoppedLeading();
    return;
  }
  recordEvent("became leader");
  KLOG_INFO("\"Successfully acquired lease\" lock=" + quote(desc()));
  leader_ = true;
  status.set(1);
  std::stop_source leading;
  std::jthread work;
  // The callback and its token by value: a lost leader detaches this thread below and may be destroyed first.
  if (cfg_.onStartedLeading)
    work = std::jthread([fn = cfg_.onStartedLeading, token = leading.get_token()] { fn(token); });
  // Renew loop: give up when no renewal succeeded within renewDeadline.
  while (!stop.stop_requested()) {
    if (!clock_.sleepFor(cfg_.retryPeriod, stop)) break;
    auto deadline = clock_.now() + cfg_.renewDeadline;
    bool renewed = false;
    while (!stop.stop_requested() && clock_.now() < deadline) {
      if ((renewed = tryAcquireOrRenew())) break;
      // Another holder's valid record (we were frozen past the lease, or a clock ran wild): the lease is lost
      // now, retrying until the deadline would only keep the controllers running (client-go retries).
      if (const std::string holder = observedHolder(); !holder.empty() && holder != cfg_.identity) break;
      clock_.sleepFor(std::chrono::milliseconds(500), stop);
    }
    if (!renewed) break;
  }
  if (cfg_.fence) cfg_.fence->close();
  recordEvent("stopped leading");
  leader_ = false;
  status.set(0);
  if (!stop.stop_requested())
    KLOG_INFO("\"Failed to renew lease\" lock=" + quote(desc()) + " err=" +
              quote("timed out waiting for the condition"));
  leading.request_stop();
  if (cfg_.releaseOnCancel && stop.stop_requested()) {
    if (work.joinable()) work.join();  // the controllers stop (within their shutdown timeout) before we let go
    release();
  }
  if (cfg_.onStoppedLeading) cfg_.onStoppedLeading();
  if (work.joinable()) work.detach();  // a lost leader exits the process; do not wait for controllers
}

void LeaderElector::recordEvent(const std::string& what) {
  if (!cfg_.recordEvent) return;
  client::ObjectReference ref;
  ref.kind = "Lease";
  ref.apiVersion = "coordination.k8s.io/v1";
  {
    std::lock_guard l(mu_);
    ref.namespace_ = leaseMeta_.namespace_;
    ref.name = leaseMeta_.name;
    ref.uid = leaseMeta_.uid;
    ref.resourceVersion = leaseMeta_.resourceVersion;
  }
  cfg_.recordEvent(ref, cfg_.identity + " " + what);
}

void LeaderElector::release() {
  auto got = client::get<Lease>(*client_, cfg_.lockNamespace, cfg_.lockName);
  if (!got.ok() || got->spec.holderIdentity.value_or("") != cfg_.identity) return;
  Lease lease = std::move(got).value();
  auto now = api::microTimeNow(clock_);
  lease.spec.holderIdentity = "";
  lease.spec.leaseDurationSeconds = 1;
  lease.spec.acquireTime = now;
  lease.spec.renewTime = now;
  if (auto updated = client::update(*client_, lease); !updated.ok())
    KLOG_ERROR("\"Failed to release lease\" err=" + quote(updated.status().message()) + " lock=" + quote(desc()));
}

}  // namespace kcm::leaderelection
