#include "controllers/volume/expand/expand_controller.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include <nlohmann/json.hpp>

#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"

namespace kcm::controllers::volume::expand {
namespace {

using api::Quantity;
using json = nlohmann::json;
using Condition = api::core::v1::PersistentVolumeClaimCondition;

constexpr const char* kResourceStorage = "storage";
// controller/volume/events and kubelet/events reasons.
constexpr const char* kExternalExpanding = "ExternalExpanding";
constexpr const char* kVolumeResizeFailed = "VolumeResizeFailed";
constexpr const char* kVolumeResizeSuccess = "VolumeResizeSuccessful";
// ClaimResourceStatus values of status.allocatedResourceStatuses.
constexpr const char* kControllerResizeInProgress = "ControllerResizeInProgress";
constexpr const char* kControllerResizeInfeasible = "ControllerResizeInfeasible";
constexpr const char* kNodeResizePending = "NodeResizePending";
constexpr const char* kNodeResizeInProgress = "NodeResizeInProgress";
constexpr const char* kNodeResizeInfeasible = "NodeResizeInfeasible";
// The claim conditions that belong to resizing (util.knownResizeConditions).
constexpr const char* kResizing = "Resizing";
constexpr const char* kFileSystemResizePending = "FileSystemResizePending";

std::string keyOf(const api::meta::v1::ObjectMeta& m) { return m.namespace_ + "/" + m.name; }
// util.GetPersistentVolumeClaimQualifiedName.
std::string GetPersistentVolumeClaimQualifiedName(const PersistentVolumeClaim& pvc) { return keyOf(pvc.metadata); }
std::string goQuote(const std::string& s) { return log::quote(s); }  // Go's %q for the names we print

// The storage entry of a resource list; a missing one is zero, as a Go map read gives.
Quantity storageOf(const api::StringMap<Quantity>& list) {
  auto it = list.find(kResourceStorage);
  return it == list.end() ? Quantity() : it->second;
}
// Quantity.String(): a zero value prints "0".
std::string text(const Quantity& v) { return v.str().empty() ? "0" : v.str(); }

bool isKnownResizeCondition(const std::string& type) {
  return type == kFileSystemResizePending || type == kResizing || type == "ControllerResizeError" ||
         type == "NodeResizeError";
}

// ---- CSI migration (csi-translation-lib's table, csimigration.PluginManager). Every plugin listed is migrated
// and its migration on at the pin (IsMigrationEnabledForPlugin is true for all seven).
struct MigratedPlugin {
  const char* inTreePluginName;
  const char* csiDriverName;
  bool (*canSupport)(const PersistentVolume&);
};
const MigratedPlugin kMigratedPlugins[] = {
    {"kubernetes.io/gce-pd", "pd.csi.storage.gke.io", [](const PersistentVolume& v) { return bool(v.spec.gcePersistentDisk); }},
    {"kubernetes.io/aws-ebs", "ebs.csi.aws.com", [](const PersistentVolume& v) { return bool(v.spec.awsElasticBlockStore); }},
    {"kubernetes.io/cinder", "cinder.csi.openstack.org", [](const PersistentVolume& v) { return bool(v.spec.cinder); }},
    {"kubernetes.io/azure-disk", "disk.csi.azure.com", [](const PersistentVolume& v) { return bool(v.spec.azureDisk); }},
    {"kubernetes.io/azure-file", "file.csi.azure.com", [](const PersistentVolume& v) { return bool(v.spec.azureFile); }},
    {"kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com", [](const PersistentVolume& v) { return bool(v.spec.vsphereVolume); }},
    {"kubernetes.io/portworx-volume", "pxd.portworx.com", [](const PersistentVolume& v) { return bool(v.spec.portworxVolume); }},
};

Result<std::string> GetInTreePluginNameFromSpec(const PersistentVolume& pv) {
  for (const auto& p : kMigratedPlugins)
    if (p.canSupport(pv)) return std::string(p.inTreePluginName);
  return Status(StatusCode::kNotFound, "could not find in-tree plugin name from persistent volume " + pv.metadata.name);
}

bool IsMigratable(const PersistentVolume& pv) { return GetInTreePluginNameFromSpec(pv).ok(); }

Result<std::string> GetCSINameFromInTreeName(const std::string& pluginName) {
  for (const auto& p : kMigratedPlugins)
    if (pluginName == p.inTreePluginName) return std::string(p.csiDriverName);
  return Status(StatusCode::kNotFound, "could not find CSI Driver name for plugin " + pluginName);
}

// ---- VolumePluginMgr.FindExpandablePluginBySpec over the plugins kube-controller-manager probes for this
// controller (ProbeExpandableVolumePlugins): none of hostpath, nfs, fc, iscsi and csi implements
// ExpandableVolumePlugin, so no plugin ever matches, and only a FlexVolume gets the no-op expandable plugin
// (named after its driver) because kubelet expands it. Returns that plugin's name, or nullopt for "no plugin".
std::optional<std::string> FindExpandablePluginBySpec(const PersistentVolume& pv) {
  if (!pv.spec.flexVolume) return std::nullopt;
  KLOG_V(4, "\"FindExpandablePluginBySpec -> returning noopExpandableVolumePluginInstance\" specName=" +
                goQuote(pv.metadata.name));
  return pv.spec.flexVolume->driver;
}

// util.GetFullQualifiedPluginNameForVolume.
std::string GetFullQualifiedPluginNameForVolume(const std::string& pluginName, const PersistentVolume& pv) {
  return pv.spec.csi ? pluginName + ":" + pv.spec.csi->driver : pluginName;
}

// util.CheckVolumeModeFilesystem: anything but an explicit Block counts as a filesystem.
bool CheckVolumeModeFilesystem(const PersistentVolume& pv) {
  return !(pv.spec.volumeMode && *pv.spec.volumeMode == "Block");
}

// storage_operation_duration_seconds (pkg/volume/util/metrics.go, OperationCompleteHook).
void observeStorageOperation(const std::string& plugin, const std::string& operation, bool failed, double seconds) {
  static const std::vector<double> kBuckets = {.1, .25, .5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600};
  metrics::Registry::global()
      .histogram("storage_operation_duration_seconds", "[BETA] Storage operation duration", kBuckets,
                 {{"migrated", "false"},
                  {"operation_name", operation},
                  {"status", failed ? "fail-unknown" : "success"},
                  {"volume_plugin", plugin}})
      .observe(seconds);
}

// ---- strategicpatch.CreateTwoWayMergePatch for the PVC and PV writes below: fields added or changed, null for
// fields gone, nested objects diffed, and lists with a patch merge key diffed element by element (changed
// elements as their own diff plus the key, removed ones as {"$patch":"delete"} after the rest, and the new order
// in $setElementOrder/<list>); any other list is replaced whole.
const char* patchMergeKey(const std::string& field) {
  if (field == "conditions") return "type";
  if (field == "ownerReferences") return "uid";
  return nullptr;
}

json diffMaps(const json& from, const json& to);

void diffListsOfMaps(const std::string& field, const std::string& mk, const json& from, const json& to, json& out) {
  if (from.empty()) {
    if (!to.empty()) out[field] = to;
    return;
  }
  auto keyOfElement = [&](const json& e) { return e.is_object() && e.contains(mk) ? e[mk] : json(); };
  auto findByKey = [&](const json& list, const json& key) -> const json* {
    for (const auto& e : list)
      if (keyOfElement(e) == key) return &e;
    return nullptr;
  };
  json patch = json::array();
  for (const auto& m : to) {
    const json* o = findByKey(from, keyOfElement(m));
    if (!o) {
      patch.push_back(m);
      continue;
    }
    json d = diffMaps(*o, m);
    if (d.empty()) continue;
    d[mk] = keyOfElement(m);
    patch.push_back(std::move(d));
  }
  std::vector<json> removed;
  for (const auto& o : from)
    if (!findByKey(to, keyOfElement(o))) removed.push_back(keyOfElement(o));
  std::sort(removed.begin(), removed.end(), [](const json& a, const json& b) {
    return (a.is_string() ? a.get<std::string>() : a.dump()) < (b.is_string() ? b.get<std::string>() : b.dump());
  });
  for (auto& k : removed) patch.push_back({{"$patch", "delete"}, {mk, std::move(k)}});
  bool orderSame = from.size() == to.size();
  for (size_t i = 0; orderSame && i < to.size(); ++i) orderSame = keyOfElement(from[i]) == keyOfElement(to[i]);
  if (!patch.empty()) out[field] = patch;
  if ((!patch.empty() || !orderSame) && !to.empty()) {
    json order = json::array();
    for (const auto& m : to) order.push_back({{mk, keyOfElement(m)}});
    out["$setElementOrder/" + field] = std::move(order);
  }
}

json diffMaps(const json& from, const json& to) {
  json out = json::object();
  for (const auto& [k, v] : to.items()) {
    auto it = from.find(k);
    if (it == from.end()) {
      out[k] = v;
    } else if (*it == v) {
      continue;
    } else if (it->is_object() && v.is_object()) {
      json d = diffMaps(*it, v);
      if (!d.empty()) out[k] = std::move(d);
    } else if (const char* mk = patchMergeKey(k); mk && it->is_array() && v.is_array()) {
      diffListsOfMaps(k, mk, *it, v, out);
    } else {
      out[k] = v;
    }
  }
  for (const auto& [k, v] : from.items())
    if (!to.contains(k)) out[k] = nullptr;
  return out;
}

template <class T>
json asJson(const T& obj) {
  return json::parse(api::core::v1::toJson(obj), nullptr, false);
}

// ---- pkg/volume/util/resize_util.go.

// PatchPV: the two-way patch from oldPV to newPV, strategic merge on the PV itself.
Result<PersistentVolume> PatchPV(client::RestClient& c, const PersistentVolume& oldPV, const PersistentVolume& newPV) {
  const std::string body = diffMaps(asJson(oldPV), asJson(newPV)).dump();
  auto r = client::patch<PersistentVolume>(c, "", oldPV.metadata.name, client::PatchType::kStrategicMerge, body);
  if (!r.ok())
    return Status(r.status().code(),
                  "error Patching PV " + goQuote(oldPV.metadata.name) + " with error : " + r.status().message());
  return r;
}

Result<PersistentVolume> UpdatePVSize(client::RestClient& c, const PersistentVolume& pv, const Quantity& newSize) {
  PersistentVolume clone = pv;
  clone.spec.capacity[kResourceStorage] = newSize;
  return PatchPV(c, pv, clone);
}

Status AddAnnPreResizeCapacity(client::RestClient& c, const PersistentVolume& pv, const Quantity& oldCapacity) {
  if (pv.metadata.annotations.contains(kAnnPreResizeCapacity)) return Status::Ok();
  PersistentVolume clone = pv;
  clone.metadata.annotations[kAnnPreResizeCapacity] = text(oldCapacity);
  return PatchPV(c, pv, clone).status();
}

Status DeleteAnnPreResizeCapacity(client::RestClient& c, const PersistentVolume& pv) {
  if (!pv.metadata.annotations.contains(kAnnPreResizeCapacity)) return Status::Ok();
  PersistentVolume clone = pv;
  clone.metadata.annotations.erase(kAnnPreResizeCapacity);
  return PatchPV(c, pv, clone).status();
}

// createPVCPatch with the resourceVersion check: the patch carries the old claim's resourceVersion, so a claim
// changed meanwhile is a conflict, as an update would be.
std::string createPVCPatch(const PersistentVolumeClaim& oldPVC, const PersistentVolumeClaim& newPVC) {
  json patch = diffMaps(asJson(oldPVC), asJson(newPVC));
  if (!oldPVC.metadata.resourceVersion.empty()) patch["metadata"]["resourceVersion"] = oldPVC.metadata.resourceVersion;
  return patch.dump();
}

// PatchPVCStatus: strategic merge through the status subresource (which keeps metadata changes too: the resizer
// annotation travels this way).
Result<PersistentVolumeClaim> PatchPVCStatus(client::RestClient& c, const PersistentVolumeClaim& oldPVC,
                                             const PersistentVolumeClaim& newPVC) {
  auto r = client::patch<PersistentVolumeClaim>(c, oldPVC.metadata.namespace_, oldPVC.metadata.name,
                                                client::PatchType::kStrategicMerge, createPVCPatch(oldPVC, newPVC),
                                                "status");
  if (!r.ok())
    return Status(r.status().code(), "patchPVCStatus failed to patch PVC " + goQuote(oldPVC.metadata.name) + ": " +
                                         r.status().message());
  return r;
}

void setResizer(PersistentVolumeClaim& pvc, const std::string& resizerName) {
  auto it = pvc.metadata.annotations.find(kVolumeResizerKey);
  if (it != pvc.metadata.annotations.end() && it->second == resizerName) return;
  pvc.metadata.annotations[kVolumeResizerKey] = resizerName;
}

Result<PersistentVolumeClaim> SetClaimResizer(client::RestClient& c, const PersistentVolumeClaim& pvc,
                                              const std::string& resizerName) {
  PersistentVolumeClaim updated = pvc;
  setResizer(updated, resizerName);
  return PatchPVCStatus(c, pvc, updated);
}

// MergeResizeConditionOnPVC: conditions that are not about resizing stay; a resize condition asked for replaces
// one of its type when the status differs (else the old one, with its timestamps, stays); other resize
// conditions stay only with keepOldResizeConditions; those asked for and not present go last.
void MergeResizeConditionOnPVC(PersistentVolumeClaim& pvc, const std::vector<Condition>& resizeConditions,
                               bool keepOldResizeConditions) {
  std::vector<std::pair<Condition, bool>> wanted;  // condition, processed
  for (const auto& c : resizeConditions) {
    auto same = std::find_if(wanted.begin(), wanted.end(), [&](const auto& w) { return w.first.type == c.type; });
    if (same != wanted.end()) same->first = c;
    else wanted.emplace_back(c, false);
  }
  std::vector<Condition> merged;
  for (const auto& existing : pvc.status.conditions) {
    if (!isKnownResizeCondition(existing.type)) {
      merged.push_back(existing);
      continue;
    }
    auto w = std::find_if(wanted.begin(), wanted.end(), [&](const auto& x) { return x.first.type == existing.type; });
    if (w != wanted.end()) {
      merged.push_back(w->first.status != existing.status ? w->first : existing);
      w->second = true;
    } else if (keepOldResizeConditions) {
      merged.push_back(existing);
    }
  }
  for (const auto& [c, processed] : wanted)
    if (!processed) merged.push_back(c);
  pvc.status.conditions = std::move(merged);
}

Condition condition(const char* type, api::Time at, const std::string& message = "") {
  Condition c;
  c.type = type;
  c.status = "True";
  c.lastTransitionTime = at;
  c.message = message;
  return c;
}

Result<PersistentVolumeClaim> MarkControllerReisizeInProgress(client::RestClient& c, const PersistentVolumeClaim& pvc,
                                                              const std::string& resizerName, const Quantity& newSize,
                                                              api::Time now) {
  PersistentVolumeClaim updated = pvc;
  MergeResizeConditionOnPVC(updated, {condition(kResizing, now)}, false);
  updated.status.allocatedResourceStatuses[kResourceStorage] = kControllerResizeInProgress;
  updated.status.allocatedResources[kResourceStorage] = newSize;
  setResizer(updated, resizerName);
  return PatchPVCStatus(c, pvc, updated);
}

Result<PersistentVolumeClaim> MarkForFSResize(client::RestClient& c, const PersistentVolumeClaim& pvc, api::Time now) {
  PersistentVolumeClaim updated = pvc;
  updated.status.allocatedResourceStatuses[kResourceStorage] = kNodeResizePending;
  MergeResizeConditionOnPVC(
      updated,
      {condition(kFileSystemResizePending, now,
                 "Waiting for user to (re-)start a pod to finish file system resize of volume on node.")},
      true);
  return PatchPVCStatus(c, pvc, updated);
}

// MarkResizeFinished (MarkFSResizeFinished): the new capacity, no storage resize status, no resize conditions.
Result<PersistentVolumeClaim> MarkResizeFinished(client::RestClient& c, const PersistentVolumeClaim& pvc,
                                                 const Quantity& newSize) {
  PersistentVolumeClaim updated = pvc;
  updated.status.capacity[kResourceStorage] = newSize;
  updated.status.allocatedResourceStatuses.erase(kResourceStorage);
  MergeResizeConditionOnPVC(updated, {}, false);
  return PatchPVCStatus(c, pvc, updated);
}

}  // namespace

Controller::Controller(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
                       informers::SharedInformer<PersistentVolumeClaim>& pvcs, Clock& clock)
    : client_(std::move(client)), recorder_(std::move(recorder)), pvcs_(pvcs), clock_(clock),
      base_("volume_expand", [this](const std::string& key) { return syncHandler(key); }, clock) {
  informers::EventHandler<PersistentVolumeClaim> h;
  h.onAdd = [this](const auto& pvc) { enqueuePVC(*pvc); };
  h.onUpdate = [this](const auto& oldPVC, const auto& newPVC) { onUpdate(*oldPVC, *newPVC); };
  // A tombstone (a delete seen only at a relist) is not a claim to upstream's handler: ignored.
  h.onDelete = [this](const auto& pvc, bool finalStateUnknown) {
    if (!finalStateUnknown) enqueuePVC(*pvc);
  };
  registrations_.push_back(pvcs_.addEventHandler(h));
}

void Controller::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting expand controller\"");
  onStop_ = std::make_unique<std::stop_callback<std::function<void()>>>(
      stop, std::function<void()>([] { KLOG_INFO("\"Shutting down expand controller\""); }));
  base_.start(workers, stop, {[this] { return pvcs_.hasSynced(); }});
}

void Controller::enqueuePVC(const PersistentVolumeClaim& pvc) {
  if (pvc.status.phase == "Bound") base_.enqueue(keyOf(pvc.metadata));
}

// Two reasons to look at an updated claim: its request grew (a volume to expand), or its capacity grew (its
// volume was probably just resized on the node, so the PV's pre-resize annotation may go).
void Controller::onUpdate(const PersistentVolumeClaim& oldPVC, const PersistentVolumeClaim& newPVC) {
  const Quantity oldReq = storageOf(oldPVC.spec.resources.requests), oldCap = storageOf(oldPVC.status.capacity);
  const Quantity newReq = storageOf(newPVC.spec.resources.requests), newCap = storageOf(newPVC.status.capacity);
  if (newReq.compare(oldReq) > 0 || newCap.compare(oldCap) > 0) enqueuePVC(newPVC);
}

runtime::SyncResult Controller::syncHandler(const std::string& key) {
  auto pvc = pvcs_.store().get(key);
  if (!pvc) return runtime::SyncResult::ok();

  auto pv = getPersistentVolume(*pvc);
  if (!pv.ok()) {
    KLOG_V(5, "\"Error getting Persistent Volume for PVC from informer\" pvcKey=" + goQuote(key) + " pvcUID=" +
                  goQuote(pvc->metadata.uid) + " err=" + goQuote(pv.status().message()));
    return runtime::SyncResult::error(pv.status());
  }

  const auto& ref = pv->spec.claimRef;
  if (!ref || pvc->metadata.namespace_ != ref->namespace_ || pvc->metadata.uid != ref->uid) {
    Status err(StatusCode::kInternal, "persistent Volume is not bound to PVC being updated : " + key);
    KLOG_V(4, "\"\" err=" + goQuote(err.message()));
    return runtime::SyncResult::error(err);
  }

  // Nothing to do unless the request is above the capacity, or the PV still carries its pre-resize capacity.
  const Quantity pvcRequestSize = storageOf(pvc->spec.resources.requests);
  const Quantity pvcStatusSize = storageOf(pvc->status.capacity);
  if (pvcRequestSize.compare(pvcStatusSize) <= 0 && !pv->metadata.annotations.contains(kAnnPreResizeCapacity))
    return runtime::SyncResult::ok();

  // In-tree volumes whose plugin moved to CSI: the CSI driver's external resizer is named on the claim.
  if (IsMigratable(*pv)) {
    auto inTreePluginName = GetInTreePluginNameFromSpec(*pv);
    if (!inTreePluginName.ok()) {
      KLOG_V(4, "\"Error getting in-tree plugin name from persistent volume\" volumeName=" +
                    goQuote(pv->metadata.name) + " err=" + goQuote(inTreePluginName.status().message()));
      return runtime::SyncResult::error(inTreePluginName.status());
    }
    event(*pvc, client::kEventTypeNormal, kExternalExpanding,
          "CSI migration enabled for " + *inTreePluginName + "; waiting for external resizer to expand the pvc");
    auto csiResizerName = GetCSINameFromInTreeName(*inTreePluginName);
    if (!csiResizerName.ok()) {
      const std::string errorMsg =
          "error getting CSI driver name for pvc " + key + ", with error " + csiResizerName.status().message();
      event(*pvc, client::kEventTypeWarning, kExternalExpanding, errorMsg);
      return runtime::SyncResult::error(Status(csiResizerName.status().code(), errorMsg));
    }
    auto updated = SetClaimResizer(*client_, *pvc, *csiResizerName);
    if (!updated.ok()) {
      const std::string errorMsg =
          "error setting resizer annotation to pvc " + key + ", with error " + updated.status().message();
      event(*pvc, client::kEventTypeWarning, kExternalExpanding, errorMsg);
      return runtime::SyncResult::error(Status(updated.status().code(), errorMsg));
    }
    return runtime::SyncResult::ok();
  }

  auto volumePlugin = FindExpandablePluginBySpec(*pv);
  if (!volumePlugin) {
    // No plugin here can expand it (CSI volumes included): an external controller will, so no retry either.
    event(*pvc, client::kEventTypeNormal, kExternalExpanding, "waiting for an external controller to expand this PVC");
    KLOG_INFO("\"Waiting for an external controller to expand the PVC\" pvcKey=" + goQuote(key) + " pvcUID=" +
              goQuote(pvc->metadata.uid));
    return runtime::SyncResult::ok();
  }
  if (Status st = expand(*pvc, *pv, *volumePlugin); !st.ok()) return runtime::SyncResult::error(st);
  return runtime::SyncResult::ok();
}

Status Controller::expand(const PersistentVolumeClaim& pvc, const PersistentVolume& pv, const std::string& resizerName) {
  // The node finished: the pre-resize annotation has served its purpose.
  if (isNodeExpandComplete(pvc, pv) && pv.metadata.annotations.contains(kAnnPreResizeCapacity))
    return DeleteAnnPreResizeCapacity(*client_, pv);
  // RecoverVolumeExpansionFailure is GA and locked on at the pin: always the expand-and-recover operation.
  return runExpandAndRecoverVolume(pvc, pv, resizerName);
}

Status Controller::runExpandAndRecoverVolume(const PersistentVolumeClaim& pvc, const PersistentVolume& pv,
                                             const std::string& resizerName) {
  auto volumePlugin = FindExpandablePluginBySpec(pv);
  if (!volumePlugin) {
    Status err(StatusCode::kNotFound, "can not find plugin for expanding volume: " +
                                          goQuote(GetPersistentVolumeClaimQualifiedName(pvc)));
    KLOG_ERROR("\"Error starting ExpandVolume for pvc\" err=" + goQuote(err.message()) + " PVC=" +
               goQuote(keyOf(pvc.metadata)));
    return err;
  }
  const auto requestTime = clock_.now();
  KLOG_V(5, "\"Starting ExpandVolume for volume\" volumeName=" + goQuote(GetPersistentVolumeClaimQualifiedName(pvc)));
  inTreeResizeResponse resp = expandAndRecoverFunction(pvc, pv, resizerName);
  if (!resp.err.ok()) event(pvc, client::kEventTypeWarning, kVolumeResizeFailed, resp.err.message());
  observeStorageOperation(GetFullQualifiedPluginNameForVolume(*volumePlugin, pv), "expand_volume", !resp.err.ok(),
                          std::chrono::duration<double>(clock_.now() - requestTime).count());
  return resp.err;
}

Controller::inTreeResizeResponse Controller::expandAndRecoverFunction(const PersistentVolumeClaim& pvc,
                                                                      const PersistentVolume& pv,
                                                                      const std::string& resizerName) {
  const Quantity pvcSpecSize = storageOf(pvc.spec.resources.requests);
  const Quantity pvSize = storageOf(pv.spec.capacity);
  inTreeResizeResponse resp{pvc, pv, Status::Ok(), false};

  // By default the volume is expanded to what the claim asks for.
  Quantity newSize = pvcSpecSize;
  std::string resizeStatus;
  if (auto it = pvc.status.allocatedResourceStatuses.find(kResourceStorage);
      it != pvc.status.allocatedResourceStatuses.end())
    resizeStatus = it->second;
  std::optional<Quantity> allocatedSize;
  if (auto it = pvc.status.allocatedResources.find(kResourceStorage); it != pvc.status.allocatedResources.end())
    allocatedSize = it->second;

  if (pvSize.compare(pvcSpecSize) < 0) {
    // The volume is not that large yet. An expansion already under way resumes at the size it recorded.
    if (resizeStatus == kControllerResizeInProgress || resizeStatus == kNodeResizePending ||
        resizeStatus == kNodeResizeInProgress || resizeStatus == kNodeResizeInfeasible) {
      if (allocatedSize) newSize = *allocatedSize;
    }
  } else if (resizeStatus == kNodeResizeInProgress || resizeStatus == kNodeResizePending) {
    // The volume is large enough and the node has the rest of the work: a spurious update.
    return resp;
  } else if (resizeStatus == kNodeResizeInfeasible) {
    // The node gave up; it may try again now that the controller side is known to be done.
    resp.err = markForPendingNodeExpansion(resp.pvc, pv);
    return resp;
  } else if (resizeStatus == kControllerResizeInProgress || resizeStatus == kControllerResizeInfeasible) {
    // Expanded but not recorded, or the user shrank the request afterwards: finish at the recorded size.
    if (allocatedSize) newSize = *allocatedSize;
  } else if (resizeStatus.empty() && allocatedSize) {
    newSize = *allocatedSize;
  }

  auto inProgress = MarkControllerReisizeInProgress(*client_, pvc, resizerName, newSize, now());
  if (!inProgress.ok()) {
    resp.err = Status(inProgress.status().code(), "error updating pvc " + GetPersistentVolumeClaimQualifiedName(pvc) +
                                                      " with resize in progress: " + inProgress.status().message());
    return resp;
  }
  PersistentVolumeClaim claim = std::move(*inProgress);

  // ExpandVolumeDevice(spec, newSize, status capacity) of the no-op expandable plugin: the size asked for, and
  // nothing else done here.
  const Quantity updatedSize = newSize;
  resp.resizeCalled = true;

  auto updatedPV = UpdatePVSize(*client_, pv, updatedSize);
  if (!updatedPV.ok()) {
    // The claim stays ControllerResizeInProgress, so the next attempt resumes at allocatedResources.
    resp.err = Status(updatedPV.status().code(), "error updating pv for pvc " +
                                                     GetPersistentVolumeClaimQualifiedName(claim) + ": " +
                                                     updatedPV.status().message());
    return resp;
  }
  resp.pv = std::move(*updatedPV);

  // The no-op plugin requires a filesystem resize, which only a filesystem volume gets.
  const bool requiresFSResize = true;
  if (!requiresFSResize || !CheckVolumeModeFilesystem(pv)) {
    auto finished = MarkResizeFinished(*client_, claim, updatedSize);
    if (!finished.ok()) {
      resp.err = Status(finished.status().code(), "error marking pvc " + GetPersistentVolumeClaimQualifiedName(claim) +
                                                      " as resized: " + finished.status().message());
      return resp;
    }
    resp.pvc = std::move(*finished);
    event(resp.pvc, client::kEventTypeNormal, kVolumeResizeSuccess,
          "ExpandVolume succeeded for volume " + GetPersistentVolumeClaimQualifiedName(resp.pvc));
    return resp;
  }
  Status st = markForPendingNodeExpansion(claim, resp.pv);
  resp.pvc = claim;
  if (!st.ok())
    resp.err = Status(st.code(), "error marking pvc " + GetPersistentVolumeClaimQualifiedName(claim) +
                                     " for node expansion: " + st.message());
  return resp;
}

Status Controller::markForPendingNodeExpansion(PersistentVolumeClaim& pvc, const PersistentVolume& pv) {
  auto marked = MarkForFSResize(*client_, pvc, now());
  if (!marked.ok())
    return Status(marked.status().code(), "error marking pvc " + GetPersistentVolumeClaimQualifiedName(pvc) +
                                              " for node expansion: " + marked.status().message());
  pvc = std::move(*marked);
  // The claim's capacity before the resize goes on the PV: should the claim be deleted while the node has not
  // finished, a claim bound to the PV again still gets the node expansion.
  const Quantity oldCapacity = storageOf(pvc.status.capacity);
  if (Status st = AddAnnPreResizeCapacity(*client_, pv, oldCapacity); !st.ok()) {
    Status detailed(st.code(), "error updating pv " + pv.metadata.name + " annotation (" + kAnnPreResizeCapacity +
                                   ") with pre-resize capacity " + text(oldCapacity) + ": " + st.message());
    KLOG_WARNING(detailed.message());
    return detailed;
  }
  return Status::Ok();
}

// The claim's PV, read from the apiserver (upstream has no PV informer here).
Result<PersistentVolume> Controller::getPersistentVolume(const PersistentVolumeClaim& pvc) {
  const std::string& volumeName = pvc.spec.volumeName;
  // client-go refuses a GET without a name before sending anything.
  if (volumeName.empty())
    return Status(StatusCode::kInvalidArgument, "failed to get PV \"\": resource name may not be empty");
  auto pv = client::get<PersistentVolume>(*client_, "", volumeName);
  if (!pv.ok())
    return Status(pv.status().code(), "failed to get PV " + goQuote(volumeName) + ": " + pv.status().message());
  return pv;
}

