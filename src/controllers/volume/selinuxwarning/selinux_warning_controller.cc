#include "controllers/volume/selinuxwarning/selinux_warning_controller.h"

#include <algorithm>
#include <set>

#include "base/log.h"
#include "base/metrics.h"
#include "controllers/volume/common/csi_translation.h"
#include "controllers/volume/common/volume_common.h"

namespace kcm::controllers::volume::selinuxwarning {
namespace {

using common::VolumeSpec;
using log::quote;

constexpr const char* kRecursive = "Recursive";
constexpr const char* kMountOption = "MountOption";
constexpr const char* kCSIPluginName = "kubernetes.io/csi";

std::string keyOf(const api::meta::v1::ObjectMeta& m) { return m.namespace_ + "/" + m.name; }

// Go's %v of a []string: "[a b]".
std::string goList(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return "[" + s + "]";
}

// The controller's volume plugins (cmd/kube-controller-manager/app/plugins.go) that CanSupport a spec, by the
// volume source they own. PV validation allows one source, so at most one matches.
template <class Source>
const char* pluginFor(const Source& s) {
  if (s.hostPath) return "kubernetes.io/host-path";
  if (s.nfs) return "kubernetes.io/nfs";
  if (s.fc) return "kubernetes.io/fc";
  if (s.iscsi) return "kubernetes.io/iscsi";
  if (s.csi) return kCSIPluginName;
  return nullptr;
}
const char* FindPluginBySpec(const VolumeSpec& spec) {
  if (spec.migratedCSI) return kCSIPluginName;
  return spec.pv ? pluginFor(spec.pv->spec) : pluginFor(*spec.volume);
}

// csi.GetCSIDriverName: the driver of a CSI PV or inline CSI volume, "" for anything else.
std::string GetCSIDriverName(const VolumeSpec& spec) {
  if (spec.migratedCSI) return spec.migratedCSI->driver;
  if (spec.pv && spec.pv->spec.csi) return spec.pv->spec.csi->driver;
  if (spec.volume && spec.volume->csi) return spec.volume->csi->driver;
  return "";
}

template <class FC>
std::string fcVolumeName(const FC& fc) {
  if (!fc.targetWWNs.empty() && fc.lun) return goList(api::toStdStrings(fc.targetWWNs)) + ":" + std::to_string(*fc.lun);
  if (!fc.wwids.empty()) return goList(api::toStdStrings(fc.wwids));
  return "";
}

// The plugin's GetVolumeName; an empty name without error is an error of GetUniqueVolumeNameFromSpec too.
Result<std::string> GetVolumeName(const std::string& plugin, const VolumeSpec& spec) {
  const auto* pv = spec.pv ? &spec.pv->spec : nullptr;
  const auto* v = spec.volume;
  if (plugin == kCSIPluginName) {
    if (spec.migratedCSI) return spec.migratedCSI->driver + "^" + spec.migratedCSI->volumeHandle;
    if (!pv)
      return Status(StatusCode::kInvalidArgument,
                    "kubernetes.io/csi: plugin.GetVolumeName failed to extract volume source from spec: unexpected "
                    "api.CSIVolumeSource found in volume.Spec");
    return pv->csi->driver + "^" + pv->csi->volumeHandle;
  }
  if (plugin == "kubernetes.io/host-path") return pv ? pv->hostPath->path.str() : v->hostPath->path.str();
  if (plugin == "kubernetes.io/nfs") {
    const auto& nfs = pv ? *pv->nfs : *v->nfs;
    return nfs.server + "/" + nfs.path;
  }
  if (plugin == "kubernetes.io/fc") return pv ? fcVolumeName(*pv->fc) : fcVolumeName(*v->fc);
  if (pv) return pv->iscsi->targetPortal + ":" + pv->iscsi->iqn + ":" + std::to_string(pv->iscsi->lun);
  return v->iscsi->targetPortal + ":" + v->iscsi->iqn + ":" + std::to_string(v->iscsi->lun);
}

Result<std::string> GetUniqueVolumeNameFromSpec(const std::string& plugin, const VolumeSpec& spec) {
  auto name = GetVolumeName(plugin, spec);
  if (!name.ok() || name->empty())
    return Status(StatusCode::kInvalidArgument, "failed to GetVolumeName from volumePlugin for volumeSpec \"" +
                                                    spec.name() + "\" err=" +
                                                    (name.ok() ? std::string("<nil>") : name.status().message()));
  return plugin + "/" + *name;
}

// securitycontext.DetermineEffectiveSecurityContext, SELinux options only: the container's replace the pod's.
template <class C>
const api::core::v1::SELinuxOptions* effectiveSELinuxOptions(const Pod& pod, const C& c) {
  if (c.securityContext && c.securityContext->seLinuxOptions) return &*c.securityContext->seLinuxOptions;
  if (pod.spec.securityContext && pod.spec.securityContext->seLinuxOptions)
    return &*pod.spec.securityContext->seLinuxOptions;
  return nullptr;
}

client::ObjectReference podRef(const Pod& pod) {
  return {"Pod", "v1", pod.metadata.namespace_, pod.metadata.name, pod.metadata.uid, pod.metadata.resourceVersion, ""};
}

}  // namespace

std::map<std::string, std::vector<const api::core::v1::SELinuxOptions*>> GetPodVolumeNames(const Pod& pod) {
  std::map<std::string, std::vector<const api::core::v1::SELinuxOptions*>> mounts;
  auto visit = [&](const auto& containers) {
    for (const auto& c : containers) {
      const auto* opts = effectiveSELinuxOptions(pod, c);
      for (const auto& m : c.volumeMounts) {
        auto& list = mounts[m.name];
        if (opts) list.push_back(opts);
      }
    }
  };
  visit(pod.spec.initContainers);
  visit(pod.spec.containers);
  visit(pod.spec.ephemeralContainers);
  return mounts;
}

Controller::Controller(std::shared_ptr<client::EventRecorder> recorder, informers::SharedInformer<Pod>& pods,
                       informers::SharedInformer<PersistentVolumeClaim>& pvcs,
                       informers::SharedInformer<PersistentVolume>& pvs, informers::SharedInformer<CSIDriver>& drivers,
                       Clock& clock)
    : recorder_(std::move(recorder)), pods_(pods), pvcs_(pvcs), pvs_(pvs), drivers_(drivers),
      base_("selinux_warning", [this](const std::string& key) { return sync(key); }, clock) {
  pods_.store().addIndexer(common::kPodPVCIndex, common::PodPVCIndexFunc);

  informers::EventHandler<Pod> ph;
  ph.onAdd = [this](const auto& p) { base_.enqueueObject(*p); };
  ph.onUpdate = [this](const auto& old, const auto& p) {
    // The volumes, labels and policy of a pod never change; only its end frees its volumes.
    if (old->status.phase == p->status.phase) return;
    if (p->status.phase != "Failed" && p->status.phase != "Succeeded") return;
    base_.enqueueObject(*p);
  };
  ph.onDelete = [this](const auto& p, bool) { base_.enqueueObject(*p); };
  registrations_.push_back(pods_.addEventHandler(ph));

  informers::EventHandler<PersistentVolumeClaim> ch;
  ch.onAdd = [this](const auto& c) {
    if (!c->spec.volumeName.empty()) enqueueAllPodsForPVC(c->metadata.namespace_, c->metadata.name);
  };
  ch.onUpdate = [this](const auto& old, const auto& c) {
    if (old->spec.volumeName != c->spec.volumeName) enqueueAllPodsForPVC(c->metadata.namespace_, c->metadata.name);
  };
  registrations_.push_back(pvcs_.addEventHandler(ch));

  informers::EventHandler<PersistentVolume> vh;
  vh.onAdd = [this](const auto& pv) {
    const auto& ref = pv->spec.claimRef;
    if (ref && !ref->uid.empty()) enqueueAllPodsForPVC(ref->namespace_, ref->name);
  };
  vh.onUpdate = [this](const auto& old, const auto& pv) {
    const auto& ref = pv->spec.claimRef;
    if (!ref || ref->uid.empty()) return;
    if (!old->spec.claimRef || old->spec.claimRef->uid != ref->uid) enqueueAllPodsForPVC(ref->namespace_, ref->name);
  };
  registrations_.push_back(pvs_.addEventHandler(vh));

  // A driver's seLinuxMount decides whether its pods' policy is their own or Recursive.
  informers::EventHandler<CSIDriver> dh;
  dh.onAdd = [this](const auto& d) { enqueueAllPodsForCSIDriver(d->metadata.name); };
  dh.onUpdate = [this](const auto& old, const auto& d) {
    if (old->spec.seLinuxMount.value_or(false) != d->spec.seLinuxMount.value_or(false))
      enqueueAllPodsForCSIDriver(d->metadata.name);
  };
  dh.onDelete = [this](const auto& d, bool) {
    if (d->spec.seLinuxMount.value_or(false)) enqueueAllPodsForCSIDriver(d->metadata.name);
  };
  registrations_.push_back(drivers_.addEventHandler(dh));

  metrics::Registry::global().setCollector(kConflictMetric, "[ALPHA] Conflict between two Pods using the same volume",
                                           [this] {
                                             std::vector<std::pair<metrics::Labels, double>> series;
                                             for (const auto& c : labelCache_.GetConflicts())
                                               series.push_back({{{"pod1_name", c.Pod.name},
                                                                  {"pod1_namespace", c.Pod.ns},
                                                                  {"pod1_value", c.PropertyValue},
                                                                  {"pod2_name", c.OtherPod.name},
                                                                  {"pod2_namespace", c.OtherPod.ns},
                                                                  {"pod2_value", c.OtherPropertyValue},
                                                                  {"property", c.PropertyName}},
                                                                 1.0});
                                             return series;
                                           });
}

Controller::~Controller() { metrics::Registry::global().removeCollector(kConflictMetric); }

void Controller::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting SELinux warning controller\"");
  base_.start(workers, stop,
              {[this] { return pods_.hasSynced(); }, [this] { return pvcs_.hasSynced(); },
               [this] { return pvs_.hasSynced(); }, [this] { return drivers_.hasSynced(); }});
}

