#pragma once
// QuotaMonitor (upstream pkg/controller/resourcequota/resource_quota_monitor.go): one informer per quotable
// resource found by discovery, whose deletes (and the updates the update filter lets through) ask the quota
// controller to recalculate the quotas of that namespace ("replenishment"). Pods, services, persistentvolumeclaims,
// resourceclaims and resourcequotas use the shared typed informers their evaluators read; every other resource a
// metadata-only informer (shared with the garbage collector), and a generic object-count evaluator is registered
// for it the first time it is seen. Events go through the resource_quota_controller_resource_changes
// queue, as upstream's. Thread-safe.
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "client/discovery.h"
#include "informers/factory.h"
#include "quota/evaluator.h"
#include "runtime/controller.h"

namespace kcm::controllers::resourcequota {

// Called with (group-resource, namespace) when objects there changed in a way that may change usage.
using ReplenishmentFunc = std::function<void(const std::string& groupResource, const std::string& ns)>;

class QuotaMonitor {
 public:
  QuotaMonitor(informers::SharedInformerFactory& factory, std::set<std::string> ignoredResources,
               ReplenishmentFunc replenish, quota::Registry& registry, Clock& clock = RealClock::get());
  ~QuotaMonitor();

  // upstream SyncMonitors: monitors for exactly `resources` (less the ignored ones); new ones start with the
  // factory's next start(). Returns how many were added, kept and removed. `fromConstructor`: called with
  // upstream's constructor context, whose logger carries the controller's name (its lines get logger=...); the
  // periodic resync runs with Run's context, whose lines do not.
  struct Counts {
    int added = 0, kept = 0, removed = 0;
  };
  Counts syncMonitors(const std::vector<client::APIResourceInfo>& resources, bool fromConstructor = false);
  // upstream IsSynced: there is a monitor and all have synced. `fromConstructor` as for syncMonitors (upstream's
  // start-up cache wait closes over the constructor's context, the resync's wait uses Run's).
  bool isSynced(bool fromConstructor = false) const;
  // Starts the change queue; StartMonitors is the factory's start, done by the caller.
  void run(std::stop_token stop);

 private:
  struct Monitor;
  std::unique_ptr<Monitor> monitorFor(const client::APIResourceInfo& r, const std::string& loggerKv);
  runtime::SyncResult processResourceChange(const std::string& key);
  void enqueue(const std::string& groupResource, const std::string& ns);

  informers::SharedInformerFactory& factory_;
  std::set<std::string> ignored_;
  ReplenishmentFunc replenish_;
  quota::Registry& registry_;
  Clock& clock_;
  runtime::ControllerBase changes_;
  mutable std::mutex mu_;
  // By "group/version/resource". Destroyed first (the destructor clears it): no handler reaches changes_ after.
  std::map<std::string, std::unique_ptr<Monitor>> monitors_;
};

}  // namespace kcm::controllers::resourcequota
