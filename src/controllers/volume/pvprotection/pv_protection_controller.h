#pragma once
// persistentvolume-protection-controller (alias pv-protection; upstream pkg/controller/volume/pvprotection): every
// PersistentVolume gets the kubernetes.io/pv-protection finalizer; a PV being deleted keeps it while it is Bound
// and loses it once it is not, so the apiserver can finish the delete. One worker, queue "pvprotection".
#include <memory>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::volume::pvprotection {

using api::core::v1::PersistentVolume;

// isBeingUsed: a PV is in use while its phase is Bound.
bool isBeingUsed(const PersistentVolume& pv);

class Controller {
 public:
  Controller(std::shared_ptr<client::RestClient> client, informers::SharedInformer<PersistentVolume>& pvs,
             Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  runtime::SyncResult processPV(const std::string& name);

 private:
  // setFinalizer: the PV written back (Update) with kubernetes.io/pv-protection added or removed.
  Status setFinalizer(const PersistentVolume& pv, bool add);
  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<PersistentVolume>& pvs_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::volume::pvprotection