void Controller::enqueueAllPodsForPVC(const std::string& ns, const std::string& name) {
  for (const auto& pod : pods_.store().byIndex(common::kPodPVCIndex, ns + "/" + name)) base_.enqueueObject(*pod);
}

void Controller::enqueueAllPodsForCSIDriver(const std::string& driver) {
  for (const auto& p : labelCache_.GetPodsForCSIDriver(driver)) base_.enqueue(p.String());
}

runtime::SyncResult Controller::sync(const std::string& key) {
  auto pod = pods_.store().get(key);
  const auto slash = key.find('/');
  const ObjectName name{key.substr(0, slash), slash == std::string::npos ? key : key.substr(slash + 1)};
  if (!pod || pod->status.phase == "Failed" || pod->status.phase == "Succeeded") {
    // Gone, or finished: the kubelet unmounts its volumes.
    KLOG_V(4, "\"Deleting pod\" key=" + quote(key));
    labelCache_.DeletePod(name);
    return runtime::SyncResult::ok();
  }
  if (Status st = syncPod(*pod); !st.ok())
    return runtime::SyncResult::error(Status(st.code(), key + " failed with: " + st.message()));
  return runtime::SyncResult::ok();
}

Result<VolumeSpec> Controller::CreateVolumeSpec(const Pod& pod, const api::core::v1::Volume& v) const {
  std::string claimName;
  auto spec = common::createInTreeVolumeSpec(pod, v, pvcs_.store(), pvs_.store(), &claimName);
  if (!spec.ok() || common::inTreeMigratablePluginName(*spec).empty()) return spec;
  // Every in-tree plugin's migration is complete at the pin: the volume is its CSI driver's.
  auto csi = common::TranslateInTreeSpecToCSI(*spec, pod.metadata.namespace_);
  if (!csi.ok())
    return Status(csi.status().code(), "error performing CSI migration checks and translation for PVC \"" +
                                           pod.metadata.namespace_ + "\"/\"" + claimName + "\": " +
                                           csi.status().message());
  spec->migratedCSI = *csi;
  return spec;
}

