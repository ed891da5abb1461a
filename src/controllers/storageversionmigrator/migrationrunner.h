#pragma once
// The storage version migrator's migration runner (upstream MigrationRunnerController, "migration-runner-
// controller"): per group/resource, at most one StorageVersionMigration runs at a time. The oldest pending one
// (by creation time, then name) is marked Running (and, for a CRD's resource, the CRD gets a StorageMigrating=True
// condition by server-side apply); one that is Running and has succeeded or failed gets Running=False
// (MigrationCompleted) and, for a CRD, StorageMigrating=False with, after a success at the CRD's generation,
// status.storedVersions reduced to the storage version. Keys "<group>/<resource>"; the queue is named
// "resource-version-controller", as upstream names it; 1 worker.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/gen/storagemigration_v1.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::storageversionmigrator {

using api::storagemigration::v1::StorageVersionMigration;

class MigrationRunnerController {
 public:
  MigrationRunnerController(std::shared_ptr<client::RestClient> client,
                            informers::SharedInformer<StorageVersionMigration>& svms, Clock& clock = RealClock::get());
  void run(std::stop_token stop);
  runtime::SyncResult sync(const std::string& groupResource);

 private:
  void enqueue(const StorageVersionMigration& svm);
  Status cleanupAdmission(StorageVersionMigration svm);
  Status markAsActive(StorageVersionMigration svm);
  Status cleanupCRD(const StorageVersionMigration& svm);
  // The CRD named <resource>.<group>; null when there is none.
  Result<nlohmann::json> crdForGroupResource(const std::string& group, const std::string& resource);
  // Server-side apply of a StorageMigrating condition (retried on conflict, fresh GET each time, as
  // retry.RetryOnConflict with DefaultRetry).
  Status applyCRDCondition(const std::string& crdName, const std::string& status, const std::string& reason,
                           const std::function<std::string(const nlohmann::json& crd, nlohmann::json& applyStatus)>& message);

  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<StorageVersionMigration>& svms_;
  Clock& clock_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;
};

}  // namespace kcm::controllers::storageversionmigrator
