#include "controllers/resourceclaim/resourceclaim_controller.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "api/gen/core_v1_json.h"
#include "api/gen/resource_v1_json.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"

namespace kcm::controllers::resourceclaim {
namespace {

using log::quote;

constexpr const char* kPodResourceClaimIndex = "podResourceClaim";
constexpr const char* kPodResourceClaimTemplateIndex = "podResourceClaimTemplate";
constexpr const char* kClaimPodOwnerIndex = "claimPodOwner";
constexpr const char* kFieldManager = "ResourceClaimController";
constexpr const char* kClaimKeyPrefix = "claim:";
constexpr const char* kPodKeyPrefix = "pod:";
constexpr const char* kCreatesMetric = "dynamic_resource_allocation_resourceclaim_creates_total";
constexpr const char* kClaimsMetric = "dynamic_resource_allocation_resource_claims";

std::string kobj(const api::meta::v1::ObjectMeta& m) { return m.namespace_ + "/" + m.name; }

std::vector<std::string> sortedUnique(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// Pods by "<ns>/<template>" of their claim templates, and by "<ns>/<claim>" of the claims they name.
std::vector<std::string> podResourceClaimTemplateIndexFunc(const Pod& pod) {
  std::vector<std::string> keys;
  for (const auto& pc : pod.spec.resourceClaims)
    if (pc.resourceClaimTemplateName) keys.push_back(pod.metadata.namespace_ + "/" + *pc.resourceClaimTemplateName);
  return sortedUnique(std::move(keys));
}
std::vector<std::string> podResourceClaimIndexFunc(const Pod& pod) {
  std::vector<std::string> keys;
  for (const auto& pc : pod.spec.resourceClaims) {
    ClaimName n = Name(pod, pc);
    if (n.err.ok() && n.name) keys.push_back(pod.metadata.namespace_ + "/" + *n.name);
  }
  return sortedUnique(std::move(keys));
}
// Claims by "<ns>/<pod UID>" of the pod that controls them.
std::vector<std::string> claimPodOwnerIndexFunc(const ResourceClaim& claim) {
  std::vector<std::string> keys;
  for (const auto& r : claim.metadata.ownerReferences)
    if (r.controller.value_or(false) && r.apiVersion == "v1" && r.kind == "Pod")
      keys.push_back(claim.metadata.namespace_ + "/" + r.uid);
  return keys;
}

bool isPodTerminal(const Pod& pod) { return pod.status.phase == "Failed" || pod.status.phase == "Succeeded"; }
bool isPodDone(const Pod& pod) {
  return isPodTerminal(pod) || (pod.metadata.deletionTimestamp && pod.spec.nodeName.empty());
}

// podNeedsClaims: whether the claims of a pod must stay reserved.
std::pair<bool, std::string> podNeedsClaims(const Pod& pod, bool deleted) {
  if (deleted) return {false, "pod got removed"};
  if (isPodTerminal(pod)) return {false, "pod has terminated"};
  if (pod.metadata.deletionTimestamp && pod.spec.nodeName.empty()) return {false, "pod got deleted before scheduling"};
  return {true, "pod might run"};
}

bool adminAccessRequested(const api::resource::v1::DeviceClaim& devices) {
  for (const auto& r : devices.requests)
    if (r.exactly && r.exactly->adminAccess.value_or(false)) return true;
  return false;
}
std::string getAdminAccessMetricLabel(const ResourceClaim& claim) {
  return adminAccessRequested(claim.spec.devices) ? "true" : "false";
}

// The creates counter, labels sorted as client_golang prints them.
void countCreate(const ResourceClaim& claim, const std::string& status) {
  std::string group, kind;
  for (const auto& r : claim.metadata.ownerReferences)
    if (r.controller.value_or(false)) {
      const auto slash = r.apiVersion.find('/');
      group = slash == std::string::npos ? "" : r.apiVersion.substr(0, slash);
      kind = r.kind;
      break;
    }
  metrics::Registry::global()
      .counter(kCreatesMetric,
               "[ALPHA] Number of ResourceClaims creation requests, categorized by creation status, admin access, and "
               "owning API group and kind (either Pod or scheduling.k8s.io/PodGroup)",
               {{"admin_access", getAdminAccessMetricLabel(claim)},
                {"owner_api_group", group},
                {"owner_api_kind", kind},
                {"status", status}})
      .inc();
}

std::pair<std::string, std::string> owningPod(const ResourceClaim& claim) {
  for (const auto& r : claim.metadata.ownerReferences)
    if (r.controller.value_or(false) && r.apiVersion == "v1" && r.kind == "Pod") return {r.name, r.uid};
  return {};
}

client::ObjectReference podRef(const Pod& p) {
  return {"Pod", "v1", p.metadata.namespace_, p.metadata.name, p.metadata.uid, p.metadata.resourceVersion, ""};
}

}  // namespace

void UIDCache::Add(const std::string& uid) {
  std::lock_guard l(mu_);
  if (auto it = pos_.find(uid); it != pos_.end()) order_.erase(it->second);
  order_.push_front(uid);
  pos_[uid] = order_.begin();
  while (pos_.size() > max_) {
    pos_.erase(order_.back());
    order_.pop_back();
  }
}

bool UIDCache::Has(const std::string& uid) {
  std::lock_guard l(mu_);
  auto it = pos_.find(uid);
  if (it == pos_.end()) return false;
  order_.splice(order_.begin(), order_, it->second);  // a lookup refreshes the entry, as lru.Get
  return true;
}

Controller::Controller(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
                       informers::SharedInformer<Pod>& pods, informers::SharedInformer<ResourceClaim>& claims,
                       informers::SharedInformer<ResourceClaimTemplate>& templates, Features features, Clock& clock)
    : client_(std::move(client)), recorder_(std::move(recorder)), pods_(pods), claims_(claims),
      templates_(templates), features_(features),
      // A claim just created stays visible for up to an hour (1000 of them) until the informer has it.
      claimCache_(claims.store(), std::chrono::hours(1), true, 1000, clock),
      base_("resource_claim", [this](const std::string& key) { return syncHandler(key); }, clock) {
  pods_.store().addIndexer(kPodResourceClaimIndex, podResourceClaimIndexFunc);
  pods_.store().addIndexer(kPodResourceClaimTemplateIndex, podResourceClaimTemplateIndexFunc);
  claims_.store().addIndexer(kClaimPodOwnerIndex, claimPodOwnerIndexFunc);

  informers::EventHandler<Pod> ph;
  ph.onAdd = [this](const auto& p) { enqueuePod(*p, false); };
  ph.onUpdate = [this](const auto&, const auto& p) { enqueuePod(*p, false); };
  ph.onDelete = [this](const auto& p, bool) { enqueuePod(*p, true); };
  registrations_.push_back(pods_.addEventHandler(ph));
  informers::EventHandler<ResourceClaim> ch;
  ch.onAdd = [this](const auto& c) {
    KLOG_V(6, "\"New claim\" claim=" + quote(kobj(c->metadata)));
    enqueueResourceClaim(nullptr, c.get());
  };
  ch.onUpdate = [this](const auto& o, const auto& c) {
    KLOG_V(6, "\"Updated claim\" claim=" + quote(kobj(c->metadata)));
    enqueueResourceClaim(o.get(), c.get());
  };
  ch.onDelete = [this](const auto& c, bool) {
    KLOG_V(6, "\"Deleted claim\" claim=" + quote(kobj(c->metadata)));
    enqueueResourceClaim(c.get(), nullptr);
  };
  registrations_.push_back(claims_.addEventHandler(ch));
  informers::EventHandler<ResourceClaimTemplate> th;
  th.onAdd = [this](const auto& t) { enqueueResourceClaimTemplate(*t); };
  th.onUpdate = [this](const auto&, const auto& t) { enqueueResourceClaimTemplate(*t); };
  registrations_.push_back(templates_.addEventHandler(th));

  metrics::Registry::global().setCollector(
      kClaimsMetric,
      "[ALPHA] Number of ResourceClaims, categorized by allocation status, admin access, and source. Source can be "
      "'resource_claim_template' (created from a template), 'extended_resource' (extended resources), or empty "
      "(manually created by a user).",
      [this] {
        std::map<metrics::Labels, double> counts;
        for (const auto& rc : claims_.store().list()) {
          std::string source;
          const auto& a = rc->metadata.annotations;
          if (auto it = a.find(kExtendedResourceClaimAnnotation); it != a.end() && it->second == "true")
            source = "extended_resource";
          else if (auto it = a.find(kPodResourceClaimAnnotation); it != a.end() && !it->second.empty())
            source = "resource_claim_template";
          counts[{{"admin_access", getAdminAccessMetricLabel(*rc)},
                  {"allocated", rc->status.allocation ? "true" : "false"},
                  {"source", source}}] += 1;
        }
        return std::vector<std::pair<metrics::Labels, double>>(counts.begin(), counts.end());
      });
}

Controller::~Controller() { metrics::Registry::global().removeCollector(kClaimsMetric); }

void Controller::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting resource claim controller\"");
  base_.start(workers, stop,
              {[this] { return pods_.hasSynced(); }, [this] { return claims_.hasSynced(); },
               [this] { return templates_.hasSynced(); }});
}

