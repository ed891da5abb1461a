#pragma once
// Discovery: which resources the apiserver serves, from aggregated discovery (apidiscovery.k8s.io/v2, two
// requests) with a fallback to the legacy per-group-version documents. As client-go, a group-version that cannot
// be described (marked "Stale" in aggregated discovery, or whose legacy document fails to load) is left out and
// reported as failed (ErrGroupDiscoveryFailed); the rest is still returned. Results are cached in memory until
// invalidate() (kcm resets its REST mapper every 30 s). Thread-safe.
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "client/rest_client.h"

namespace kcm::client {

struct APIResourceInfo {
  std::string group, version, resource, kind, singular;
  bool namespaced = false;
  bool preferred = false;  // served at its group's preferred version
  std::vector<std::string> verbs, shortNames, subresources;
  bool hasVerb(const std::string& v) const;
  std::string groupVersion() const { return group.empty() ? version : group + "/" + version; }
};

// One discovery: the resources found and the group-versions that failed ("apps/v1" -> why; "v1" for the core
// group, as schema.GroupVersion prints it). Partial results with failures are normal (an aggregated apiserver
// that is down); callers decide what a failed group means to them.
struct DiscoveryResult {
  std::vector<APIResourceInfo> resources;
  std::map<std::string, std::string> failedGroupVersions;
  // ErrGroupDiscoveryFailed's text: "unable to retrieve the complete list of server APIs: <gv>: <why>, ..."
  // (sorted); OK when nothing failed. The code is Unavailable.
  Status groupDiscoveryError() const;
};

// The garbage collector's and quota controller's printDiff of two discovered resource sets:
// "added: [a b], removed: [c]".
std::string printResourceDiff(const std::set<std::string>& oldResources, const std::set<std::string>& newResources);

class DiscoveryClient {
 public:
  explicit DiscoveryClient(std::shared_ptr<RestClient> client) : client_(std::move(client)) {}

  // client-go ServerGroupsAndResources: every served resource of every group-version (no subresources), with the
  // failed group-versions. An error only when the group lists (/api, /apis) themselves cannot be read. Cached.
  Result<DiscoveryResult> serverGroupsAndResources();
  // client-go ServerPreferredResources: each group-resource once, at its group's preferred version when served
  // there, else at the first version (in discovery order) that serves it.
  Result<DiscoveryResult> serverPreferredResourcesWithFailures();
  // client-go ServerPreferredNamespacedResources: the namespaced ones of the above.
  Result<DiscoveryResult> serverPreferredNamespacedResources();

  // The resources alone, failed group-versions left out silently (REST mapping, callers that only look up).
  Result<std::vector<APIResourceInfo>> serverResources();
  Result<std::vector<APIResourceInfo>> serverPreferredResources();
  // REST mapping: the resource for a group/kind (version empty: the preferred version, else the first version
  // that serves the kind). Failed group-versions have no mapping.
  Result<APIResourceInfo> resourceFor(const std::string& group, const std::string& version, const std::string& kind);
  void invalidate();
  bool usedAggregatedDiscovery() const;

 private:
  Result<DiscoveryResult> fetch();
  Result<DiscoveryResult> fetchOnce();
  Result<DiscoveryResult> fetchAggregated(const std::string& path, bool& served);
  Result<DiscoveryResult> fetchLegacy();

  std::shared_ptr<RestClient> client_;
  mutable std::mutex mu_;
  std::optional<DiscoveryResult> cache_;
  bool aggregated_ = false;
};

}  // namespace kcm::client
