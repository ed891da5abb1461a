#include "controllers/storageversionmigrator/migrationrunner.h"

#include <thread>

#include "api/gen/meta_v1_json.h"
#include "api/gen/storagemigration_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/storageversionmigrator/svm_util.h"

namespace kcm::controllers::storageversionmigrator {
namespace {

constexpr const char* kFieldManager = "migration-runner-controller";
constexpr const char* kCRDPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/";

api::Time wallNow(Clock& c) {
  return api::Time::fromUnix(
      std::chrono::duration_cast<std::chrono::seconds>(c.wallNow().time_since_epoch()).count());
}

std::string keyOf(const api::meta::v1::GroupResource& gr) { return gr.group + "/" + gr.resource; }

// compareSVM: by creation time, then name.
bool olderThan(const StorageVersionMigration& a, const StorageVersionMigration& b) {
  if (a.metadata.creationTimestamp.unixSeconds != b.metadata.creationTimestamp.unixSeconds)
    return a.metadata.creationTimestamp.unixSeconds < b.metadata.creationTimestamp.unixSeconds;
  return a.metadata.name < b.metadata.name;
}

}  // namespace

MigrationRunnerController::MigrationRunnerController(std::shared_ptr<client::RestClient> client,
                                                     informers::SharedInformer<StorageVersionMigration>& svms,
                                                     Clock& clock)
    : client_(std::move(client)), svms_(svms), clock_(clock),
      base_("resource-version-controller", [this](const std::string& key) { return sync(key); }, clock) {
  informers::EventHandler<StorageVersionMigration> h;
  h.onAdd = [this](const auto& s) {
    KLOG_V(4, "\"Adding\" svm=" + log::quote(s->metadata.name));
    enqueue(*s);
  };
  h.onUpdate = [this](const auto& o, const auto& s) {
    KLOG_V(4, "\"Updating\" svm=" + log::quote(o->metadata.name));
    enqueue(*s);
  };
  h.onDelete = [this](const auto& s, bool) {
    KLOG_V(4, "\"Deleting\" svm=" + log::quote(s->metadata.name));
    enqueue(*s);
  };
  registrations_.push_back(svms_.addEventHandler(h));
}

void MigrationRunnerController::enqueue(const StorageVersionMigration& svm) { base_.enqueue(keyOf(svm.spec.resource)); }

void MigrationRunnerController::run(std::stop_token stop) {
  KLOG_INFO("\"Starting\" controller=\"migration-runner-controller\"");
  base_.start(1, stop, {[this] { return svms_.hasSynced(); }});
}

runtime::SyncResult MigrationRunnerController::sync(const std::string& key) {
  const auto slash = key.find('/');
  const std::string group = key.substr(0, slash), resource = key.substr(slash + 1);
  // getSVMsForResource: finished ones still marked Running are cleaned up; the oldest pending one is promoted
  // unless one is running.
  std::vector<StorageVersionMigration> toCleanup;
  std::shared_ptr<const StorageVersionMigration> toPromote;
  bool inProgress = false;
  for (const auto& svm : svms_.store().list()) {
    if (svm->spec.resource.group != group || svm->spec.resource.resource != resource) continue;
    const bool running = isRunning(*svm), terminal = isTerminal(*svm);
    if (running && terminal) {
      toCleanup.push_back(*svm);
    } else if (running) {
      inProgress = true;
    } else if (!terminal && (!toPromote || olderThan(*svm, *toPromote))) {
      toPromote = svm;
    }
  }
  if (inProgress) toPromote = nullptr;
  for (auto& svm : toCleanup)
    if (Status st = cleanupAdmission(std::move(svm)); !st.ok()) return runtime::SyncResult::error(st);
  if (toPromote)
    if (Status st = markAsActive(*toPromote); !st.ok()) return runtime::SyncResult::error(st);
  return runtime::SyncResult::ok();
}

Status MigrationRunnerController::cleanupAdmission(StorageVersionMigration svm) {
  const auto* running = FindStatusCondition(svm.status.conditions, kMigrationRunning);
  if (!running || running->status != "True") return Status::Ok();
  api::meta::v1::Condition c;
  c.type = kMigrationRunning, c.status = "False", c.reason = "MigrationCompleted", c.message = "Migration completed";
  c.observedGeneration = svm.metadata.generation;
  SetStatusCondition(svm.status.conditions, c, wallNow(clock_));
  if (Status st = cleanupCRD(svm); !st.ok()) return st;
  return client::updateStatus<StorageVersionMigration>(*client_, svm).status();
}

Status MigrationRunnerController::markAsActive(StorageVersionMigration svm) {
  auto crd = crdForGroupResource(svm.spec.resource.group, svm.spec.resource.resource);
  if (!crd.ok()) return crd.status();
  if (!crd->is_null()) {
    const std::string name = svm.metadata.name;
    Status st = applyCRDCondition((*crd)["metadata"].value("name", ""), "True", "MigrationRunning",
                                  [&name](const nlohmann::json&, nlohmann::json&) {
                                    return "Migration " + name + " is running";
                                  });
    if (!st.ok()) return st;
  }
  setStatusConditions(svm, kMigrationRunning, kMigrationRunningReason,
                      migrationRunningMessage(nullptr, nullptr, nullptr), wallNow(clock_));
  return client::updateStatus<StorageVersionMigration>(*client_, svm).status();
}

Status MigrationRunnerController::cleanupCRD(const StorageVersionMigration& svm) {
  const bool success = IsStatusConditionTrue(svm.status.conditions, kMigrationSucceeded);
  auto crd = crdForGroupResource(svm.spec.resource.group, svm.spec.resource.resource);
  if (!crd.ok()) return crd.status();
  if (crd->is_null()) return Status::Ok();
  // finishCRDMigration
  return applyCRDCondition(
      (*crd)["metadata"].value("name", ""), "False", success ? "MigrationSucceeded" : "MigrationFailed",
      [success](const nlohmann::json& fresh, nlohmann::json& applyStatus) -> std::string {
        if (!success) return "The migration has failed";
        // Stored versions are only trusted when the StorageMigrating condition saw this generation.
        const int64_t generation = fresh["metadata"].value("generation", int64_t{0});
        bool canUpdate = false;
        for (const auto& c : fresh.value("status", nlohmann::json::object()).value("conditions", nlohmann::json::array()))
          if (c.value("type", "") == "StorageMigrating") {
            canUpdate = c.value("observedGeneration", int64_t{0}) == generation;
            break;
          }
        if (!canUpdate)
          return "The migration has succeeded but the stored versions have not been updated due to a generation "
                 "mismatch";
        for (const auto& v : fresh["spec"].value("versions", nlohmann::json::array()))
          if (v.value("storage", false)) {
            applyStatus["storedVersions"] = nlohmann::json::array({v.value("name", "")});
            break;
          }
        return "The migration has succeeded and the stored versions have been updated";
      });
}

Result<nlohmann::json> MigrationRunnerController::crdForGroupResource(const std::string& group,
                                                                      const std::string& resource) {
  client::Request req;
  req.path = std::string(kCRDPath) + resource + "." + group;
  auto r = client_->send(req);
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kNotFound) return nlohmann::json();
    return r.status();
  }
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Status(StatusCode::kInternal, "decoding CustomResourceDefinition " + resource + "." + group);
  return j;
}

