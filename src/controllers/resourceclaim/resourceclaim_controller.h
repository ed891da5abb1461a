#pragma once
// resourceclaim-controller (alias resource-claim-controller; upstream pkg/controller/resourceclaim at the pin):
//  - a pod's spec.resourceClaims entry naming a ResourceClaimTemplate gets a ResourceClaim from it (generateName
//    "<pod>-<claim>-", controlled by the pod, annotation resource.kubernetes.io/pod-claim-name), recorded in the
//    pod's status.resourceClaimStatuses by a server-side apply of the status subresource (field manager
//    ResourceClaimController); an orphan the controller created before is found by owner and annotation;
//  - a scheduled pod's allocated claim gets the pod in status.reservedFor;
//  - reservations of pods that are gone, replaced or done are removed; with none left, a claim carrying
//    resource.kubernetes.io/delete-protection is deallocated and loses that finalizer; a generated claim whose pod
//    is done or replaced is deleted.
// Keys: "pod:<ns>/<name>", "claim:<ns>/<name>"; queue "resource_claim", workers --concurrent-resourceclaim-syncs,
// events from "resource_claim". Metrics: dynamic_resource_allocation_resourceclaim_creates_total and the
// dynamic_resource_allocation_resource_claims gauge read from the cache at scrape time.
// PodGroups (GenericWorkload is locked off at the pin; DRAWorkloadResourceClaims is alpha) are not implemented: a
// pod in a PodGroup is refused as upstream refuses it with GenericWorkload off.
#include <list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/gen/core_v1.h"
#include "api/gen/resource_v1.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/resourceclaim/resourceclaim_util.h"
#include "informers/mutation_cache.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::resourceclaim {

using api::resource::v1::ResourceClaimTemplate;

// The feature gates the controller reads (controllerFeatures; GenericWorkload is locked off at the pin).
struct Features {
  bool adminAccess = true;      // DRAAdminAccess
  bool prioritizedList = true;  // DRAPrioritizedList
};

// uidCache: the UIDs of pods seen deleted (bounded LRU, 500 as upstream).
class UIDCache {
 public:
  explicit UIDCache(size_t max) : max_(max) {}
  void Add(const std::string& uid);
  bool Has(const std::string& uid);

 private:
  std::mutex mu_;
  size_t max_;
  std::list<std::string> order_;
  std::unordered_map<std::string, std::list<std::string>::iterator> pos_;
};

class Controller {
 public:
  Controller(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
             informers::SharedInformer<Pod>& pods, informers::SharedInformer<ResourceClaim>& claims,
             informers::SharedInformer<ResourceClaimTemplate>& templates, Features features,
             Clock& clock = RealClock::get());
  ~Controller();
  void run(int workers, std::stop_token stop);
  runtime::SyncResult syncHandler(const std::string& key);
  runtime::WorkQueue& queue() { return base_.queue(); }

  // The informer handlers (public for tests).
  void enqueuePod(const Pod& pod, bool deleted);
  void enqueueResourceClaim(const ResourceClaim* oldClaim, const ResourceClaim* newClaim);
  void enqueueResourceClaimTemplate(const ResourceClaimTemplate& tmpl);

 private:
  std::pair<bool, std::string> podNeedsWork(const Pod& pod);
  runtime::SyncResult syncPod(const std::string& ns, const std::string& name);
  runtime::SyncResult syncClaim(const std::string& ns, const std::string& name);
  Status handleClaim(const Pod& pod, const PodResourceClaim& podClaim, std::map<std::string, std::string>& newClaims);
  Result<bool> claimExists(const Pod& pod, const std::string& claimName, bool mustCheckOwner);
  std::shared_ptr<const ResourceClaim> findPodResourceClaim(const Pod& pod, const PodResourceClaim& podClaim);
  Status reserveFor(const ResourceClaimConsumerReference& consumer, const ResourceClaim& claim);

  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::EventRecorder> recorder_;
  informers::SharedInformer<Pod>& pods_;
  informers::SharedInformer<ResourceClaim>& claims_;
  informers::SharedInformer<ResourceClaimTemplate>& templates_;
  Features features_;
  informers::MutationCache<ResourceClaim> claimCache_;
  UIDCache deletedObjects_{500};
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::resourceclaim