Result<bool> Controller::SupportsSELinuxContextMount(const VolumeSpec& spec) const {
  const char* plugin = FindPluginBySpec(spec);
  if (!plugin) return false;
  if (std::string(plugin) == kCSIPluginName) {
    auto driver = drivers_.store().get(GetCSIDriverName(spec));
    return driver && driver->spec.seLinuxMount.value_or(false);
  }
  return std::string(plugin) == "kubernetes.io/fc" || std::string(plugin) == "kubernetes.io/iscsi";
}

Status Controller::syncPod(const Pod& pod) {
  KLOG_V(4, "\"Syncing pod\" pod=" + quote(keyOf(pod.metadata)));
  std::vector<Status> errs;
  std::map<std::string, VolumeSpec> specs;
  for (const auto& v : pod.spec.volumes) {
    auto spec = CreateVolumeSpec(pod, v);
    if (!spec.ok()) {  // common while the claim is not bound yet: reported, the other volumes go on
      errs.push_back(spec.status());
      continue;
    }
    specs.emplace(v.name, *spec);
  }

  for (const auto& [mount, opts] : GetPodVolumeNames(pod)) {
    auto spec = specs.find(mount);
    if (spec == specs.end()) {
      KLOG_V(4, "\"skipping not found volume\" pod=" + quote(keyOf(pod.metadata)) + " volume=" + quote(mount));
      continue;
    }
    // GetMountSELinuxLabel: the one label all containers mounting the volume use, and whether the mount carries it.
    auto supports = SupportsSELinuxContextMount(spec->second);
    if (!supports.ok()) {
      errs.push_back(supports.status());
      continue;
    }
    std::set<std::string> labels;
    for (const auto* o : opts) labels.insert(SELinuxOptionsToFileLabel(o));
    if (labels.size() > 1) {
      recorder_->event(podRef(pod), client::kEventTypeWarning, "MultipleSELinuxLabels",
                       "Volume \"" + mount + "\" is mounted twice with different SELinux labels inside this pod");
      std::string list;
      for (const auto& l : labels) list += (list.empty() ? "" : ",") + l;
      KLOG_V(4, "\"failed to get SELinux label\" pod=" + quote(keyOf(pod.metadata)) + " volume=" + quote(mount) +
                    " err=" + quote("multiple SELinux labels found: " + list));
      errs.push_back(Status(StatusCode::kInvalidArgument, "multiple SELinux labels found: " + list));
      continue;
    }
    // The label kubelet mounts with (-o context): none when the pod opted into Recursive or the plugin cannot.
    std::string mountLabel = labels.empty() ? "" : *labels.begin();
    const auto& sc = pod.spec.securityContext;
    if ((sc && sc->seLinuxChangePolicy && *sc->seLinuxChangePolicy == kRecursive) || !*supports) mountLabel.clear();
    if (Status st = syncVolume(pod, spec->second, mountLabel, *supports); !st.ok()) errs.push_back(st);
  }
  return NewAggregate(errs);
}

