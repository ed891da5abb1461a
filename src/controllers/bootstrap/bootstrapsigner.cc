#include "controllers/bootstrap/bootstrapsigner.h"

#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/bootstrap/util.h"

namespace kcm::controllers::bootstrap {

using api::core::v1::ConfigMap;
using api::core::v1::Secret;

Signer::Signer(std::shared_ptr<client::RestClient> client, informers::SharedInformer<Secret>& secrets,
               informers::SharedInformer<ConfigMap>& configMaps, SignerOptions options, Clock& clock)
    : client_(std::move(client)), secrets_(secrets), configMaps_(configMaps), options_(std::move(options)),
      clock_(clock), configMapKey_(options_.configMapNamespace + "/" + options_.configMapName),
      base_("bootstrap_signer_queue", [this](const std::string&) { return signConfigMap(); }, clock) {
  auto poke = [this] { base_.enqueue(configMapKey_); };
  auto isClusterInfo = [this](const ConfigMap& cm) {
    return cm.metadata.name == options_.configMapName && cm.metadata.namespace_ == options_.configMapNamespace;
  };
  informers::EventHandler<ConfigMap> cmh;
  cmh.onAdd = [poke, isClusterInfo](const auto& cm) {
    if (isClusterInfo(*cm)) poke();
  };
  cmh.onUpdate = [poke, isClusterInfo](const auto&, const auto& cm) {
    if (isClusterInfo(*cm)) poke();
  };
  registrations_.push_back(configMaps_.addEventHandler(cmh));

  auto isToken = [this](const Secret& s) {
    return s.type == kSecretTypeBootstrapToken && s.metadata.namespace_ == options_.tokenSecretNamespace;
  };
  informers::EventHandler<Secret> sh;
  sh.onAdd = [poke, isToken](const auto& s) {
    if (isToken(*s)) poke();
  };
  sh.onUpdate = [poke, isToken](const auto&, const auto& s) {
    if (isToken(*s)) poke();
  };
  sh.onDelete = [poke, isToken](const auto& s, bool) {
    if (isToken(*s)) poke();
  };
  registrations_.push_back(secrets_.addEventHandler(sh));
}

void Signer::run(std::stop_token stop) {
  KLOG_V(5, "\"Starting\"");
  base_.start(1, stop, {[this] { return configMaps_.hasSynced(); }, [this] { return secrets_.hasSynced(); }});
}

std::map<std::string, std::string> Signer::getTokens() const {
  std::map<std::string, std::string> out;
  const auto now = clock_.wallNow();
  for (const auto& s : secrets_.store().list()) {
    if (s->metadata.namespace_ != options_.tokenSecretNamespace || s->type != kSecretTypeBootstrapToken) continue;
    auto t = validateSecretForSigning(*s, now);
    if (!t) continue;
    if (out.count(t->id)) {
      KLOG_V(1, "\"Duplicate bootstrap tokens found for id, ignoring on the duplicate secret\" tokenID=" +
                    log::quote(t->id) + " ignoredSecret=" +
                    log::quote(s->metadata.namespace_ + "/" + s->metadata.name));
      continue;
    }
    out[t->id] = t->secret;
  }
  return out;
}

runtime::SyncResult Signer::signConfigMap() {
  auto orig = configMaps_.store().get(options_.configMapNamespace, options_.configMapName);
  if (!orig) return runtime::SyncResult::ok();
  auto content = orig->data.find(kKubeConfigKey);
  if (content == orig->data.end()) {
    KLOG_V(3, "\"No key in ConfigMap\" key=\"kubeconfig\" configMap=" + log::quote(configMapKey_));
    return runtime::SyncResult::ok();
  }
  ConfigMap updated = *orig;
  std::map<std::string, std::string> oldSigs;
  const std::string prefix = kJWSSignatureKeyPrefix;
  for (const auto& [key, value] : orig->data)
    if (key.starts_with(prefix)) {
      oldSigs[key.substr(prefix.size())] = value;
      updated.data.erase(key);
    }
  bool needUpdate = false;
  for (const auto& [id, secret] : getTokens()) {
    std::string sig = computeDetachedSignature(content->second, id, secret);
    auto old = oldSigs.find(id);
    if (old == oldSigs.end() || old->second != sig) needUpdate = true;
    if (old != oldSigs.end()) oldSigs.erase(old);
    updated.data[prefix + id] = sig;
  }
  if (!oldSigs.empty()) needUpdate = true;  // signatures of tokens that are gone
  if (!needUpdate) return runtime::SyncResult::ok();
  auto r = client::update(*client_, updated);
  if (!r.ok() && r.status().code() != StatusCode::kConflict && r.status().code() != StatusCode::kNotFound)
    KLOG_V(3, "\"Error updating ConfigMap\" err=" + log::quote(r.status().message()));
  return runtime::SyncResult::ok();
}

}  // namespace kcm::controllers::bootstrap
