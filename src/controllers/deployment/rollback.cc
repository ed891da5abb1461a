// Rollback through the deprecated.deployment.rollback.to annotation (upstream rollback.go; `kubectl rollout undo`
// now writes the old template itself, which is an ordinary rollout producing a new revision).
#include "api/gen/apps_v1_json.h"
#include "client/typed_client.h"
#include "controllers/deployment/deployment_controller.h"

namespace kcm::controllers {

using namespace deploymentutil;

Status DeploymentController::rollback(Deployment& d, const std::vector<RSPtr>& rss) {
  auto r = getAllReplicaSetsAndSyncRevision(d, rss, true);
  if (!r.ok()) return r.status();
  const auto all = r->all();
  int64_t target = getRollbackTo(d).value_or(0);
  if (target == 0) {
    target = lastRevision(all);
    if (target == 0) {
      event(d, client::kEventTypeWarning, kRollbackRevisionNotFound, "Unable to find last revision.");
      return updateDeploymentAndClearRollbackTo(d);
    }
  }
  for (const auto& rs : all) {
    if (!rs || revision(rs->metadata) != target) continue;
    bool performed = false;
    if (!equalIgnoreHash(d.spec.template_, rs->spec.template_)) {
      setFromReplicaSetTemplate(d, rs->spec.template_);
      setDeploymentAnnotationsTo(d, *rs);
      performed = true;
    } else {
      event(d, client::kEventTypeWarning, kRollbackTemplateUnchanged,
            "The rollback revision contains the same template as current deployment \"" + d.metadata.name + "\"");
    }
    Status s = updateDeploymentAndClearRollbackTo(d);
    if (performed && s.ok())
      event(d, client::kEventTypeNormal, kRollbackDone,
            "Rolled back deployment \"" + d.metadata.name + "\" to revision " + std::to_string(target));
    return s;
  }
  event(d, client::kEventTypeWarning, kRollbackRevisionNotFound, "Unable to find the revision to rollback to.");
  return updateDeploymentAndClearRollbackTo(d);
}

Status DeploymentController::updateDeploymentAndClearRollbackTo(Deployment& d) {
  d.metadata.annotations.erase(kDeprecatedRollbackTo);
  return client::update(*client_, d).status();
}

}  // namespace kcm::controllers