Status Controller::syncVolume(const Pod& pod, const VolumeSpec& spec, const std::string& label, bool supportsMount) {
  const char* plugin = FindPluginBySpec(spec);
  if (!plugin) {  // the controller has only the plugins that matter for SELinux
    KLOG_V(4, "\"Skipping volume of unknown plugin\" volume=" + quote(spec.name()) + " err=\"no volume plugin matched\"");
    return Status::Ok();
  }
  auto unique = GetUniqueVolumeNameFromSpec(plugin, spec);
  if (!unique.ok())
    return Status(unique.status().code(),
                  "failed to get unique volume name for volume \"" + spec.name() + "\": " + unique.status().message());
  std::string changePolicy = kMountOption;
  if (pod.spec.securityContext && pod.spec.securityContext->seLinuxChangePolicy)
    changePolicy = *pod.spec.securityContext->seLinuxChangePolicy;
  // Without -o context support, or without a label, the kubelet relabels recursively whatever the pod asks.
  if (!supportsMount && changePolicy != kRecursive) changePolicy = kRecursive;
  if (label.empty() && changePolicy != kRecursive) changePolicy = kRecursive;
  const std::string csiDriver = GetCSIDriverName(spec);
  KLOG_V(4, "\"Syncing pod volume\" pod=" + quote(keyOf(pod.metadata)) + " volume=" + quote(spec.name()) +
                " label=" + quote(label) + " uniqueVolumeName=" + quote(*unique) + " changePolicy=" +
                quote(changePolicy) + " csiDriver=" + quote(csiDriver));
  reportConflictEvents(labelCache_.AddVolume(*unique, ObjectName{pod.metadata.namespace_, pod.metadata.name}, label,
                                             changePolicy, csiDriver));
  return Status::Ok();
}

void Controller::reportConflictEvents(const std::vector<Conflict>& conflicts) {
  for (const auto& c : conflicts) {
    auto pod = pods_.store().get(c.Pod.ns, c.Pod.name);
    if (!pod) {
      // A conflict with a pod already deleted is resolved; upstream stops reporting this batch here.
      KLOG_V(2, "\"failed to get first pod for event\" pod=" + quote(c.Pod.String()));
      return;
    }
    recorder_->event(podRef(*pod), client::kEventTypeNormal, c.EventReason, c.EventMessage());
  }
}

}  // namespace kcm::controllers::volume::selinuxwarning
