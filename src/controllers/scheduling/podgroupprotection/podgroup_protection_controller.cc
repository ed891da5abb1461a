#include "controllers/scheduling/podgroupprotection/podgroup_protection_controller.h"

#include "api/gen/core_v1_json.h"
#include "api/gen/scheduling_v1beta1_json.h"
#include "base/log.h"
#include "controllers/volume/protectionutil/protectionutil.h"

namespace kcm::controllers::scheduling::podgroupprotection {
namespace pu = volume::protectionutil;

namespace {

bool isPodTerminated(const Pod& pod) {
  const std::string& phase = pod.status.phase;
  return phase == "Succeeded" || phase == "Failed";
}

const api::String* podGroupNameOf(const Pod& pod) {
  if (!pod.spec.schedulingGroup || !pod.spec.schedulingGroup->podGroupName) return nullptr;
  return &*pod.spec.schedulingGroup->podGroupName;
}

std::string objKey(const api::meta::v1::ObjectMeta& m) { return m.namespace_ + "/" + m.name; }

}  // namespace

std::vector<std::string> activePodSchedulingGroupKeys(const Pod& pod) {
  if (isPodTerminated(pod)) return {};
  const api::String* name = podGroupNameOf(pod);
  if (!name) return {};
  return {pod.metadata.namespace_ + "/" + *name};
}

Controller::Controller(std::shared_ptr<client::RestClient> client, informers::SharedInformer<PodGroup>& podGroups,
                       informers::SharedInformer<Pod>& pods, Clock& clock)
    : client_(std::move(client)), podGroups_(podGroups), pods_(pods),
      base_("podgroupprotection", [this](const std::string& key) { return processPodGroup(key); }, clock) {
  informers::EventHandler<PodGroup> gh;
  gh.onAdd = [this](const auto& pg) { handlePodGroupUpdate(*pg); };
  gh.onUpdate = [this](const auto&, const auto& pg) { handlePodGroupUpdate(*pg); };
  registrations_.push_back(podGroups_.addEventHandler(gh));

  pods_.store().addIndexer(kActivePodSchedulingGroupIndex, activePodSchedulingGroupKeys);
  informers::EventHandler<Pod> ph;
  ph.onAdd = [this](const auto& pod) { handlePodChange(nullptr, pod.get()); };
  ph.onUpdate = [this](const auto& old, const auto& cur) { handlePodChange(old.get(), cur.get()); };
  ph.onDelete = [this](const auto& pod, bool) { handlePodChange(pod.get(), nullptr); };
  registrations_.push_back(pods_.addEventHandler(ph));
}

void Controller::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting PodGroup protection controller\"");
  base_.start(workers, stop, {[this] { return podGroups_.hasSynced(); }, [this] { return pods_.hasSynced(); }});
}

runtime::SyncResult Controller::processPodGroup(const std::string& key) {
  KLOG_V(4, "\"Processing PodGroup\" podGroup=" + log::quote(key));
  auto pg = podGroups_.store().get(key);
  if (!pg) {
    KLOG_V(4, "\"PodGroup not found, ignoring\" podGroup=" + log::quote(key));
    return runtime::SyncResult::ok();
  }
  if (!pu::IsDeletionCandidate(pg->metadata, kPodGroupProtectionFinalizer)) return runtime::SyncResult::ok();
  if (!hasActivePods(*pg)) {
    if (Status st = removeFinalizer(*pg); !st.ok())
      return runtime::SyncResult::error(Status(st.code(), "PodGroup " + key + " failed with: " + st.message()));
    return runtime::SyncResult::ok();
  }
  KLOG_V(4, "\"Keeping PodGroup finalizer because it is still being used by pods\" podGroup=" +
                log::quote(objKey(pg->metadata)));
  return runtime::SyncResult::ok();
}

Status Controller::removeFinalizer(const PodGroup& pg) {
  Status st = pu::updateFinalizer(*client_, pg, kPodGroupProtectionFinalizer, false);
  if (!st.ok()) {
    KLOG_ERROR("\"Error removing protection finalizer from PodGroup\" err=" + log::quote(st.message()) +
               " podGroup=" + log::quote(objKey(pg.metadata)));
    return st;
  }
  KLOG_V(3, "\"Removed protection finalizer from PodGroup\" podGroup=" + log::quote(objKey(pg.metadata)));
  return Status::Ok();
}

bool Controller::hasActivePods(const PodGroup& pg) const {
  // The cache's index only: it holds non-terminated pods, so any entry means the PodGroup is in use.
  auto pods = pods_.store().byIndex(kActivePodSchedulingGroupIndex, objKey(pg.metadata));
  if (!pods.empty()) {
    KLOG_V(4, "\"Pod is using PodGroup\" pod=" + log::quote(objKey(pods[0]->metadata)) +
                  " podGroup=" + log::quote(objKey(pg.metadata)));
    return true;
  }
  KLOG_V(4, "\"No active pods found using PodGroup\" podGroup=" + log::quote(objKey(pg.metadata)));
  return false;
}

void Controller::handlePodGroupUpdate(const PodGroup& pg) {
  if (!pu::IsDeletionCandidate(pg.metadata, kPodGroupProtectionFinalizer)) return;
  KLOG_V(4, "\"Got event on PodGroup\" podGroup=" + log::quote(objKey(pg.metadata)));
  base_.enqueue(objKey(pg.metadata));
}

void Controller::handlePodChange(const Pod* oldPod, const Pod* newPod) {
  if (newPod && isPodTerminated(*newPod)) enqueuePodGroupForPod(*newPod);
  // An update may hide the deletion of one pod and the creation of another with the same name: the one that went
  // may have been the last to hold its PodGroup.
  if (newPod && oldPod && oldPod->metadata.uid != newPod->metadata.uid) enqueuePodGroupForPod(*oldPod);
  if (!newPod && oldPod) enqueuePodGroupForPod(*oldPod);
}

void Controller::enqueuePodGroupForPod(const Pod& pod) {
  const api::String* name = podGroupNameOf(pod);
  if (!name) return;
  const std::string key = pod.metadata.namespace_ + "/" + *name;
  KLOG_V(4, "\"Enqueuing PodGroup for pod event\" pod=" + log::quote(objKey(pod.metadata)) +
                " podGroup=" + log::quote(key));
  base_.enqueue(key);
}

}  // namespace kcm::controllers::scheduling::podgroupprotection
