#pragma once
// garbage-collector-controller (upstream pkg/controller/garbagecollector/garbagecollector.go, operations.go):
// attemptToDelete workers look at an object against its owners, read live: all owners gone (or of another
// namespace) -> delete it (background, or as its own finalizers ask); some owner alive -> remove only the
// references to gone owners or to owners deleting in the foreground; only owners waiting for dependents -> delete
// it in the foreground (unblocking a dependency cycle first). Objects deleting in the foreground lose the
// foregroundDeletion finalizer once no dependent blocks them. attemptToOrphan workers strip the owner from every
// dependent, then remove the orphan finalizer. As upstream core.go runs GarbageCollector.Run and Sync together,
// run() starts both: the discovery sync (at once, then every 30 s) gives new resources (CRDs) monitors and stops
// those of resources gone from discovery; the workers (--concurrent-gc-syncs each) start once every monitor has
// synced, or after 30 s regardless, so one resource that cannot be listed does not stop garbage collection.
// Nothing here is fatal: discovery errors are logged and retried by the next sync.
#include <atomic>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "client/discovery.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/garbagecollector/graph_builder.h"
#include "base/executor.h"
#include "informers/factory.h"
#include "runtime/controller.h"

namespace kcm::controllers::gc {

class GarbageCollector {
 public:
  GarbageCollector(std::shared_ptr<client::RestClient> metadataClient, std::shared_ptr<client::DiscoveryClient> discovery,
                   informers::SharedInformerFactory& factory, std::shared_ptr<client::EventRecorder> recorder,
                   Clock& clock = RealClock::get());
  ~GarbageCollector();
  // One pass of upstream's Sync: fresh discovery, the deletable resources, and (when they changed) monitors for
  // exactly those; a group that failed discovery keeps the monitors that had synced. Monitors added before run()
  // start with the factory's next start(), later ones at once. Returns the discovery error, if any (logged; the
  // next pass retries).
  Status resyncMonitors();
  // Returns at once (see the file comment). Call once.
  void run(int workers, std::stop_token stop);
  std::string graphDOT() const { return graph_->dumpDOT(); }
  // The dependency graph builder's monitors (upstream GetDependencyGraphBuilder().GetMonitor).
  const GraphBuilder& graphBuilder() const { return *graph_; }

 private:
  friend class GarbageCollectorTestPeer;  // unit tests run the workers' steps one at a time
  class AttemptToDeleteLimiter;
  // upstream resyncMonitors: syncMonitors, then startMonitors once running.
  void resyncMonitors(const std::vector<client::APIResourceInfo>& deletable);
  // The workers' start condition: every monitor synced, or the initial wait is over (logged once).
  bool initialSyncEnded(Clock::TimePoint deadline);
  runtime::SyncResult attemptToDeleteWorker(const std::string& key);
  runtime::SyncResult attemptToOrphanWorker(const std::string& uid);
  Status attemptToDeleteItem(const Node& item);
  Status processDeletingDependentsItem(const Node& item);
  struct Classified {
    std::vector<api::meta::v1::OwnerReference> solid, dangling, waiting;
  };
  Result<Classified> classifyReferences(const Node& item, const std::vector<api::meta::v1::OwnerReference>& refs);
  // dangling, and the live owner when not
  Result<std::pair<bool, std::optional<api::meta::v1::PartialObjectMetadata>>> isDangling(
      const api::meta::v1::OwnerReference& ref, const Node& item);
  Result<std::pair<client::GroupVersionResource, bool>> apiResource(const std::string& apiVersion,
                                                                    const std::string& kind);
  Result<api::meta::v1::PartialObjectMetadata> getObject(const ObjectReference& r);
  Status deleteObject(const ObjectReference& r, const std::string& resourceVersion,
                      const std::vector<api::meta::v1::OwnerReference>& ownersAtRV, const std::string& policy);
  // Rewrites the object's ownerReferences with `edit` (a JSON merge patch guarded by its resourceVersion).
  Status patchOwnerRefs(const ObjectReference& r,
                        const std::function<bool(std::vector<api::meta::v1::OwnerReference>&)>& edit);
  Status removeFinalizer(const ObjectReference& r, const char* finalizer);
  Status mergePatch(const client::GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                    const std::string& body);

  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::DiscoveryClient> discovery_;
  informers::SharedInformerFactory& factory_;
  std::shared_ptr<client::EventRecorder> recorder_;
  Clock& clock_;  // the queues' delays and the discovery re-sync period
  AbsentOwnerCache absent_{500};
  AttemptToDeleteLimiter* deleteLimiter_ = nullptr;  // owned by deleteBase_'s queue
  runtime::ControllerBase deleteBase_;
  runtime::ControllerBase orphanBase_;
  std::unique_ptr<GraphBuilder> graph_;
  std::mutex syncMu_;  // one discovery sync at a time; guards the four below
  std::set<std::string> oldResources_;  // upstream Sync's oldResources: the GVRs of the last resync
  std::optional<std::stop_token> running_;  // set by run(): new monitors start at once
  bool awaitingSync_ = false;  // resynced at resyncedAt_; a pass a period later reports whether monitors synced
  Clock::TimePoint resyncedAt_{};
  std::atomic<bool> initialSyncEnded_{false};
  Periodic resync_;  // last: stopped first
};

// Resources the collector watches: those that support list, watch and delete, minus upstream's ignored ones
// (core and events.k8s.io events).
std::vector<client::APIResourceInfo> deletableResources(const std::vector<client::APIResourceInfo>& all);

}  // namespace kcm::controllers::gc
