#pragma once
// resourcequota-controller (upstream pkg/controller/resourcequota/resource_quota_controller.go): keeps each
// ResourceQuota's status.hard equal to spec.hard and status.used equal to what the namespace uses of every hard
// resource an evaluator can compute (the apiserver's quota admission relies on it). Two queues as upstream:
// resourcequota_priority for quotas whose status lacks a hard limit or a computable usage,
// resourcequota_primary for the rest; both have --concurrent-resource-quota-syncs workers. Quotas are
// recalculated when their spec.hard changes, when the QuotaMonitor reports a replenishment (deletes, terminal
// pods, ...), and all of them every --resource-quota-sync-period. Creations need no event: admission already
// counted them. A discovery sync (at once, then every 30 s) gives new resources (CRDs) monitors; while new
// monitors fill their caches, quota syncs wait (upstream holds its worker lock meanwhile).
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>

#include "api/gen/core_v1.h"
#include "base/executor.h"
#include "client/discovery.h"
#include "client/rest_client.h"
#include "controllers/resourcequota/resource_quota_monitor.h"
#include "informers/factory.h"
#include "quota/evaluator.h"
#include "runtime/controller.h"

namespace kcm::controllers::resourcequota {

class ResourceQuotaController {
 public:
  struct Options {
    Clock::Duration resyncPeriod = std::chrono::minutes(5);  // --resource-quota-sync-period; 0 disables
    Clock::Duration discoveryPeriod = std::chrono::seconds(30);
  };
  // discovery null: no monitors and no generic evaluators (unit tests with a fixed registry).
  ResourceQuotaController(std::shared_ptr<client::RestClient> client, informers::SharedInformerFactory& factory,
                          std::shared_ptr<client::DiscoveryClient> discovery, std::shared_ptr<quota::Registry> registry,
                          Options opts, Clock& clock = RealClock::get());
  ~ResourceQuotaController();

  // upstream NewController's initial discovery and monitor sync. An error only when discovery failed entirely.
  Status init();
  void run(int workers, std::stop_token stop);

  runtime::SyncResult syncResourceQuotaFromKey(const std::string& key);
  Status syncResourceQuota(const api::core::v1::ResourceQuota& rq);
  void replenishQuota(const std::string& groupResource, const std::string& ns);
  // One pass of upstream's Sync.
  void resyncMonitors();
  void enqueueAll();

 private:
  friend class ResourceQuotaControllerTestPeer;
  void addQuota(const api::core::v1::ResourceQuota& rq);
  // The namespaced resources quota can count; `partial`: the group discovery error of an answer missing groups.
  Result<std::vector<client::APIResourceInfo>> quotableResources(std::map<std::string, std::string>* failedGroups,
                                                                 Status* partial);
  bool monitorsReady();

  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<api::core::v1::ResourceQuota>& quotas_;
  informers::SharedInformerFactory& factory_;
  std::shared_ptr<client::DiscoveryClient> discovery_;
  std::shared_ptr<quota::Registry> registry_;
  Options opts_;
  Clock& clock_;

  std::mutex syncMu_;  // guards the four below (never held across I/O)
  std::set<std::string> oldResources_;
  std::optional<std::stop_token> running_;
  Clock::TimePoint pausedUntil_{};
  std::atomic<bool> paused_{false};  // new monitors are filling their caches: quota syncs wait

  runtime::ControllerBase primary_, priority_;
  std::unique_ptr<QuotaMonitor> monitor_;
  Periodic discoverySync_, fullResync_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::resourcequota
