#include "controllers/rootcacertpublisher/publisher.h"

#include <chrono>

#include "api/gen/core_v1_json.h"
#include "base/metrics.h"
#include "client/typed_client.h"

namespace kcm::controllers {

using api::core::v1::ConfigMap;
using api::core::v1::Namespace;

const char* const kRootCADescription =
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the "
    "internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes "
    "clusters.";

namespace {
// upstream recordMetrics: per namespace sync, by the answer's HTTP code ("200" on success, "500" when the error
// carries none). Both are vectors: shown once a sync happened. (The histogram's help is the counter's, as upstream.)
void recordMetrics(std::chrono::steady_clock::time_point start, const Status& err) {
  std::string code = "200";
  if (!err.ok()) {
    int http = httpStatusCode(err.code());
    code = std::to_string(http ? http : 500);
  }
  auto& reg = metrics::Registry::global();
  const char* help = "Number of namespace syncs happened in root ca cert publisher.";
  reg.counter("root_ca_cert_publisher_sync_total", help, {{"code", code}}).inc();
  reg.histogram("root_ca_cert_publisher_sync_duration_seconds", help, metrics::exponentialBuckets(0.001, 2, 15),
                {{"code", code}})
      .observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}
}  // namespace

RootCACertPublisher::RootCACertPublisher(std::shared_ptr<client::RestClient> client, std::string rootCA,
                                         informers::SharedInformer<ConfigMap>& cmInformer,
                                         informers::SharedInformer<Namespace>& nsInformer)
    : client_(std::move(client)), rootCA_(std::move(rootCA)), cm_(cmInformer), ns_(nsInformer),
      base_("root_ca_cert_publisher", [this](const std::string& key) {
        const auto start = std::chrono::steady_clock::now();
        runtime::SyncResult r = syncNamespace(key);
        recordMetrics(start, r.status);
        return r;
      }) {
  informers::EventHandler<ConfigMap> cmHandler;
  cmHandler.onUpdate = [this](const auto&, const auto& cm) {
    if (cm->metadata.name == kRootCACertConfigMapName) base_.enqueue(cm->metadata.namespace_);
  };
  cmHandler.onDelete = [this](const auto& cm, bool) {
    if (cm->metadata.name == kRootCACertConfigMapName) base_.enqueue(cm->metadata.namespace_);
  };
  registrations_.push_back(cm_.addEventHandler(cmHandler));
  informers::EventHandler<Namespace> nsHandler;
  nsHandler.onAdd = [this](const auto& ns) { base_.enqueue(ns->metadata.name); };
  nsHandler.onUpdate = [this](const auto&, const auto& ns) {
    if (ns->status.phase == "Active") base_.enqueue(ns->metadata.name);
  };
  registrations_.push_back(ns_.addEventHandler(nsHandler));
}

void RootCACertPublisher::run(int workers, std::stop_token stop) {
  base_.start(workers, stop, {[this] { return cm_.hasSynced(); }, [this] { return ns_.hasSynced(); }});
}

runtime::SyncResult RootCACertPublisher::syncNamespace(const std::string& ns) {
  auto nsObj = ns_.store().get(ns);
  if (!nsObj || nsObj->status.phase != "Active" || nsObj->metadata.deletionTimestamp)
    return runtime::SyncResult::ok();
  auto cm = cm_.store().get(ns, kRootCACertConfigMapName);
  if (!cm) {
    ConfigMap fresh;
    fresh.metadata.name = kRootCACertConfigMapName;
    fresh.metadata.namespace_ = ns;
    fresh.metadata.annotations[kDescriptionAnnotation] = kRootCADescription;
    fresh.data["ca.crt"] = rootCA_;
    auto r = client::create(*client_, ns, fresh);
    if (r.ok() || r.status().code() == StatusCode::kAlreadyExists ||
        r.status().message().find("because it is being terminated") != std::string::npos)
      return runtime::SyncResult::ok();
    return runtime::SyncResult::error(r.status());
  }
  bool dataOk = cm->data.size() == 1 && cm->data.contains("ca.crt") && cm->data.at("ca.crt") == rootCA_;
  auto ann = cm->metadata.annotations.find(kDescriptionAnnotation);
  if (dataOk && ann != cm->metadata.annotations.end() && !ann->second.empty()) return runtime::SyncResult::ok();
  // Restore: copy the cached object, change data and annotation, update with its resourceVersion (a racing
  // writer gets Conflict and the key is retried with a fresh read).
  ConfigMap updated = *cm;
  updated.data.clear();
  updated.data["ca.crt"] = rootCA_;
  updated.binaryData.clear();
  updated.metadata.annotations[kDescriptionAnnotation] = kRootCADescription;
  auto r = client::update(*client_, updated);
  if (r.ok() || r.status().code() == StatusCode::kNotFound) return runtime::SyncResult::ok();
  return runtime::SyncResult::error(r.status());
}

}  // namespace kcm::controllers