void Controller::enqueueResourceClaimTemplate(const ResourceClaimTemplate& tmpl) {
  KLOG_V(6, "\"ResourceClaimTemplate added or updated\" resourceClaimTemplate=" + quote(kobj(tmpl.metadata)));
  auto pods = pods_.store().byIndex(kPodResourceClaimTemplateIndex, kobj(tmpl.metadata));
  if (pods.empty())
    KLOG_V(6, "\"ResourceClaimTemplate change unrelated to any known pod\" resourceClaimTemplate=" +
                  quote(kobj(tmpl.metadata)));
  for (const auto& pod : pods) {
    KLOG_V(4, "\"Enqueuing pod due to ResourceClaimTemplate change\" resourceClaimTemplate=" +
                  quote(kobj(tmpl.metadata)) + " pod=" + quote(kobj(pod->metadata)));
    enqueuePod(*pod, false);
  }
}

void Controller::enqueuePod(const Pod& pod, bool deleted) {
  // Extended resource claims are recorded in the status only: a pod with one still needs its clean-up.
  if (pod.spec.resourceClaims.empty() && !pod.status.extendedResourceClaimStatus) return;
  if (deleted) {
    KLOG_V(6, "\"Pod got deleted\" pod=" + quote(kobj(pod.metadata)));
    deletedObjects_.Add(pod.metadata.uid);
  }
  KLOG_V(6, "\"Pod with resource claims changed\" pod=" + quote(kobj(pod.metadata)) +
                " deleted=" + (deleted ? "true" : "false"));
  auto [needsClaims, why] = podNeedsClaims(pod, deleted);
  if (needsClaims) {
    KLOG_V(6, "\"Not touching claims\" pod=" + quote(kobj(pod.metadata)) + " reason=" + quote(why));
  } else {
    for (const auto& claimName : PodClaims(pod)) {
      const std::string key = kClaimKeyPrefix + pod.metadata.namespace_ + "/" + claimName;
      KLOG_V(6, "\"Process claim\" pod=" + quote(kobj(pod.metadata)) + " key=" + quote(key) + " reason=" + quote(why));
      base_.enqueue(key);
    }
  }
  auto [needsWork, reason] = podNeedsWork(pod);
  if (needsWork) {
    KLOG_V(6, "\"Enqueueing pod\" pod=" + quote(kobj(pod.metadata)) + " reason=" + quote(reason));
    base_.enqueue(kPodKeyPrefix + kobj(pod.metadata));
    return;
  }
  KLOG_V(6, "\"Not enqueueing pod\" pod=" + quote(kobj(pod.metadata)) + " reason=" + quote(reason));
}

