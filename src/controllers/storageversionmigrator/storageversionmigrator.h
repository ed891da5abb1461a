#pragma once
// storage-version-migrator-controller (alias svm; upstream pkg/controller/storageversionmigrator at the pin): three
// loops over StorageVersionMigrations (storagemigration.k8s.io/v1), started together:
//  - MigrationRunnerController (migrationrunner.h) marks one migration per resource Running, and cleans up;
//  - ResourceVersionController (resourceversion.h) records the resourceVersion to migrate past;
//  - SVMController (here): once the garbage collector's monitor of the resource has seen that resourceVersion,
//    rewrites every object of the resource no newer than it with an empty merge patch carrying the object's
//    resourceVersion (field manager storage-version-migrator-controller), so the apiserver stores it again at the
//    current storage version; objects gone or changed meanwhile count as done. Then Running (with the count) and
//    Succeeded=True; an unexpected error is Failed=True. Transient errors keep it Running with the error noted.
// Needs the garbage collector (its monitors); queue "storage-version-migrator-controller", 5 workers.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api/gen/meta_v1.h"
#include "api/gen/storagemigration_v1.h"
#include "client/discovery.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::storageversionmigrator {

using api::storagemigration::v1::StorageVersionMigration;

// What the controller needs of the garbage collector's monitor of a resource (GraphBuilder.GetMonitor).
struct MonitorView {
  informers::SharedInformer<api::meta::v1::PartialObjectMetadata>* informer = nullptr;  // null: no monitor
};
using GetMonitorFunc = std::function<MonitorView(const client::GroupVersionResource&)>;

class SVMController {
 public:
  SVMController(std::string controllerName, std::shared_ptr<client::RestClient> client,
                std::shared_ptr<client::DiscoveryClient> discovery,
                informers::SharedInformer<StorageVersionMigration>& svms, GetMonitorFunc getMonitor,
                Clock& clock = RealClock::get());
  void run(std::stop_token stop);
  runtime::SyncResult sync(const std::string& key);

 private:
  // runMigration: the error to return (requeue) and whether the migration failed (no requeue).
  std::pair<Status, bool> runMigration(const client::APIResourceInfo& gvr,
                                       informers::SharedInformer<api::meta::v1::PartialObjectMetadata>& monitor,
                                       StorageVersionMigration& svm, const std::string& listResourceVersion);
  Status updateRunningCondition(StorageVersionMigration& svm, int candidatesToPatch, int totalObjects,
                                const Status& err);
  Status failMigration(StorageVersionMigration& svm, const std::string& err);
  Status failMigrationWithObjectsMigrated(StorageVersionMigration& svm, const std::string& err, int candidatesToPatch,
                                          int totalObjects);
  Status patchObject(const client::APIResourceInfo& gvr, const api::meta::v1::PartialObjectMetadata& obj);

  std::string controllerName_;
  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::DiscoveryClient> discovery_;
  informers::SharedInformer<StorageVersionMigration>& svms_;
  GetMonitorFunc getMonitor_;
  Clock& clock_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;
};

}  // namespace kcm::controllers::storageversionmigrator
