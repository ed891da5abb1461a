#include "controllers/volume/attachdetach/attach_detach_controller.h"

#include <openssl/sha.h>

#include <algorithm>
#include <set>

#include "api/gen/core_v1_json.h"
#include "api/gen/storage_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/volume/common/volume_common.h"
#include "controllers/volume/common/volume_spec.h"

namespace kcm::controllers::volume::attachdetach {
namespace {

using client::kEventTypeNormal;
using client::kEventTypeWarning;

std::string q(const std::string& s) { return log::quote(s); }
std::string opKey(const std::string& volume, const std::string& node) { return volume + "@" + node; }

// VolumeToAttach.GenerateMsg: `<prefix> for volume "<pv>" <suffix>`.
std::string volumeMsg(const std::string& prefix, const std::string& pv, const std::string& suffix) {
  return prefix + " for volume \"" + pv + "\" " + suffix;
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string getAttachmentName(const std::string& volumeHandle, const std::string& driver, const std::string& node) {
  const std::string in = volumeHandle + driver + node;
  unsigned char sum[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(in.data()), in.size(), sum);
  static const char kHex[] = "0123456789abcdef";
  std::string out = "csi-";
  for (unsigned char b : sum) out += kHex[b >> 4], out += kHex[b & 15];
  return out;
}

AttachDetachController::AttachDetachController(
    std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
    informers::SharedInformer<Pod>& pods, informers::SharedInformer<Node>& nodes,
    informers::SharedInformer<PersistentVolumeClaim>& pvcs, informers::SharedInformer<PersistentVolume>& pvs,
    informers::SharedInformer<CSIDriver>& drivers, informers::SharedInformer<VolumeAttachment>& attachments,
    Parameters params, Clock& clock)
    : client_(std::move(client)), recorder_(std::move(recorder)), pods_(pods), nodes_(nodes), pvcs_(pvcs), pvs_(pvs),
      drivers_(drivers), attachments_(attachments), params_(params), clock_(clock), asw_(clock), backoff_(clock),
      pvcQueue_("pvcs", [this](const std::string& k) { return syncPVCByKey(k); }, clock) {
  informers::EventHandler<Pod> ph;
  ph.onAdd = [this](const auto& p) { podAdd(*p); };
  ph.onUpdate = [this](const auto&, const auto& p) { podAdd(*p); };
  ph.onDelete = [this](const auto& p, bool) { podDelete(*p); };
  registrations_.push_back(pods_.addEventHandler(ph));
  informers::EventHandler<Node> nh;
  nh.onAdd = [this](const auto& n) {
    nodeUpdate(*n);
    // A node added again may have lost its volumesAttached: write them back.
    asw_.SetNodeStatusUpdateNeeded(n->metadata.name);
  };
  nh.onUpdate = [this](const auto&, const auto& n) { nodeUpdate(*n); };
  nh.onDelete = [this](const auto& n, bool) { nodeDelete(*n); };
  registrations_.push_back(nodes_.addEventHandler(nh));
  informers::EventHandler<PersistentVolumeClaim> ch;
  ch.onAdd = [this](const auto& c) { pvcQueue_.enqueueObject(*c); };
  ch.onUpdate = [this](const auto&, const auto& c) { pvcQueue_.enqueueObject(*c); };
  registrations_.push_back(pvcs_.addEventHandler(ch));
  pods_.store().addIndexer(common::kPodPVCIndex, common::PodPVCIndexFunc);
}

AttachDetachController::~AttachDetachController() {
  registrations_.clear();
  reconciler_.stop();
  populator_.stop();
}

void AttachDetachController::Run(std::stop_token stop) {
  KLOG_INFO("\"Starting attach detach controller\"");
  auto synced = [this] {
    if (!(pods_.hasSynced() && nodes_.hasSynced() && pvcs_.hasSynced() && pvs_.hasSynced() && drivers_.hasSynced() &&
          attachments_.hasSynced()))
      return false;
    std::call_once(populated_, [this] { populateActualStateOfWorld(); });
    return true;
  };
  lastSync_ = clock_.now();
  reconciler_.start(clock_, params_.loopPeriod, stop, [this] { reconcile(); }, synced);
  populator_.start(clock_, params_.populatorPeriod, stop, [this] { findAndRemoveDeletedPods(); }, synced);
  pvcQueue_.start(1, stop, {synced});
}

// populateActualStateOfWorld, populateDesiredStateOfWorld and processVolumeAttachments of upstream's Run.
void AttachDetachController::populateActualStateOfWorld() {
  KLOG_V(5, "\"Populating ActualStateOfworld\"");
  for (const auto& node : nodes_.store().list()) {
    for (const auto& av : node->status.volumesAttached) {
      VolumeSpec spec;
      splitUniqueVolumeName(av.name, spec.driver, spec.volumeHandle);
      asw_.MarkVolumeAsAttached(av.name, spec, node->metadata.name);
    }
    processVolumesInUse(node->metadata.name, api::toStdStrings(node->status.volumesInUse));
    addNodeToDswp(*node);
  }
  for (const auto& pod : pods_.store().list()) podAdd(*pod);
  for (const auto& va : attachments_.store().list()) {
    if (!va->status.attached || !va->spec.source.persistentVolumeName) continue;
    auto pv = pvs_.store().get(*va->spec.source.persistentVolumeName);
    if (!pv || !pv->spec.csi) continue;
    VolumeSpec spec{pv->metadata.name, pv->spec.csi->driver, pv->spec.csi->volumeHandle, api::toStdStrings(pv->spec.accessModes)};
    const std::string name = uniqueVolumeName(spec.driver, spec.volumeHandle);
    if (!asw_.VolumeNodeExists(name, va->spec.nodeName)) {
      KLOG_V(1, "\"Marking volume attachment as uncertain as volume is not attached\" node=" + q(va->spec.nodeName) +
                    " volumeName=" + q(name));
      asw_.MarkVolumeAsUncertain(name, spec, va->spec.nodeName);
    }
  }
}

void AttachDetachController::addNodeToDswp(const Node& node) {
  if (node.metadata.annotations.contains(kControllerManagedAttachAnnotation)) dsw_.AddNode(node.metadata.name);
}

void AttachDetachController::processVolumesInUse(const std::string& node, const std::vector<std::string>& inUse) {
  asw_.SetVolumesMountedByNode(node, std::set<std::string>(inUse.begin(), inUse.end()));
}

void AttachDetachController::nodeUpdate(const Node& node) {
  addNodeToDswp(node);
  processVolumesInUse(node.metadata.name, api::toStdStrings(node.status.volumesInUse));
}

void AttachDetachController::nodeDelete(const Node& node) {
  if (Status st = dsw_.DeleteNode(node.metadata.name); !st.ok())
    KLOG_INFO("\"Error removing node from desired-state-of-world\" node=" + q(node.metadata.name) + " err=" + q(st.message()));
  processVolumesInUse(node.metadata.name, api::toStdStrings(node.status.volumesInUse));
}

void AttachDetachController::podAdd(const Pod& pod) {
  // DetermineVolumeAction: a terminated pod's volumes go, everyone else's are wanted.
  ProcessPodVolumes(pod, !common::IsPodTerminated(pod));
}

void AttachDetachController::podDelete(const Pod& pod) { ProcessPodVolumes(pod, false); }

bool AttachDetachController::canAttach(const std::string& driver) const {
  auto d = drivers_.store().get(driver);
  return !d || d->spec.attachRequired.value_or(true);
}

Result<VolumeSpec> AttachDetachController::createVolumeSpec(const Pod& pod, const api::core::v1::Volume& v) const {
  const auto bad = [](const std::string& m) { return Status(StatusCode::kInvalid, m); };
  auto spec = common::createInTreeVolumeSpec(pod, v, pvcs_.store(), pvs_.store());
  if (!spec.ok()) return spec.status();
  if (!spec->pv) {
    if (v.csi) return bad("inline CSI volumes are ephemeral: nothing to attach");
    return bad("volume " + v.name + " has no attachable source in this build");
  }
  const auto& pv = *spec->pv;
  if (!pv.spec.csi) {
    KLOG_V(4, "\"Skipping volume: in-tree volume types and their CSI migration are not implemented\" PV=" +
                  q(pv.metadata.name));
    return bad("PV " + pv.metadata.name + " is not a CSI volume");
  }
  return VolumeSpec{pv.metadata.name, pv.spec.csi->driver, pv.spec.csi->volumeHandle, api::toStdStrings(pv.spec.accessModes)};
}

void AttachDetachController::ProcessPodVolumes(const Pod& pod, bool addVolumes) {
  if (pod.spec.volumes.empty()) return;
  const std::string& node = pod.spec.nodeName;
  if (node.empty()) return;
  if (!dsw_.NodeExists(node)) {
    KLOG_V(4, "\"Skipping processing of pod, it is scheduled to node which is not managed by the controller\" logger=\"persistentvolume-attach-detach-controller\" node=" +
                  q(node) + " pod=" + q(pod.metadata.namespace_ + "/" + pod.metadata.name));
    return;
  }
  const PodRef ref{pod.metadata.namespace_, pod.metadata.name, pod.metadata.uid};
  for (const auto& v : pod.spec.volumes) {
    auto spec = createVolumeSpec(pod, v);
    if (!spec.ok()) {
      KLOG_V(10, "\"Error processing volume for pod\" pod=" + q(ref.ns + "/" + ref.name) + " volumeName=" + q(v.name) +
                     " err=" + q(spec.status().message()));
      continue;
    }
    if (!canAttach(spec->driver)) {
      KLOG_V(10, "\"Skipping volume for pod, it does not implement attacher interface\" pod=" + q(ref.ns + "/" + ref.name) +
                     " volumeName=" + q(v.name));
      continue;
    }
    if (addVolumes) {
      if (Status st = dsw_.AddPod(ref, *spec, node); !st.ok())
        KLOG_V(10, "\"Failed to add volume for pod to desiredStateOfWorld\" err=" + q(st.message()));
    } else {
      dsw_.DeletePod(ref.uid, uniqueVolumeName(spec->driver, spec->volumeHandle), node);
    }
  }
}

runtime::SyncResult AttachDetachController::syncPVCByKey(const std::string& key) {
  KLOG_V(5, "\"syncPVCByKey\" pvcKey=" + q(key));
  auto pvc = pvcs_.store().get(key);
  if (!pvc) return runtime::SyncResult::ok();
  if (pvc->spec.volumeName.empty() || pvc->status.phase != "Bound") return runtime::SyncResult::ok();
  for (const auto& pod : pods_.store().byIndex(common::kPodPVCIndex, key)) podAdd(*pod);
  return runtime::SyncResult::ok();
}

void AttachDetachController::findAndRemoveDeletedPods() {
  for (const auto& p : dsw_.GetPodToAdd()) {
    auto pod = pods_.store().get(p.pod.ns, p.pod.name);
    bool remove = !pod || pod->metadata.uid != p.pod.uid || pod->spec.nodeName != p.nodeName ||
                  common::IsPodTerminated(*pod);
    if (!remove && pod) {
      std::string driver, handle;
      if (splitUniqueVolumeName(p.volumeName, driver, handle) && !canAttach(driver)) remove = true;
    }
    if (!remove) continue;
    KLOG_V(4, "\"Removing pod from dsw because it does not exist in pod informer or is terminated\" pod=" +
                  q(p.pod.ns + "/" + p.pod.name) + " volumeName=" + q(p.volumeName) + " node=" + q(p.nodeName));
    dsw_.DeletePod(p.pod.uid, p.volumeName, p.nodeName);
  }
  // findAndAddActivePods: pods whose add was missed or whose claim bound later.
  for (const auto& pod : pods_.store().list())
    if (!common::IsPodTerminated(*pod)) ProcessPodVolumes(*pod, true);
}

bool AttachDetachController::nodeIsHealthy(const std::string& node) const {
  auto n = nodes_.store().get(node);
  if (!n) return false;
  for (const auto& c : n->status.conditions)
    if (c.type == "Ready") return c.status == "True";
  return false;
}

bool AttachDetachController::hasOutOfServiceTaint(const std::string& node) const {
  auto n = nodes_.store().get(node);
  if (!n) return false;
  for (const auto& t : n->spec.taints)
    if (t.key == "node.kubernetes.io/out-of-service") return true;
  return false;
}

void AttachDetachController::podEvent(const PodRef& p, const char* type, const std::string& reason,
                                      const std::string& msg) {
  recorder_->event({"Pod", "v1", p.ns, p.name, p.uid, "", ""}, type, reason, msg);
}

void AttachDetachController::reconcile() {
  std::lock_guard l(reconcileMu_);
  // Detach what no pod on its node wants any more.
  for (const auto& attached : asw_.GetAttachedVolumes()) {
    if (dsw_.VolumeExists(attached.volumeName, attached.nodeName)) continue;
    const std::string key = opKey(attached.volumeName, attached.nodeName);
    bool detaching = false;
    {
      std::lock_guard g(opsMu_);
      auto op = ops_.find(key);
      detaching = op != ops_.end() && op->second.detach;
      if (op != ops_.end() && !detaching) ops_.erase(op);  // an attach no one waits for any more
    }
    if (detaching) {
      detachVolume(attached, false);  // in flight: see whether the attachment is gone
      continue;
    }
    const Clock::Duration elapsed = asw_.SetDetachRequestTime(attached.volumeName, attached.nodeName);
    const bool timeout = elapsed > params_.maxWaitForUnmount;
    const bool healthy = nodeIsHealthy(attached.nodeName);
    const bool forceDetach = !params_.disableForceDetachOnTimeout && !healthy && timeout;
    const bool outOfService = hasOutOfServiceTaint(attached.nodeName);
    if (attached.mountedByNode && !forceDetach && !outOfService) {
      if (!healthy)
        KLOG_V(5, "\"Cannot detach volume because it is still mounted (node is unhealthy)\" volumeName=" +
                      q(attached.volumeName) + " node=" + q(attached.nodeName));
      continue;
    }
    // The node stops reporting the volume first; if that write fails the detach waits.
    asw_.RemoveVolumeFromReportAsAttached(attached.volumeName, attached.nodeName);
    if (Status st = UpdateNodeStatusForNode(attached.nodeName); !st.ok()) {
      KLOG_V(5, "\"UpdateNodeStatusForNode failed while attempting to report volume as detached\" err=" + q(st.message()));
      continue;
    }
    if (outOfService) KLOG_V(2, "\"Node has out-of-service taint\" node=" + q(attached.nodeName));
    detachVolume(attached, !(timeout || outOfService));
  }
  attachDesiredVolumes();
  UpdateNodeStatuses();
  if (!params_.disableReconciliationSync && clock_.now() - lastSync_ >= params_.reconcilerSyncPeriod) {
    sync();
    lastSync_ = clock_.now();
  }
}

// The reconciler's periodic sync (VerifyVolumesAreAttached): a confirmed attachment whose VolumeAttachment is gone
// or not attached any more is marked detached, so the next pass attaches it again if it is still wanted.
void AttachDetachController::sync() {
  for (const auto& a : asw_.GetAttachedVolumes()) {
    if (!a.attachedConfirmed || a.spec.volumeHandle.empty()) continue;
    auto va = attachments_.store().get(getAttachmentName(a.spec.volumeHandle, a.spec.driver, a.nodeName));
    if (va && va->status.attached) continue;
    KLOG_INFO("\"Volume is not attached any more according to its VolumeAttachment: marking it detached\" volumeName=" +
              q(a.volumeName) + " node=" + q(a.nodeName));
    asw_.MarkVolumeAsDetached(a.volumeName, a.nodeName);
  }
}

void AttachDetachController::attachDesiredVolumes() {
  for (const auto& v : dsw_.GetVolumesToAttach()) {
    if (asw_.IsVolumeAttachedToNode(v.volumeName, v.nodeName)) {
      asw_.ResetDetachRequestTime(v.volumeName, v.nodeName);
      continue;
    }
    // isMultiAttachAllowed: no access modes (unknown), or ReadOnlyMany / ReadWriteMany.
    const auto& modes = v.spec.accessModes;
    const bool multiAttach = modes.empty() || std::any_of(modes.begin(), modes.end(), [](const std::string& m) {
                               return m == "ReadWriteMany" || m == "ReadOnlyMany";
                             });
    if (!multiAttach) {
      auto nodes = asw_.GetNodesForAttachedVolume(v.volumeName);
      if (!nodes.empty()) {
        if (!v.multiAttachErrorReported) {
          reportMultiAttachError(v, nodes);
          dsw_.SetMultiAttachError(v.volumeName, v.nodeName);
        }
        continue;
      }
    }
    attachVolume(v);
  }
}

void AttachDetachController::reportMultiAttachError(const VolumeToAttach& v, const std::vector<std::string>& nodes) {
  std::vector<std::string> others;
  for (const auto& n : nodes)
    if (n != v.nodeName) others.push_back(n);
  auto pods = dsw_.GetVolumePodsOnNodes(others, v.volumeName);
  if (pods.empty()) {
    const std::string msg = volumeMsg("Waiting for detach", v.spec.pvName,
                                      "Volume is already exclusively attached to one node, waiting on detach before it "
                                      "can be attached to another node");
    for (const auto& p : v.scheduledPods) podEvent(p, kEventTypeWarning, "FailedAttachVolume", msg);
    KLOG_INFO("\"Waiting for detach: volume is already exclusively attached, waiting on detach before it can be attached "
              "to another node\" volume=" + q(v.volumeName));
    return;
  }
  for (const auto& scheduled : v.scheduledPods) {
    std::string local;
    int otherPods = 0;
    for (const auto& p : pods) {
      if (p.ns == scheduled.ns) local += (local.empty() ? "" : ", ") + p.name;
      else ++otherPods;
    }
    std::string msg;
    if (!local.empty()) {
      msg = "Volume is already used by pod(s) " + local;
      if (otherPods > 0) msg += " and " + std::to_string(otherPods) + " pod(s) in different namespaces";
    } else {
      msg = "Volume is already used by " + std::to_string(otherPods) + " pod(s) in different namespaces";
    }
    podEvent(scheduled, kEventTypeWarning, "FailedAttachVolume", volumeMsg("Waiting for detach", v.spec.pvName, msg));
  }
}

// The CSI attacher's Attach: the VolumeAttachment is created, then the attach completes when the external attacher
// reports it attached (or fails on its attachError, its deletion, or after the CSI timeout). Upstream blocks an
// operation goroutine on that wait; here each reconciler pass looks again, under the same exponential backoff.
void AttachDetachController::attachVolume(const VolumeToAttach& v) {
  const std::string key = opKey(v.volumeName, v.nodeName);
  const std::string vaName = getAttachmentName(v.spec.volumeHandle, v.spec.driver, v.nodeName);
  const auto fail = [&](const std::string& err) {
    {
      std::lock_guard g(opsMu_);
      ops_.erase(key);
    }
    backoff_.done(key, true);
    const std::string msg = volumeMsg("AttachVolume.Attach failed", v.spec.pvName, ": " + err);
    KLOG_ERROR("\"" + msg + "\"");
    for (const auto& p : v.scheduledPods) podEvent(p, kEventTypeWarning, "FailedAttachVolume", msg);
  };
  bool started;
  Clock::TimePoint since;
  {
    std::lock_guard g(opsMu_);
    auto it = ops_.find(key);
    started = it != ops_.end();
    if (started) since = it->second.started;
  }
  if (!started) {
    if (!backoff_.mayRun(key)) return;  // postponed: exponential backoff
    KLOG_INFO("\"attacherDetacher.AttachVolume started\" volumeName=" + q(v.volumeName) + " node=" + q(v.nodeName));
    if (!attachments_.store().get(vaName)) {
      VolumeAttachment va;
      va.metadata.name = vaName;
      va.spec.nodeName = v.nodeName;
      va.spec.attacher = v.spec.driver;
      va.spec.source.persistentVolumeName = v.spec.pvName;
      auto r = client::create<VolumeAttachment>(*client_, "", va);
      if (!r.ok() && r.status().code() != StatusCode::kAlreadyExists) {
        asw_.MarkVolumeAsUncertain(v.volumeName, v.spec, v.nodeName);
        return fail("kubernetes.io/csi: attacher.Attach failed: " + r.status().message());
      }
      KLOG_V(4, "\"kubernetes.io/csi: attachment [" + vaName + "] for volume [" + v.spec.volumeHandle +
                    "] created successfully\"");
    }
    asw_.MarkVolumeAsUncertain(v.volumeName, v.spec, v.nodeName);
    since = clock_.now();
    std::lock_guard g(opsMu_);
    ops_[key] = Operation{since, false};
  }
  auto va = attachments_.store().get(vaName);
  if (va && va->metadata.deletionTimestamp) return fail("volume attachment is being deleted");
  if (va && va->status.attached) {
    {
      std::lock_guard g(opsMu_);
      ops_.erase(key);
    }
    backoff_.done(key, false);
    asw_.MarkVolumeAsAttached(v.volumeName, v.spec, v.nodeName);
    const std::string msg = volumeMsg("AttachVolume.Attach succeeded", v.spec.pvName, "");
    KLOG_INFO("\"" + msg + "\" node=" + q(v.nodeName));
    for (const auto& p : v.scheduledPods) podEvent(p, kEventTypeNormal, "SuccessfulAttachVolume", msg);
    return;
  }
  if (va && va->status.attachError) return fail(va->status.attachError->message);
  if (clock_.now() - since > params_.csiTimeout)
    return fail("timed out waiting for external-attacher of " + v.spec.driver + " CSI driver to attach volume " +
                v.spec.volumeHandle);
}

// The CSI attacher's Detach: the VolumeAttachment is deleted; the detach completes once it is gone.
void AttachDetachController::detachVolume(const AttachedVolume& a, bool verifySafeToDetach) {
  const std::string key = opKey(a.volumeName, a.nodeName);
  std::string driver = a.spec.driver, handle = a.spec.volumeHandle;
  if (driver.empty() && !splitUniqueVolumeName(a.volumeName, driver, handle)) {
    KLOG_V(4, "\"Not a CSI volume: detaching in-tree volume types is not implemented\" volumeName=" + q(a.volumeName));
    return;
  }
  const std::string vaName = getAttachmentName(handle, driver, a.nodeName);
  const auto fail = [&](const std::string& err) {
    {
      std::lock_guard g(opsMu_);
      ops_.erase(key);
    }
    backoff_.done(key, true);
    asw_.AddVolumeToReportAsAttached(a.volumeName, a.nodeName);  // still attached as far as we know
    KLOG_ERROR("\"DetachVolume.Detach failed for volume " + q(a.volumeName) + "\" node=" + q(a.nodeName) +
               " err=" + q(err));
  };
  std::optional<Clock::TimePoint> since;
  {
    std::lock_guard g(opsMu_);
    if (auto it = ops_.find(key); it != ops_.end()) since = it->second.started;
  }
  if (!since) {
    if (!backoff_.mayRun(key)) return;
    if (verifySafeToDetach) {
      auto node = nodes_.store().get(a.nodeName);
      if (node && std::find(node->status.volumesInUse.begin(), node->status.volumesInUse.end(), a.volumeName) !=
                      node->status.volumesInUse.end())
        return fail("volume is still in use by node, according to Node status");
      KLOG_INFO("\"attacherDetacher.DetachVolume started\" node=" + q(a.nodeName) + " volumeName=" + q(a.volumeName));
    } else {
      KLOG_INFO("\"attacherDetacher.DetachVolume started: node has out-of-service taint or the maximum unmount wait "
                "passed, skip verifying that the volume is safe to detach\" node=" + q(a.nodeName) + " volumeName=" +
                q(a.volumeName));
    }
    Status st = client::remove<VolumeAttachment>(*client_, "", vaName);
    if (!st.ok() && st.code() != StatusCode::kNotFound) return fail(st.message());
    since = clock_.now();
    std::lock_guard g(opsMu_);
    ops_[key] = Operation{*since, true};
  }
  auto va = attachments_.store().get(vaName);
  if (!va) {
    {
      std::lock_guard g(opsMu_);
      ops_.erase(key);
    }
    backoff_.done(key, false);
    asw_.MarkVolumeAsDetached(a.volumeName, a.nodeName);
    KLOG_INFO("\"DetachVolume.Detach succeeded for volume " + q(a.volumeName) + "\" node=" + q(a.nodeName));
    return;
  }
  if (va->status.detachError) return fail(va->status.detachError->message);
  if (clock_.now() - *since > params_.csiTimeout)
    return fail("timed out waiting for external-attacher of " + driver + " CSI driver to detach volume " + handle);
}

Status AttachDetachController::updateNodeStatus(const std::string& node, const std::vector<std::string>& volumes) {
  std::string list = "[";
  for (size_t i = 0; i < volumes.size(); ++i)
    list += std::string(i ? "," : "") + "{\"devicePath\":\"\",\"name\":" + jsonString(volumes[i]) + "}";
  list += "]";
  const std::string body = "{\"status\":{\"volumesAttached\":" + (volumes.empty() ? std::string("null") : list) + "}}";
  auto r = client::patch<Node>(*client_, "", node, client::PatchType::kStrategicMerge, body, "status");
  if (!r.ok()) return r.status();
  KLOG_V(4, "\"Updating status for node succeeded\" node=" + q(node) + " patchBytes=" + q(body));
  return Status::Ok();
}

Status AttachDetachController::UpdateNodeStatusForNode(const std::string& node) {
  auto volumes = asw_.GetVolumesToReportAttachedForNode(node);
  if (!volumes) return Status::Ok();
  if (!nodes_.store().get(node)) {
    KLOG_V(2, "\"Could not update node status. Failed to find node in NodeInformer cache\" node=" + q(node));
    return Status::Ok();
  }
  Status st = updateNodeStatus(node, *volumes);
  if (st.code() == StatusCode::kNotFound) return Status::Ok();
  if (!st.ok()) {
    asw_.SetNodeStatusUpdateNeeded(node);
    KLOG_V(2, "\"Could not update node status; re-marking for update\" node=" + q(node) + " err=" + q(st.message()));
  }
  return st;
}

void AttachDetachController::UpdateNodeStatuses() {
  for (const auto& [node, volumes] : asw_.GetVolumesToReportAttached()) {
    if (!nodes_.store().get(node)) {
      KLOG_V(2, "\"Could not update node status. Failed to find node in NodeInformer cache\" node=" + q(node));
      continue;
    }
    Status st = updateNodeStatus(node, volumes);
    if (!st.ok() && st.code() != StatusCode::kNotFound) {
      asw_.SetNodeStatusUpdateNeeded(node);
      KLOG_V(2, "\"Could not update node status; re-marking for update\" node=" + q(node) + " err=" + q(st.message()));
    }
  }
}

}  // namespace kcm::controllers::volume::attachdetach