std::pair<bool, std::string> Controller::podNeedsWork(const Pod& pod) {
  if (pod.metadata.deletionTimestamp) return {false, "pod is deleted"};
  std::vector<std::string> doNothing;
  for (const auto& pc : pod.spec.resourceClaims) {
    ClaimName n = Name(pod, pc);
    if (!n.err.ok()) return {true, n.err.message()};
    if (!n.name) {
      doNothing.push_back("claim " + pc.name + " is not needed");
      continue;
    }
    auto claim = claims_.store().get(pod.metadata.namespace_, *n.name);
    if (!claim) {
      if (pc.resourceClaimTemplateName) {
        if (pod.spec.schedulingGroup && pod.spec.schedulingGroup->podGroupName)
          return {true, "ResourceClaim might have to be created from template: Pod is a member of PodGroup " +
                            *pod.spec.schedulingGroup->podGroupName + " but GenericWorkload feature is disabled"};
        return {true, "must create ResourceClaim from template"};
      }
      doNothing.push_back("ResourceClaim for claim " + pc.name + " is missing and must be created by user");
      continue;
    }
    if (n.mustCheckOwner)
      if (Status st = IsForPod(pod, *claim); !st.ok()) {
        doNothing.push_back("claim " + pc.name + ": " + st.message());
        continue;
      }
    // Reservations only matter once the pod is scheduled; other claims may still have to be created.
    if (pod.spec.nodeName.empty()) continue;
    if (claim->status.allocation && !IsReservedForPod(pod, *claim) && CanBeReserved(*claim))
      return {true, "need to reserve claim " + kobj(claim->metadata) + " for pod"};
  }
  std::string joined;
  for (const auto& r : doNothing) joined += (joined.empty() ? "" : ", ") + r;
  return {false, "nothing to do for any claim: " + joined};
}

