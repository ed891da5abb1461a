#pragma once
// garbage-collector-controller (upstream pkg/controller/garbagecollector/garbagecollector.go, operations.go):
// attemptToDelete workers look at an object against its owners, read live: all owners gone (or of another
// namespace) -> delete it (background, or as its own finalizers ask); some owner alive -> remove only the
// references to gone owners or to owners deleting in the foreground; only owners waiting for dependents -> delete
// it in the foreground (unblocking a dependency cycle first). Objects deleting in the foreground lose the
// foregroundDeletion finalizer once no dependent blocks them. attemptToOrphan workers strip the owner from every
// dependent, then remove the orphan finalizer. Discovery is re-synced every 30 s; new resources (CRDs) get
// monitors. Workers: --concurrent-gc-syncs each.
#include <memory>
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
  // Monitors for the deletable resources discovery knows now (an error when discovery fails).
  Status resyncMonitors();
  void run(int workers, std::stop_token stop);
  std::string graphDOT() const { return graph_->dumpDOT(); }

 private:
  friend class GarbageCollectorTestPeer;  // unit tests run the workers' steps one at a time
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
  runtime::ControllerBase deleteBase_;
  runtime::ControllerBase orphanBase_;
  std::unique_ptr<GraphBuilder> graph_;
  Periodic resync_;  // last: stopped first
};

// Resources the collector watches: those that support list, watch and delete, minus upstream's ignored ones
// (core and events.k8s.io events).
std::vector<client::APIResourceInfo> deletableResources(const std::vector<client::APIResourceInfo>& all);

}  // namespace kcm::controllers::gc
