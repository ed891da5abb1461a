#pragma once
// ephemeral-volume-controller (alias ephemeral-volume; upstream pkg/controller/volume/ephemeral): for each generic
// ephemeral volume of a pod that is not being deleted, a PVC "<pod>-<volume>" from the volume's claim template,
// controlled by the pod (so the garbage collector removes it with the pod). A PVC of that name the pod does not
// control is an error and a FailedBinding Warning on the pod. A pod is looked at when it is added and when one of
// its claims is deleted; workers: --concurrent-ephemeralvolume-syncs, queue "ephemeral_volume".
#include <memory>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::volume::ephemeral {

using api::core::v1::PersistentVolumeClaim;
using api::core::v1::Pod;

class Controller {
 public:
  Controller(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
             informers::SharedInformer<Pod>& pods, informers::SharedInformer<PersistentVolumeClaim>& pvcs,
             Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  runtime::SyncResult syncHandler(const std::string& key);

 private:
  void enqueuePod(const Pod& pod);
  void onPVCDelete(const PersistentVolumeClaim& pvc);
  Status handleVolume(const Pod& pod, const api::core::v1::Volume& vol);
  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::EventRecorder> recorder_;
  informers::SharedInformer<Pod>& pods_;
  informers::SharedInformer<PersistentVolumeClaim>& pvcs_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::volume::ephemeral