void Controller::enqueueResourceClaim(const ResourceClaim* oldClaim, const ResourceClaim* newClaim) {
  const ResourceClaim* claim = newClaim ? newClaim : oldClaim;
  if (!claim) return;
  if (newClaim) {
    // At start-up every claim is checked for stale pods in reservedFor; an update may add a pod already gone.
    const std::string key = kClaimKeyPrefix + kobj(claim->metadata);
    KLOG_V(6, "\"Enqueueing new or updated claim\" claim=" + quote(kobj(claim->metadata)) + " key=" + quote(key));
    base_.enqueue(key);
  } else {
    KLOG_V(6, "\"Not enqueueing deleted claim\" claim=" + quote(kobj(claim->metadata)));
  }
  auto pods = pods_.store().byIndex(kPodResourceClaimIndex, kobj(claim->metadata));
  if (pods.empty())
    KLOG_V(6, "\"ResourceClaim change unrelated to any known pod\" claim=" + quote(kobj(claim->metadata)));
  for (const auto& pod : pods) enqueuePod(*pod, false);
}

runtime::SyncResult Controller::syncHandler(const std::string& key) {
  const auto colon = key.find(':');
  if (colon == std::string::npos) return runtime::SyncResult::error(Status(StatusCode::kInvalidArgument,
                                                                            "unexpected key: " + key));
  const std::string prefix = key.substr(0, colon + 1), object = key.substr(colon + 1);
  const auto slash = object.find('/');
  const std::string ns = slash == std::string::npos ? "" : object.substr(0, slash);
  const std::string name = slash == std::string::npos ? object : object.substr(slash + 1);
  if (prefix == kPodKeyPrefix) return syncPod(ns, name);
  if (prefix == kClaimKeyPrefix) return syncClaim(ns, name);
  return runtime::SyncResult::error(Status(StatusCode::kInvalidArgument, "unexpected key prefix: " + prefix));
}

