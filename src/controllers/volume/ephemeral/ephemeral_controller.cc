#include "controllers/volume/ephemeral/ephemeral_controller.h"

#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/volume/common/volume_common.h"
#include "base/metrics.h"

namespace kcm::controllers::volume::ephemeral {
namespace {

std::string keyOf(const api::meta::v1::ObjectMeta& m) { return m.namespace_ + "/" + m.name; }

// ephemeral_volume_controller_*: both counters carry the same help text upstream.
metrics::Counter& createAttempts() {
  static metrics::Counter& c = metrics::Registry::global().counter(
      "ephemeral_volume_controller_create_total", "Number of PersistentVolumeClaim creation requests");
  return c;
}
metrics::Counter& createFailures() {
  static metrics::Counter& c = metrics::Registry::global().counter(
      "ephemeral_volume_controller_create_failures_total", "Number of PersistentVolumeClaim creation requests");
  return c;
}

}  // namespace

Controller::Controller(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
                       informers::SharedInformer<Pod>& pods, informers::SharedInformer<PersistentVolumeClaim>& pvcs,
                       Clock& clock)
    : client_(std::move(client)), recorder_(std::move(recorder)), pods_(pods), pvcs_(pvcs),
      base_("ephemeral_volume", [this](const std::string& key) { return syncHandler(key); }, clock) {
  createAttempts(), createFailures();  // registered at construction, as upstream's RegisterMetrics
  informers::EventHandler<Pod> ph;
  ph.onAdd = [this](const auto& p) { enqueuePod(*p); };
  registrations_.push_back(pods_.addEventHandler(ph));
  informers::EventHandler<PersistentVolumeClaim> ch;
  ch.onDelete = [this](const auto& c, bool) { onPVCDelete(*c); };
  registrations_.push_back(pvcs_.addEventHandler(ch));
  pods_.store().addIndexer(common::kPodPVCIndex, common::PodPVCIndexFunc);
}

void Controller::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting ephemeral volume controller\"");
  base_.start(workers, stop, {[this] { return pods_.hasSynced(); }, [this] { return pvcs_.hasSynced(); }});
}

void Controller::enqueuePod(const Pod& pod) {
  if (pod.metadata.deletionTimestamp) return;
  for (const auto& v : pod.spec.volumes)
    if (v.ephemeral) return base_.enqueue(keyOf(pod.metadata));
}

void Controller::onPVCDelete(const PersistentVolumeClaim& pvc) {
  // A pod whose claim went away gets it back (unless the pod is going too).
  for (const auto& pod : pods_.store().byIndex(common::kPodPVCIndex, keyOf(pvc.metadata))) enqueuePod(*pod);
}

runtime::SyncResult Controller::syncHandler(const std::string& key) {
  auto pod = pods_.store().get(key);
  if (!pod) {
    KLOG_V(5, "\"Ephemeral: nothing to do for pod, it is gone\" podKey=" + log::quote(key));
    return runtime::SyncResult::ok();
  }
  if (pod->metadata.deletionTimestamp) {
    KLOG_V(5, "\"Ephemeral: nothing to do for pod, it is marked for deletion\" podKey=" + log::quote(key));
    return runtime::SyncResult::ok();
  }
  for (const auto& vol : pod->spec.volumes) {
    if (Status st = handleVolume(*pod, vol); !st.ok()) {
      recorder_->event({"Pod", "v1", pod->metadata.namespace_, pod->metadata.name, pod->metadata.uid,
                        pod->metadata.resourceVersion, ""},
                       client::kEventTypeWarning, "FailedBinding", "ephemeral volume " + vol.name + ": " + st.message());
      return runtime::SyncResult::error(
          Status(st.code(), "pod " + key + ", ephemeral volume " + vol.name + ": " + st.message()));
    }
  }
  return runtime::SyncResult::ok();
}

Status Controller::handleVolume(const Pod& pod, const api::core::v1::Volume& vol) {
  KLOG_V(5, "\"Ephemeral: checking volume\" volumeName=" + log::quote(vol.name));
  if (!vol.ephemeral || !vol.ephemeral->volumeClaimTemplate) return Status::Ok();  // the template is required
  const std::string pvcName = common::VolumeClaimName(pod, vol);
  if (auto existing = pvcs_.store().get(pod.metadata.namespace_, pvcName)) {
    if (Status st = common::VolumeIsForPod(pod, *existing); !st.ok()) return st;
    KLOG_V(5, "\"Ephemeral: PVC already created\" volumeName=" + log::quote(vol.name) + " PVC=" +
                  log::quote(keyOf(existing->metadata)));
    return Status::Ok();
  }
  const auto& tmpl = *vol.ephemeral->volumeClaimTemplate;
  PersistentVolumeClaim pvc;
  pvc.metadata.name = pvcName;
  pvc.metadata.namespace_ = pod.metadata.namespace_;
  auto& owner = pvc.metadata.ownerReferences.emplace_back();
  owner.apiVersion = "v1", owner.kind = "Pod", owner.name = pod.metadata.name, owner.uid = pod.metadata.uid;
  owner.controller = true, owner.blockOwnerDeletion = true;
  pvc.metadata.annotations = tmpl.metadata.annotations;
  pvc.metadata.labels = tmpl.metadata.labels;
  pvc.spec = tmpl.spec;
  createAttempts().inc();
  auto r = client::create<PersistentVolumeClaim>(*client_, pod.metadata.namespace_, pvc);
  if (!r.ok()) {
    createFailures().inc();
    return Status(r.status().code(), "create PVC " + pvcName + ": " + r.status().message());
  }
  return Status::Ok();
}

}  // namespace kcm::controllers::volume::ephemeral
