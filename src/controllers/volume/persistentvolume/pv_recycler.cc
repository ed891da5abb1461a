// persistentvolume-binder-controller: recycling a Released hostPath or NFS volume with policy Recycle (upstream
// pkg/volume/{hostpath,nfs} Recycle and pkg/volume/util/recyclerclient). A pod "recycler-for-<pv>" in the default
// namespace scrubs the volume; its events are forwarded to the PV as RecyclerPod events; once it Succeeded the
// pod goes and the volume is Available again, once it Failed (or vanished) the volume is Failed. Upstream blocks a
// goroutine watching the pod; here each sync of the volume (the pod's updates queue it) looks at the pod again.
#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/volume/persistentvolume/pv_controller.h"
#include "controllers/volume/persistentvolume/volume_plugins.h"

namespace kcm::controllers::volume::persistentvolume {
namespace {

using client::kEventTypeNormal;
using client::kEventTypeWarning;

std::string q(const std::string& s) { return log::quote(s); }

// NewPersistentVolumeRecyclerPodTemplate, with the plugin's volume source and deadline.
Pod recyclerPod(const PersistentVolume& pv, Plugin plugin, const ControllerParameters& p) {
  Pod pod;
  pod.metadata.name = std::string(kRecyclerPodPrefix) + pv.metadata.name;
  pod.metadata.namespace_ = "default";
  pod.spec.restartPolicy = "Never";
  // CalculateTimeoutForVolume: the increment per whole Gi, at least the minimum.
  const bool nfs = plugin == Plugin::kNFS;
  const int64_t minimum = nfs ? p.recyclerMinimumTimeoutNFS : p.recyclerMinimumTimeoutHostPath;
  const int64_t increment = nfs ? p.recyclerTimeoutIncrementNFS : p.recyclerTimeoutIncrementHostPath;
  auto cap = pv.spec.capacity.find("storage");
  const int64_t gi = cap == pv.spec.capacity.end() ? 0 : cap->second.value() / (int64_t{1} << 30);
  pod.spec.activeDeadlineSeconds = std::max(minimum, gi * increment);
  auto& vol = pod.spec.volumes.emplace_back();
  vol.name = "vol";
  if (nfs) {
    vol.nfs.emplace().server = pv.spec.nfs->server;
    vol.nfs->path = pv.spec.nfs->path;
  } else {
    vol.hostPath.emplace().path = pv.spec.hostPath->path;
  }
  auto& c = pod.spec.containers.emplace_back();
  c.name = "pv-recycler";
  c.image = "registry.k8s.io/build-image/debian-base:bookworm-v1.0.6";
  c.command = {"/bin/sh"};
  c.args = {"-c", "test -e /scrub && find /scrub -mindepth 1 -delete && test -z \"$(ls -A /scrub)\" || exit 1"};
  auto& m = c.volumeMounts.emplace_back();
  m.name = "vol", m.mountPath = "/scrub";
  return pod;
}

}  // namespace

// Returns OK while the recycling goes on or once it is done; an error is what upstream's Recycle returns.
Status PersistentVolumeController::recycle(const PersistentVolume& volume, Plugin plugin) {
  const std::string& pvName = volume.metadata.name;
  const std::string podName = std::string(kRecyclerPodPrefix) + pvName;
  bool started;
  {
    std::lock_guard l(recyclingMu_);
    started = recycling_.count(pvName) != 0;
  }
  if (!started) {
    if (plugin == Plugin::kHostPath && !volume.spec.hostPath) return Status(StatusCode::kInvalid, "spec.PersistentVolume.Spec.HostPath is nil");
    if (plugin == Plugin::kNFS && !volume.spec.nfs) return Status(StatusCode::kInvalid, "spec.PersistentVolumeSource.NFS is nil");
    KLOG_V(5, "\"creating recycler pod for volume\" volumeName=" + q(pvName));
    auto r = client::create<Pod>(*client_, "default", recyclerPod(volume, plugin, params_));
    if (!r.ok()) {
      if (r.status().code() != StatusCode::kAlreadyExists)
        return Status(r.status().code(), "unexpected error creating recycler pod:  " + r.status().message());
      if (Status d = client::remove<Pod>(*client_, "default", podName); !d.ok() && d.code() != StatusCode::kNotFound)
        return Status(d.code(), "failed to delete old recycler pod default/" + podName + ": " + d.message());
      return Status(StatusCode::kAlreadyExists, "old recycler pod found, will retry later");
    }
    std::lock_guard l(recyclingMu_);
    recycling_[pvName] = Recycling{r->metadata.uid, {}};
    return Status::Ok();
  }
  // Forward the pod's events (the scheduler's, the kubelet's) to the volume, once each.
  client::ListOptions lo;
  lo.fieldSelector = "involvedObject.name=" + podName;
  if (auto events = client::list<api::core::v1::Event>(*client_, "default", lo); events.ok()) {
    for (const auto& e : events->items) {
      if (e.involvedObject.name != podName || e.involvedObject.kind != "Pod") continue;
      bool fresh;
      {
        std::lock_guard l(recyclingMu_);
        fresh = recycling_[pvName].forwarded.insert(e.metadata.uid).second;
      }
      if (fresh) volumeEvent(volume, e.type.c_str(), "RecyclerPod", "Recycler pod: " + e.message);
    }
  }
  auto pod = pods_.store().get("default", podName);
  std::string uid;
  {
    std::lock_guard l(recyclingMu_);
    uid = recycling_[pvName].podUID;
  }
  Status outcome;
  if (!pod || pod->metadata.uid != uid) {
    auto live = client::get<Pod>(*client_, "default", podName);
    if (live.ok() && live->metadata.uid == uid) return Status::Ok();  // the informer has not seen it yet
    outcome = Status(StatusCode::kNotFound, "recycler pod was deleted");
  } else if (pod->status.phase == "Succeeded") {
    outcome = Status::Ok();
  } else if (pod->status.phase == "Failed") {
    outcome = Status(StatusCode::kInternal,
                     pod->status.message.empty() ? "pod failed, pod.Status.Message unknown" : pod->status.message);
  } else {
    return Status::Ok();  // still scrubbing
  }
  {
    std::lock_guard l(recyclingMu_);
    recycling_.erase(pvName);
  }
  KLOG_V(2, "\"deleting recycler pod\" pod=" + q("default/" + podName));
  Status del = client::remove<Pod>(*client_, "default", podName);
  if (del.code() == StatusCode::kNotFound) del = Status::Ok();
  if (!del.ok()) KLOG_ERROR("\"failed to delete recycler pod\" pod=" + q("default/" + podName) + " err=" + q(del.message()));
  if (!outcome.ok()) return Status(outcome.code(), "failed to recycle volume: " + outcome.message());
  if (!del.ok()) return Status(del.code(), "failed to delete recycler pod: " + del.message());
  KLOG_V(2, "\"Volume recycled\" volumeName=" + q(pvName));
  volumeEvent(volume, kEventTypeNormal, "VolumeRecycled", "Volume recycled");
  if (Status st = unbindVolume(volume); !st.ok())
    KLOG_V(3, "\"RecycleVolumeOperation: failed to make recycled volume 'Available', we will recycle the volume "
              "again\" volumeName=" + q(pvName) + " err=" + q(st.message()));
  return Status::Ok();
}

}  // namespace kcm::controllers::volume::persistentvolume
