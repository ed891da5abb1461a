#pragma once
// The storage version migrator's resource-version loop (upstream ResourceVersionController): once the migration
// runner marked a StorageVersionMigration Running, records in status.resourceVersion the resourceVersion a list
// of its resource returns now (a one-item metadata list in a namespace that cannot exist, so nothing is listed),
// the point every object must be rewritten past. Resources not served, or not listable/patchable/updatable, fail
// the migration. Queue "resource-version-controller", 1 worker.
#include <memory>
#include <string>
#include <vector>

#include "api/gen/storagemigration_v1.h"
#include "client/discovery.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::storageversionmigrator {

using api::storagemigration::v1::StorageVersionMigration;

class ResourceVersionController {
 public:
  ResourceVersionController(std::shared_ptr<client::RestClient> client,
                            std::shared_ptr<client::DiscoveryClient> discovery,
                            informers::SharedInformer<StorageVersionMigration>& svms, Clock& clock = RealClock::get());
  void run(std::stop_token stop);
  runtime::SyncResult sync(const std::string& key);

 private:
  Status failMigration(StorageVersionMigration svm, const std::string& message);
  Result<bool> isResourceMigratable(const client::APIResourceInfo& gvr);
  Result<std::string> getLatestResourceVersion(const client::APIResourceInfo& gvr);
  void resetMapperIfStale();

  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::DiscoveryClient> discovery_;
  informers::SharedInformer<StorageVersionMigration>& svms_;
  Clock& clock_;
  std::mutex resetMu_;
  Clock::TimePoint lastReset_{};
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;
};

}  // namespace kcm::controllers::storageversionmigrator
