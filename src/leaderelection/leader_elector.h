#pragma once
// Leader election on a coordination.k8s.io/v1 Lease with client-go's semantics (tools/leaderelection):
//  - acquire: create the Lease, or take it over once the holder's record has not changed for leaseDuration as
//    measured by this process's own monotonic clock (never by comparing the other host's timestamps);
//  - renew every retryPeriod; failing to renew within renewDeadline means the lease is lost;
//  - leaseTransitions is incremented on every change of holder; acquireTime/renewTime are MicroTime;
//  - callbacks: onStartedLeading (on its own thread, with a stop token that fires when leadership ends),
//    onStoppedLeading, onNewLeader.
// Thread-safe; run() blocks until leadership is lost or stop.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>

#include "api/support/types.h"
#include "base/clock.h"
#include "api/gen/meta_v1.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "client/write_fence.h"

namespace kcm::leaderelection {

struct Config {
  std::string lockNamespace = "kube-system";
  std::string lockName = "kube-controller-manager";
  std::string identity;  // hostname_<uuid>
  Clock::Duration leaseDuration = std::chrono::seconds(15);
  Clock::Duration renewDeadline = std::chrono::seconds(10);
  Clock::Duration retryPeriod = std::chrono::seconds(2);
  // client-go's ReleaseOnCancel: on stop, wait for onStartedLeading to return, then hand the Lease back (empty
  // holder, 1 s duration) so a standby takes over at once instead of after leaseDuration.
  bool releaseOnCancel = false;
  std::function<void(std::stop_token)> onStartedLeading;
  std::function<void()> onStoppedLeading;
  std::function<void(const std::string& identity)> onNewLeader;
  // client-go's LeaseLock.RecordEvent: a Normal "LeaderElection" event on the Lease, "<identity> became leader"
  // once acquired and "<identity> stopped leading" when leading ends. Empty: no events.
  std::function<void(const client::ObjectReference& lease, const std::string& message)> recordEvent;
  // The controllers' write fence (client/write_fence.h), beyond client-go: opened until the start of each
  // successful acquire or renew plus renewDeadline, closed when leading ends. Null: none.
  std::shared_ptr<client::WriteFence> fence;
};

class LeaderElector {
 public:
  LeaderElector(std::shared_ptr<client::RestClient> client, Config config, Clock& clock = RealClock::get());
  // Returns when leadership was held and then lost, or on stop; calls onStoppedLeading in both cases (also when
  // the lease was never acquired, as client-go). Never returns while leading.
  void run(std::stop_token stop);
  bool isLeader() const { return leader_.load(); }
  // For the leaderElection health check: false when leading but the last renewal is older than
  // leaseDuration + tolerance (client-go's HealthzAdaptor with a 20 s timeout).
  bool healthy(Clock::Duration tolerance = std::chrono::seconds(20)) const;
  std::string observedHolder() const;

 private:
  // One attempt to acquire or renew. True when we hold the lease afterwards.
  bool tryAcquireOrRenew();
  // After our own successful write of the Lease: we are the observed holder as of now. Returns true.
  // `started`: when the attempt began (before its reads), the moment the write fence is extended from.
  bool recordOwnWrite(const ::kcm::api::MicroTime& now, const ::kcm::api::meta::v1::ObjectMeta& written,
                      Clock::TimePoint started);
  // The LeaderElection event about the Lease as last read or written.
  void recordEvent(const std::string& what);
  // client-go's Lock.Describe(): "namespace/name".
  std::string desc() const { return cfg_.lockNamespace + "/" + cfg_.lockName; }
  // Gives the Lease up if we still hold it (releaseOnCancel).
  void release();

  std::shared_ptr<client::RestClient> client_;
  Config cfg_;
  Clock& clock_;
  std::atomic<bool> leader_{false};
  mutable std::mutex mu_;
  std::string observedHolder_, observedRenewTime_;
  ::kcm::api::meta::v1::ObjectMeta leaseMeta_;  // of the Lease as last read or written (the events' subject)
  Clock::TimePoint observedTime_{};
  Clock::TimePoint lastRenew_{};
};

// "<hostname>_<random uuid>" as kube-controller-manager builds its identity.
std::string defaultIdentity();

}  // namespace kcm::leaderelection
