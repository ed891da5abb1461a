#pragma once
// clusterrole-aggregation-controller (upstream pkg/controller/clusterroleaggregation): a ClusterRole with an
// aggregationRule gets, in order of the selectors and then of role names, every rule of the other ClusterRoles its
// selectors match (duplicates dropped), written with server-side apply (field manager
// clusterrole-aggregation-controller, force). This is what fills admin, edit and view. Any ClusterRole change
// re-queues every aggregated role (the set is small and the dependency graph unknown).
#include <memory>
#include <string>

#include "api/gen/rbac_v1.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers {

class ClusterRoleAggregationController {
 public:
  ClusterRoleAggregationController(std::shared_ptr<client::RestClient> client,
                                   informers::SharedInformer<api::rbac::v1::ClusterRole>& roles);
  void run(int workers, std::stop_token stop);
  runtime::SyncResult syncClusterRole(const std::string& name);

 private:
  void enqueueAggregated();
  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<api::rbac::v1::ClusterRole>& roles_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers
