#include "controllers/bootstrap/tokencleaner.h"

#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/bootstrap/util.h"

namespace kcm::controllers::bootstrap {

using api::core::v1::Secret;

TokenCleaner::TokenCleaner(std::shared_ptr<client::RestClient> client, informers::SharedInformer<Secret>& secrets,
                           Clock& clock, std::string tokenSecretNamespace)
    : client_(std::move(client)), secrets_(secrets), clock_(clock),
      tokenSecretNamespace_(std::move(tokenSecretNamespace)),
      base_("token_cleaner", [this](const std::string& key) { return syncFunc(key); }, clock) {
  auto wanted = [this](const Secret& s) {
    return s.type == kSecretTypeBootstrapToken && s.metadata.namespace_ == tokenSecretNamespace_;
  };
  informers::EventHandler<Secret> h;
  h.onAdd = [this, wanted](const auto& s) {
    if (wanted(*s)) base_.enqueueObject(*s);
  };
  h.onUpdate = [this, wanted](const auto&, const auto& s) {
    if (wanted(*s)) base_.enqueueObject(*s);
  };
  registrations_.push_back(secrets_.addEventHandler(h));
}

void TokenCleaner::run(std::stop_token stop) {
  KLOG_INFO("\"Starting token cleaner controller\"");
  base_.start(1, stop, {[this] { return secrets_.hasSynced(); }});
}

runtime::SyncResult TokenCleaner::syncFunc(const std::string& key) {
  auto secret = secrets_.store().get(key);
  if (!secret) {
    KLOG_V(3, "\"Secret has been deleted\" secret=" + log::quote(key));
    return runtime::SyncResult::ok();
  }
  if (secret->type != kSecretTypeBootstrapToken) return runtime::SyncResult::ok();
  // evalSecret
  Expiration e = getExpiration(*secret, clock_.wallNow());
  if (e.expired) {
    KLOG_V(3, "\"Deleting expired secret\" secret=" + log::quote(key));
    client::DeleteOptions o;
    if (!secret->metadata.uid.empty()) o.preconditionUID = secret->metadata.uid;
    Status st = client::remove<Secret>(*client_, secret->metadata.namespace_, secret->metadata.name, o);
    // Gone already, or replaced (the UID precondition failed): nothing to do. Other errors are logged and, as
    // upstream, not retried: the next update of the Secret brings it back.
    if (!st.ok() && st.code() != StatusCode::kConflict && st.code() != StatusCode::kNotFound)
      KLOG_V(3, "\"Error deleting secret\" err=" + log::quote(st.message()));
    return runtime::SyncResult::ok();
  }
  if (e.remaining.count() > 0)
    return runtime::SyncResult::after(std::chrono::duration_cast<Clock::Duration>(e.remaining));
  return runtime::SyncResult::ok();
}

}  // namespace kcm::controllers::bootstrap