runtime::SyncResult Controller::syncPod(const std::string& ns, const std::string& name) {
  const std::string podKey = ns + "/" + name;
  auto pod = pods_.store().get(ns, name);
  if (!pod) {
    KLOG_V(5, "\"Nothing to do for pod, it is gone\" pod=" + quote(podKey));
    return runtime::SyncResult::ok();
  }
  if (pod->metadata.deletionTimestamp) {
    KLOG_V(5, "\"Nothing to do for pod, it is marked for deletion\" pod=" + quote(podKey));
    return runtime::SyncResult::ok();
  }
  if (pod->spec.schedulingGroup && pod->spec.schedulingGroup->podGroupName)  // getPodGroup, GenericWorkload off
    return runtime::SyncResult::errorNoRetry(
        Status(StatusCode::kInvalidArgument, "get PodGroup for Pod " + podKey + ": Pod is a member of PodGroup " +
                                                 *pod->spec.schedulingGroup->podGroupName +
                                                 " but GenericWorkload feature is disabled"));

  std::map<std::string, std::string> newClaims;
  for (const auto& pc : pod->spec.resourceClaims) {
    if (Status st = handleClaim(*pod, pc, newClaims); !st.ok()) {
      recorder_->event(podRef(*pod), client::kEventTypeWarning, "FailedResourceClaimCreation",
                       "PodResourceClaim " + pc.name + ": " + st.message());
      return runtime::SyncResult::error(
          Status(st.code(), "pod " + podKey + ", PodResourceClaim " + pc.name + ": " + st.message()));
    }
  }

  if (!newClaims.empty()) {
    // Record the generated claims in the pod status, merged with those already there, sorted by name.
    std::map<std::string, std::string> merged;
    for (const auto& s : pod->status.resourceClaimStatuses)
      if (s.resourceClaimName) merged[s.name] = *s.resourceClaimName;
    for (const auto& [k, v] : newClaims) merged[k] = v;
    nlohmann::ordered_json statuses = nlohmann::ordered_json::array();
    for (const auto& [k, v] : merged) statuses.push_back({{"name", k}, {"resourceClaimName", v}});
    nlohmann::ordered_json apply = {{"kind", "Pod"},
                                    {"apiVersion", "v1"},
                                    {"metadata", {{"name", name}, {"namespace", ns}}},
                                    {"status", {{"resourceClaimStatuses", statuses}}}};
    client::WriteOptions w;
    w.fieldManager = kFieldManager;
    w.force = true;
    auto r = client::patch<Pod>(*client_, ns, name, client::PatchType::kApply, apply.dump(), "status", w);
    if (!r.ok())
      return runtime::SyncResult::error(
          Status(r.status().code(), "update pod " + podKey + " ResourceClaimStatuses: " + r.status().message()));
  }

  if (pod->spec.nodeName.empty()) {
    KLOG_V(5, "\"Nothing to do for pod, scheduler will deal with it\" pod=" + quote(podKey));
    return runtime::SyncResult::ok();
  }

  for (const auto& pc : pod->spec.resourceClaims) {
    ClaimName n = Name(*pod, pc);
    if (!n.err.ok()) return runtime::SyncResult::error(n.err);
    if (!n.name) continue;
    auto claim = claims_.store().get(ns, *n.name);
    if (!claim) return runtime::SyncResult::ok();
    if (n.mustCheckOwner)
      if (Status st = IsForPod(*pod, *claim); !st.ok()) return runtime::SyncResult::error(st);
    if (claim->status.allocation && !IsReservedForPod(*pod, *claim) && CanBeReserved(*claim)) {
      auto bindTo = BindTo(*pod, pc);
      if (!bindTo.ok()) return runtime::SyncResult::error(bindTo.status());
      KLOG_V(5, "\"Reserve claim\" pod=" + quote(podKey) + " resourceClaim=" + quote(kobj(claim->metadata)) +
                    " reservedForResource=\"pods\"");
      if (Status st = reserveFor(*bindTo, *claim); !st.ok()) return runtime::SyncResult::error(st);
    }
  }
  return runtime::SyncResult::ok();
}

