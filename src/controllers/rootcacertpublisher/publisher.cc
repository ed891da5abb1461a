#include "controllers/rootcacertpublisher/publisher.h"

#include "api/gen/core_v1_json.h"
#include "client/typed_client.h"

namespace kcm::controllers {

using api::core::v1::ConfigMap;
using api::core::v1::Namespace;

const char* const kRootCADescription =
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the "
    "internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes "
    "clusters.";

RootCACertPublisher::RootCACertPublisher(std::shared_ptr<client::RestClient> client, std::string rootCA,
                                         informers::SharedInformer<ConfigMap>& cmInformer,
                                         informers::SharedInformer<Namespace>& nsInformer)
    : client_(std::move(client)), rootCA_(std::move(rootCA)), cm_(cmInformer), ns_(nsInformer),
      base_("root_ca_cert_publisher", [this](const std::string& key) { return syncNamespace(key); }) {
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
