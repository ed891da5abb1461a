#pragma once
// Discovery: which resources the apiserver serves, from aggregated discovery (apidiscovery.k8s.io/v2, two
// requests) with a fallback to the legacy per-group-version documents. Results are cached in memory until
// invalidate() (kcm resets its REST mapper every 30 s). Thread-safe.
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "client/rest_client.h"

namespace kcm::client {

struct APIResourceInfo {
  std::string group, version, resource, kind, singular;
  bool namespaced = false;
  bool preferred = false;  // the group's preferred version
  std::vector<std::string> verbs, shortNames, subresources;
  bool hasVerb(const std::string& v) const;
  std::string groupVersion() const { return group.empty() ? version : group + "/" + version; }
};

class DiscoveryClient {
 public:
  explicit DiscoveryClient(std::shared_ptr<RestClient> client) : client_(std::move(client)) {}

  // Every served resource of every group/version (no subresources). Cached.
  Result<std::vector<APIResourceInfo>> serverResources();
  // Only each group's preferred version (client-go ServerPreferredResources).
  Result<std::vector<APIResourceInfo>> serverPreferredResources();
  // REST mapping: the preferred resource for a group/kind (version empty = preferred version).
  Result<APIResourceInfo> resourceFor(const std::string& group, const std::string& version, const std::string& kind);
  void invalidate();
  bool usedAggregatedDiscovery() const;

 private:
  Result<std::vector<APIResourceInfo>> fetch();
  Result<std::vector<APIResourceInfo>> fetchAggregated(const std::string& path, bool& served);
  Result<std::vector<APIResourceInfo>> fetchLegacy();

  std::shared_ptr<RestClient> client_;
  mutable std::mutex mu_;
  std::optional<std::vector<APIResourceInfo>> cache_;
  bool aggregated_ = false;
};

}  // namespace kcm::client
