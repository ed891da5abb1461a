#include "controllers/resourcequota/resource_quota_monitor.h"

#include "api/gen/core_v1_json.h"
#include "api/gen/resource_v1_json.h"
#include "base/log.h"
#include "quota/core_evaluators.h"

namespace kcm::controllers::resourcequota {

using api::meta::v1::PartialObjectMetadata;

struct QuotaMonitor::Monitor {
  std::function<bool()> hasSynced;
  informers::Registration registration;
};

namespace {
constexpr char kKeySeparator = '\n';  // neither a group-resource nor a namespace contains it

template <class T>
informers::Registration watchTyped(informers::SharedInformer<T>& inf, const std::string& gr,
                                   std::function<bool(const T&, const T&)> updateMatters,
                                   const std::function<void(const std::string&, const std::string&)>& enqueue) {
  informers::EventHandler<T> h;
  // Upstream logs each event its monitor queues, with the object; ours coalesces them per namespace afterwards.
  auto logged = [gr](const api::meta::v1::ObjectMeta& m, const char* eventType) {
    KLOG_V(4, "\"QuotaMonitor process object\" resource=" + log::quote(gr) + " namespace=" + log::quote(m.namespace_) +
                  " name=" + log::quote(m.name) + " uid=" + log::quote(m.uid) + " eventType=\"" + eventType + "\"");
  };
  if (updateMatters)
    h.onUpdate = [gr, updateMatters, enqueue, logged](const auto& old, const auto& cur) {
      if (!updateMatters(*old, *cur)) return;
      logged(cur->metadata, "update");
      enqueue(gr, cur->metadata.namespace_);
    };
  h.onDelete = [gr, enqueue, logged](const auto& o, bool) {
    logged(o->metadata, "delete");
    enqueue(gr, o->metadata.namespace_);
  };
  return inf.addEventHandler(h);
}
}  // namespace

QuotaMonitor::QuotaMonitor(informers::SharedInformerFactory& factory, std::set<std::string> ignoredResources,
                           ReplenishmentFunc replenish, quota::Registry& registry, Clock& clock)
    : factory_(factory), ignored_(std::move(ignoredResources)), replenish_(std::move(replenish)), registry_(registry),
      clock_(clock),
      changes_("resource_quota_controller_resource_changes",
               [this](const std::string& key) { return processResourceChange(key); }, clock) {}

QuotaMonitor::~QuotaMonitor() {
  std::map<std::string, std::unique_ptr<Monitor>> monitors;
  {
    std::lock_guard l(mu_);
    monitors.swap(monitors_);
  }
  monitors.clear();  // handlers removed outside the lock
}

void QuotaMonitor::enqueue(const std::string& groupResource, const std::string& ns) {
  changes_.enqueue(groupResource + kKeySeparator + ns);
}

runtime::SyncResult QuotaMonitor::processResourceChange(const std::string& key) {
  const auto sep = key.find(kKeySeparator);
  const std::string gr = key.substr(0, sep), ns = sep == std::string::npos ? "" : key.substr(sep + 1);
  replenish_(gr, ns);
  return runtime::SyncResult::ok();
}

std::unique_ptr<QuotaMonitor::Monitor> QuotaMonitor::monitorFor(const client::APIResourceInfo& r,
                                                                const std::string& loggerKv) {
  auto m = std::make_unique<Monitor>();
  const std::string gr = quota::groupResourceString(r.group, r.resource);
  auto enqueue = [this](const std::string& g, const std::string& ns) { this->enqueue(g, ns); };
  using namespace api;
  if (r.group.empty() && r.version == "v1" && r.resource == "pods") {
    auto& inf = factory_.forType<core::v1::Pod>();
    m->registration = watchTyped<core::v1::Pod>(
        inf, gr, [this](const auto& o, const auto& n) { return quota::podUpdateChangesQuota(o, n, clock_.wallNow()); },
        enqueue);
    m->hasSynced = [&inf] { return inf.hasSynced(); };
  } else if (r.group.empty() && r.version == "v1" && r.resource == "services") {
    auto& inf = factory_.forType<core::v1::Service>();
    m->registration = watchTyped<core::v1::Service>(inf, gr, quota::serviceUpdateChangesQuota, enqueue);
    m->hasSynced = [&inf] { return inf.hasSynced(); };
  } else if (r.group.empty() && r.version == "v1" && r.resource == "persistentvolumeclaims") {
    auto& inf = factory_.forType<core::v1::PersistentVolumeClaim>();
    m->registration = watchTyped<core::v1::PersistentVolumeClaim>(inf, gr, quota::pvcUpdateChangesQuota, enqueue);
    m->hasSynced = [&inf] { return inf.hasSynced(); };
  } else if (r.group.empty() && r.version == "v1" && r.resource == "resourcequotas") {
    auto& inf = factory_.forType<core::v1::ResourceQuota>();  // the controller's own
    m->registration = watchTyped<core::v1::ResourceQuota>(inf, gr, nullptr, enqueue);
    m->hasSynced = [&inf] { return inf.hasSynced(); };
  } else if (r.group == "resource.k8s.io" && r.version == "v1" && r.resource == "resourceclaims") {
    auto& inf = factory_.forType<resource::v1::ResourceClaim>();
    m->registration = watchTyped<resource::v1::ResourceClaim>(inf, gr, nullptr, enqueue);
    m->hasSynced = [&inf] { return inf.hasSynced(); };
  } else {
    // Only deletes matter for a resource counted by object count (upstream's filter passes no update of it).
    client::GroupVersionResource gvr{r.group, r.version, r.resource};
    auto& inf = factory_.forMetadata(gvr);
    m->registration = watchTyped<PartialObjectMetadata>(inf, gr, nullptr, enqueue);
    m->hasSynced = [&inf] { return inf.hasSynced(); };
    if (!registry_.get(gr)) {
      registry_.add(std::make_shared<quota::ObjectCountEvaluator<PartialObjectMetadata>>(
          r.group, r.resource, quota::cacheListFunc<PartialObjectMetadata>(inf, gvr.toString())));
      KLOG_INFO("\"QuotaMonitor created object count evaluator\"" + loggerKv + " resource=\"" + gr + "\"");
    }
  }
  return m;
}

namespace {
std::string loggerKeyValue(bool fromConstructor) {
  return fromConstructor ? " logger=\"resourcequota-controller\"" : "";
}
}  // namespace

QuotaMonitor::Counts QuotaMonitor::syncMonitors(const std::vector<client::APIResourceInfo>& resources,
                                                bool fromConstructor) {
  const std::string loggerKv = loggerKeyValue(fromConstructor);
  std::set<std::string> existing;
  {
    std::lock_guard l(mu_);
    for (const auto& [k, _] : monitors_) existing.insert(k);
  }
  std::set<std::string> wanted;
  std::map<std::string, std::unique_ptr<Monitor>> added;
  for (const auto& r : resources) {
    if (ignored_.count(quota::groupResourceString(r.group, r.resource))) continue;
    const std::string key = r.group + "/" + r.version + "/" + r.resource;
    if (!wanted.insert(key).second || existing.count(key)) continue;
    added.emplace(key, monitorFor(r, loggerKv));
  }
  Counts c;
  c.added = static_cast<int>(added.size());
  std::map<std::string, std::unique_ptr<Monitor>> removed;
  {
    std::lock_guard l(mu_);
    for (auto it = monitors_.begin(); it != monitors_.end();) {
      if (wanted.count(it->first)) {
        ++c.kept;
        ++it;
      } else {
        removed.insert(monitors_.extract(it++));
      }
    }
    monitors_.merge(added);
  }
  c.removed = static_cast<int>(removed.size());
  KLOG_V(4, "\"quota synced monitors\"" + loggerKv + " added=" + std::to_string(c.added) + " kept=" + std::to_string(c.kept) +
                " removed=" + std::to_string(c.removed));
  return c;  // `removed` goes here: its handlers are removed outside the lock
}

bool QuotaMonitor::isSynced(bool fromConstructor) const {
  std::lock_guard l(mu_);
  if (monitors_.empty()) {
    KLOG_V(4, "\"quota monitor not synced: no monitors\"" + loggerKeyValue(fromConstructor));
    return false;
  }
  for (const auto& [key, m] : monitors_)
    if (!m->hasSynced()) {
      KLOG_V(4, "\"quota monitor not synced\"" + loggerKeyValue(fromConstructor) + " resource=\"" + key + "\"");
      return false;
    }
  return true;
}

void QuotaMonitor::run(std::stop_token stop) {
  KLOG_INFO("\"QuotaMonitor running\"");
  changes_.start(1, stop);
}

}  // namespace kcm::controllers::resourcequota