Status Controller::handleClaim(const Pod& pod, const PodResourceClaim& podClaim,
                               std::map<std::string, std::string>& newClaims) {
  KLOG_V(5, "\"Checking\" pod=" + quote(kobj(pod.metadata)) + " podClaim=" + quote(podClaim.name));
  // Name is asked even without a template: a source this build does not know is an error, not silence.
  ClaimName n = Name(pod, podClaim);
  if (n.claimNotFound) {
    // No claim recorded yet: create it below.
  } else if (!n.err.ok()) {
    return Status(n.err.code(), "checking for claim before creating it: " + n.err.message());
  } else if (!n.name) {
    return Status::Ok();  // no claim needed
  } else if (!n.name->empty()) {
    // Recorded in the pod status; if it was deleted by accident (or is not the pod's any more), make another.
    auto exists = claimExists(pod, *n.name, n.mustCheckOwner);
    if (!exists.ok()) return Status(exists.status().code(), "checking claim existence: " + exists.status().message());
    if (*exists) {
      KLOG_V(5, "\"Claim already created\" pod=" + quote(kobj(pod.metadata)) + " podClaim=" + quote(podClaim.name) +
                    " resourceClaim=" + quote(*n.name));
      return Status::Ok();
    }
  }
  if (!podClaim.resourceClaimTemplateName) return Status::Ok();
  if (auto bindTo = BindTo(pod, podClaim); !bindTo.ok()) return bindTo.status();

  // The controller may have created the claim before failing to record it in the pod status: use that one.
  std::shared_ptr<const ResourceClaim> claim = findPodResourceClaim(pod, podClaim);
  if (!claim) {
    const std::string& templateName = *podClaim.resourceClaimTemplateName;
    auto tmpl = templates_.store().get(pod.metadata.namespace_, templateName);
    if (!tmpl)
      return Status(StatusCode::kNotFound, "resource claim template \"" + templateName +
                                               "\": resourceclaimtemplate.resource.k8s.io \"" + templateName +
                                               "\" not found");
    const auto& devices = tmpl->spec.spec.devices;
    if (!features_.adminAccess && adminAccessRequested(devices))
      return Status(StatusCode::kInvalidArgument, "admin access is requested, but the feature is disabled");
    if (!features_.prioritizedList)
      for (const auto& r : devices.requests)
        if (!r.firstAvailable.empty())
          return Status(StatusCode::kInvalidArgument,
                        "template includes a prioritized list of subrequests, but the feature is disabled");

    ResourceClaim c;
    c.metadata.namespace_ = pod.metadata.namespace_;
    // <pod>-<claim>- leaves room for 5 random characters in 63; when longer, both parts are cut in proportion
    // (and the trailing hyphen goes), so the claim's name keeps something of each.
    std::string generateName = pod.metadata.name + "-" + podClaim.name + "-";
    constexpr size_t kMaxBaseLen = 57;
    if (generateName.size() > kMaxBaseLen) {
      const size_t len = generateName.size();
      generateName = pod.metadata.name.substr(0, pod.metadata.name.size() * kMaxBaseLen / len) + "-" +
                     podClaim.name.substr(0, podClaim.name.size() * kMaxBaseLen / len);
    }
    c.metadata.generateName = generateName;
    auto& owner = c.metadata.ownerReferences.emplace_back();
    owner.apiVersion = "v1", owner.kind = "Pod", owner.name = pod.metadata.name, owner.uid = pod.metadata.uid;
    owner.controller = true;
    c.metadata.annotations = tmpl->spec.metadata.annotations;
    c.metadata.annotations[kPodResourceClaimAnnotation] = podClaim.name;
    c.metadata.labels = tmpl->spec.metadata.labels;
    c.spec = tmpl->spec.spec;
    auto created = client::create<ResourceClaim>(*client_, pod.metadata.namespace_, c);
    if (!created.ok()) {
      countCreate(c, "failure");
      return Status(created.status().code(), "create ResourceClaim : " + created.status().message());
    }
    countCreate(c, "success");
    KLOG_V(4, "\"Created ResourceClaim\" pod=" + quote(kobj(pod.metadata)) + " podClaim=" + quote(podClaim.name) +
                  " claim=" + quote(kobj(created->metadata)));
    claimCache_.mutation(*created);
    claim = std::make_shared<const ResourceClaim>(std::move(*created));
  }
  newClaims[podClaim.name] = claim->metadata.name;
  return Status::Ok();
}

