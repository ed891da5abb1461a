#pragma once
// Stale-cache guard (upstream pkg/controller/util/consistency, the StaleControllerConsistency* gates): after a
// controller writes objects for an owner, it records the resourceVersion it wrote per resource; the owner's next
// sync waits (returns an error, so the key is retried with backoff) until each informer has observed at least
// that resourceVersion. Keeps a controller from acting twice on a cache that has not seen its own writes.
// Disabled (no resources) it never blocks. Thread-safe.
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "base/status.h"

namespace kcm::runtime {

// resourceVersions are decimal integers (etcd revisions); compares them as such. Non-numeric -> 0.
int compareResourceVersion(const std::string& a, const std::string& b);

class ConsistencyStore {
 public:
  using LastSyncRV = std::function<std::string()>;
  ConsistencyStore() = default;  // disabled
  explicit ConsistencyStore(std::map<std::string, LastSyncRV> resources) : resources_(std::move(resources)) {}
  // Enables the guard for these resources (before first use).
  void enable(std::map<std::string, LastSyncRV> resources) { resources_ = std::move(resources); }

  void wroteAt(const std::string& owner, const std::string& ownerUID, const std::string& resource,
               const std::string& rv);
  // Forgets the owner's record (any UID when ownerUID is empty).
  void clear(const std::string& owner, const std::string& ownerUID = "");
  // Ok when every informer has caught up with the owner's writes (the record is then dropped). Otherwise the
  // resource that lags is put in *lagging when given (for a controller's stale_sync_skips_total).
  Status ensureReady(const std::string& owner, std::string* lagging = nullptr);

 private:
  struct Record {
    std::string uid;
    std::map<std::string, std::string> versions;  // resource -> highest RV written
  };
  std::map<std::string, LastSyncRV> resources_;
  std::mutex mu_;
  std::map<std::string, Record> writes_;
};

}  // namespace kcm::runtime
