#pragma once
// Empties a terminating namespace (upstream pkg/controller/namespace/deletion): marks it Terminating, deletes
// every namespaced resource found by discovery that supports delete (pods first; deletecollection, else one by
// one, background propagation), reports what is left in status.conditions (NamespaceDeletionDiscoveryFailure,
// NamespaceDeletionGroupVersionParsingFailure, NamespaceDeletionContentFailure, NamespaceContentRemaining,
// NamespaceFinalizersRemaining), and once nothing is left (and no discovery or deletion error remains) removes its
// finalizer token through /finalize.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "base/clock.h"
#include "client/discovery.h"
#include "client/rest_client.h"
#include "client/typed_client.h"

namespace kcm::controllers {

class NamespacedResourcesDeleter {
 public:
  // The namespaced resources to empty, and the group-versions discovery could not read (upstream's
  // discoverResourcesFn: ServerPreferredNamespacedResources, partial results with ErrGroupDiscoveryFailed).
  using DiscoverFunc = std::function<Result<client::DiscoveryResult>()>;
  struct Outcome {
    Status status;
    int64_t remainingEstimateSeconds = 0;  // > 0: content is still going away; look again later
  };

  // `clock` stamps condition transitions and measures how long ago the namespace was deleted.
  NamespacedResourcesDeleter(std::shared_ptr<client::RestClient> client, DiscoverFunc discover,
                             std::string finalizerToken = "kubernetes", Clock& clock = RealClock::get());
  // Learns which resources cannot list or deletecollection; an error when discovery yields nothing at all
  // (upstream exits then).
  Status initOpCache();
  // Empties the namespace and, once nothing is left and discovery was complete, finalizes it. A failed group is
  // reported (NamespaceDeletionDiscoveryFailure) and returned as the error, after the other groups were emptied.
  Outcome deleteNamespace(const std::string& name);

 private:
  struct GVRDeletion {
    int64_t finalizerEstimateSeconds = 0;
    int numRemaining = 0;
    std::map<std::string, int> finalizersToNumRemaining;
  };
  Result<api::core::v1::Namespace> retryOnConflict(
      api::core::v1::Namespace ns,
      const std::function<Result<api::core::v1::Namespace>(const api::core::v1::Namespace&)>& fn);
  Result<api::core::v1::Namespace> updateNamespaceStatus(const api::core::v1::Namespace& ns);
  Result<api::core::v1::Namespace> finalizeNamespace(const api::core::v1::Namespace& ns);
  Outcome deleteAllContent(api::core::v1::Namespace& ns);
  std::pair<GVRDeletion, Status> deleteAllContentForGVR(const client::GroupVersionResource& gvr, const std::string& ns,
                                                        api::Time deletedAt);
  Result<bool> deleteCollection(const client::GroupVersionResource& gvr, const std::string& ns);
  Result<std::optional<api::meta::v1::PartialObjectMetadataList>> listCollection(
      const client::GroupVersionResource& gvr, const std::string& ns);
  Status deleteEachItem(const client::GroupVersionResource& gvr, const std::string& ns);
  Result<int64_t> estimateGracefulTermination(const client::GroupVersionResource& gvr, const std::string& ns,
                                              api::Time deletedAt);
  bool supported(const std::string& op, const client::GroupVersionResource& gvr);
  void setNotSupported(const std::string& op, const client::GroupVersionResource& gvr);

  std::shared_ptr<client::RestClient> client_;
  DiscoverFunc discover_;
  std::string finalizerToken_;
  Clock& clock_;
  std::mutex opMu_;
  std::set<std::string> notSupported_;  // "<op> <gvr>"
};

// upstream core.go's discoverResourcesFn: fresh discovery on every call (a namespace may hold resources of a CRD
// created a moment ago), serialized on `discovery`.
NamespacedResourcesDeleter::DiscoverFunc discoverPreferredNamespacedResources(
    std::shared_ptr<client::DiscoveryClient> discovery);

}  // namespace kcm::controllers