Result<bool> Controller::claimExists(const Pod& pod, const std::string& claimName, bool mustCheckOwner) {
  const std::string& ns = pod.metadata.namespace_;
  // The mutation cache may still answer with a claim deleted since; the informer's events correct that later.
  std::shared_ptr<const ResourceClaim> claim = claimCache_.get(ns + "/" + claimName);
  if (!claim) {  // not cached (or evicted): ask the apiserver
    auto r = client::get<ResourceClaim>(*client_, ns, claimName);
    if (!r.ok()) {
      if (r.status().code() == StatusCode::kNotFound) return false;
      return r.status();
    }
    claim = std::make_shared<const ResourceClaim>(std::move(*r));
  }
  if (mustCheckOwner)
    if (Status st = IsForPod(pod, *claim); !st.ok()) {
      KLOG_ERROR("\"Claim that was created for the pod is no longer owned by the pod, creating a new one\" err=" +
                 quote(st.message()) + " pod=" + quote(kobj(pod.metadata)) + " resourceClaim=" + quote(claimName));
      return false;
    }
  return true;
}

std::shared_ptr<const ResourceClaim> Controller::findPodResourceClaim(const Pod& pod,
                                                                      const PodResourceClaim& podClaim) {
  // Only claims the pod controls, and among them the one annotated with this pod claim (the first if several:
  // the others go with the pod).
  for (const auto& c : claimCache_.byIndex(kClaimPodOwnerIndex, pod.metadata.namespace_ + "/" + pod.metadata.uid,
                                           claimPodOwnerIndexFunc)) {
    auto it = c->metadata.annotations.find(kPodResourceClaimAnnotation);
    if (it != c->metadata.annotations.end() && it->second == podClaim.name) return c;
  }
  return nullptr;
}

Status Controller::reserveFor(const ResourceClaimConsumerReference& consumer, const ResourceClaim& claim) {
  ResourceClaim c = claim;
  c.status.reservedFor.push_back(consumer);
  auto r = client::updateStatus<ResourceClaim>(*client_, c);
  if (!r.ok()) return Status(r.status().code(), "reserve claim " + kobj(claim.metadata) + ": " + r.status().message());
  return Status::Ok();
}