Status MigrationRunnerController::applyCRDCondition(
    const std::string& crdName, const std::string& status, const std::string& reason,
    const std::function<std::string(const nlohmann::json& crd, nlohmann::json& applyStatus)>& message) {
  Status last;
  for (int attempt = 0; attempt < 5; ++attempt) {  // retry.DefaultRetry: 5 steps 10 ms apart
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    client::Request get;
    get.path = kCRDPath + crdName;
    auto r = client_->send(get);
    if (!r.ok()) return r.status();
    auto crd = nlohmann::json::parse(r->body, nullptr, false);
    if (crd.is_discarded() || !crd.is_object())
      return Status(StatusCode::kInternal, "decoding CustomResourceDefinition " + crdName);
    nlohmann::json applyStatus = nlohmann::json::object();
    const std::string msg = message(crd, applyStatus);
    applyStatus["conditions"] = nlohmann::json::array({{{"type", "StorageMigrating"},
                                                        {"status", status},
                                                        {"lastTransitionTime", wallNow(clock_).rfc3339()},
                                                        {"reason", reason},
                                                        {"message", msg},
                                                        {"observedGeneration", crd["metadata"].value("generation", int64_t{0})}}});
    nlohmann::json apply = {{"kind", "CustomResourceDefinition"},
                            {"apiVersion", "apiextensions.k8s.io/v1"},
                            {"metadata",
                             {{"name", crdName}, {"resourceVersion", crd["metadata"].value("resourceVersion", "")}}},
                            {"status", applyStatus}};
    client::Request patch;
    patch.method = "PATCH";
    patch.path = kCRDPath + crdName + "/status";
    patch.body = apply.dump();
    patch.contentType = "application/apply-patch+yaml";
    patch.query = {{"fieldManager", kFieldManager}, {"force", "true"}};
    auto p = client_->send(patch);
    if (p.ok()) return Status::Ok();
    last = p.status();
    if (last.code() != StatusCode::kConflict) return last;
  }
  return last;
}

}  // namespace kcm::controllers::storageversionmigrator