// Done once the claim's capacity reached both its request and the PV's size (requests may shrink after a
// failed expansion, hence both).
bool Controller::isNodeExpandComplete(const PersistentVolumeClaim& pvc, const PersistentVolume& pv) const {
  const Quantity pvcSpecCap = storageOf(pvc.spec.resources.requests);
  const Quantity pvcStatusCap = storageOf(pvc.status.capacity), pvCap = storageOf(pv.spec.capacity);
  KLOG_V(4, "\"pv and pvc capacity\" PV=" + goQuote(pv.metadata.name) + " pvCapacity=" + goQuote(text(pvCap)) +
                " PVC=" + goQuote(keyOf(pvc.metadata)) + " pvcCapacity=" + goQuote(text(pvcStatusCap)));
  return pvcStatusCap.compare(pvcSpecCap) >= 0 && pvcStatusCap.compare(pvCap) >= 0;
}

void Controller::event(const PersistentVolumeClaim& pvc, const char* type, const std::string& reason,
                       const std::string& message) const {
  recorder_->event({"PersistentVolumeClaim", "v1", pvc.metadata.namespace_, pvc.metadata.name, pvc.metadata.uid,
                    pvc.metadata.resourceVersion, ""},
                   type, reason, message);
}

api::Time Controller::now() const {
  return api::Time::fromUnix(std::chrono::system_clock::to_time_t(clock_.wallNow()));
}

}  // namespace kcm::controllers::volume::expand