runtime::SyncResult Controller::syncClaim(const std::string& ns, const std::string& name) {
  const std::string claimKey = ns + "/" + name;
  auto claim = claims_.store().get(ns, name);
  if (!claim) {
    KLOG_V(5, "\"Nothing to do for claim, it is gone\" claim=" + quote(claimKey));
    return runtime::SyncResult::ok();
  }

  // Which pod reservations stay: pods known deleted, gone, replaced (other UID) or done lose theirs. Entries for
  // other consumers are kept.
  std::vector<ResourceClaimConsumerReference> remaining;
  for (const auto& r : claim->status.reservedFor) {
    if (!(r.apiGroup.empty() && r.resource == "pods")) {
      remaining.push_back(r);
      continue;
    }
    bool keep = true;
    if (deletedObjects_.Has(r.uid)) {
      keep = false;
    } else if (auto pod = pods_.store().get(ns, r.name); !pod) {
      // Not cached: maybe the informer has not seen it yet, so ask the apiserver.
      auto live = client::get<Pod>(*client_, ns, r.name);
      if (!live.ok() && live.status().code() != StatusCode::kNotFound) return runtime::SyncResult::error(live.status());
      if (!live.ok() || live->metadata.uid != r.uid) {
        KLOG_V(6, "\"Remove reservation because pod is gone or got replaced\" pod=" + quote(ns + "/" + r.name) +
                      " claim=" + quote(claimKey));
        keep = false;
      }
    } else if (pod->metadata.uid != r.uid) {
      KLOG_V(6, "\"Remove reservation because pod got replaced with new instance\" pod=" + quote(ns + "/" + r.name) +
                    " claim=" + quote(claimKey));
      keep = false;
    } else if (isPodDone(*pod)) {
      KLOG_V(6, "\"Remove reservation because pod will not run anymore\" pod=" + quote(ns + "/" + r.name) +
                    " claim=" + quote(claimKey));
      keep = false;
    }
    if (keep) remaining.push_back(r);
  }

  auto finalizerAt = [](const ResourceClaim& c) {
    const auto& f = c.metadata.finalizers;
    return std::find(f.begin(), f.end(), kFinalizer);
  };
  const bool builtin = finalizerAt(*claim) != claim->metadata.finalizers.end();
  KLOG_V(5, "\"Claim reserved for counts\" currentCount=" + std::to_string(claim->status.reservedFor.size()) +
                " claim=" + quote(claimKey) + " updatedCount=" + std::to_string(remaining.size()) +
                " builtinController=" + (builtin ? "true" : "false"));
  if (remaining.size() < claim->status.reservedFor.size()) {
    ResourceClaim c = *claim;
    c.status.reservedFor = remaining;
    // The last consumer gone: a claim allocated by the scheduler (it put the finalizer) is deallocated.
    if (remaining.empty() && builtin) c.status.allocation.reset();
    auto updated = client::updateStatus<ResourceClaim>(*client_, c);
    if (!updated.ok()) return runtime::SyncResult::error(updated.status());
    KLOG_V(5, "\"Removed consumers\" claim=" + quote(claimKey) + " currentCount=" +
                  std::to_string(updated->status.reservedFor.size()) +
                  " allocated=" + (updated->status.allocation ? "true" : "false"));
    if (auto it = finalizerAt(*updated); it != updated->metadata.finalizers.end() && !updated->status.allocation) {
      updated->metadata.finalizers.erase(it);
      if (auto r = client::update<ResourceClaim>(*client_, *updated); !r.ok())
        return runtime::SyncResult::error(r.status());
      KLOG_V(5, "\"Removed finalizer after removing consumers\" claim=" + quote(claimKey));
    }
  } else if (builtin && claim->metadata.deletionTimestamp && remaining.empty()) {
    ResourceClaim c = *claim;
    if (c.status.allocation) {
      c.status.allocation.reset();
      auto updated = client::updateStatus<ResourceClaim>(*client_, c);
      if (!updated.ok()) return runtime::SyncResult::error(updated.status());
      c = std::move(*updated);
      KLOG_V(5, "\"Removed allocation because not needed\" claim=" + quote(claimKey));
    }
    if (auto it = finalizerAt(c); it != c.metadata.finalizers.end()) c.metadata.finalizers.erase(it);
    if (auto r = client::update<ResourceClaim>(*client_, c); !r.ok()) return runtime::SyncResult::error(r.status());
    KLOG_V(5, "\"Removed finalizer because not needed\" claim=" + quote(claimKey));
  }

  if (remaining.empty()) {
    // A claim generated for a pod that is done or was replaced is not needed any more.
    auto [podName, podUID] = owningPod(*claim);
    if (podName.empty()) {
      KLOG_V(5, "\"Claim not generated for a pod\" claim=" + quote(claimKey));
    } else if (auto pod = pods_.store().get(ns, podName); !pod) {
      KLOG_V(5, "\"Pod for claim not found\" claim=" + quote(claimKey) + " pod=" + quote(ns + "/" + podName));
    } else if (pod->metadata.uid != podUID || isPodDone(*pod)) {
      if (Status st = client::remove<ResourceClaim>(*client_, ns, name); !st.ok())
        return runtime::SyncResult::error(
            Status(st.code(), "delete unused generated claim " + claimKey + ": " + st.message()));
      KLOG_V(5, "\"Deleted unused generated claim\" claim=" + quote(claimKey) + " pod=" + quote(ns + "/" + podName));
    } else {
      KLOG_V(6, "\"Wrong pod content, not deleting claim\" claim=" + quote(claimKey) + " podUID=" + quote(podUID));
    }
  }
  return runtime::SyncResult::ok();
}

}  // namespace kcm::controllers::resourceclaim
