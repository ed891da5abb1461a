#include "controllers/certificates/ctb_publisher.h"

#include <openssl/sha.h>

#include <algorithm>
#include <chrono>

#include "api/gen/certificates_v1_json.h"
#include "base/duration.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"

namespace kcm::controllers::certificates {

using api::certificates::v1::ClusterTrustBundle;

namespace {

informers::ListerWatcher<ClusterTrustBundle> signerListerWatcher(std::shared_ptr<client::RestClient> c,
                                                                 const std::string& signerName) {
  auto lw = informers::typedListerWatcher<ClusterTrustBundle>(c);
  const std::string selector = "spec.signerName=" + signerName;
  auto list = lw.list;
  lw.list = [list, selector](const client::ListOptions& o, const std::function<void(ClusterTrustBundle&&)>& onItem) {
    client::ListOptions f = o;
    f.fieldSelector = selector;
    return list(f, onItem);
  };
  auto watch = lw.watchAsync;
  lw.watchAsync = [watch, selector](const client::ListOptions& o, client::OnLine onLine,
                                    std::function<void(Status)> onDone, std::stop_token stop) {
    client::ListOptions f = o;
    f.fieldSelector = selector;
    return watch(f, std::move(onLine), std::move(onDone), stop);
  };
  return lw;
}

std::string httpCode(StatusCode c) {
  switch (c) {
    case StatusCode::kNotFound: return "404";
    case StatusCode::kAlreadyExists: case StatusCode::kConflict: return "409";
    case StatusCode::kGone: return "410";
    case StatusCode::kUnauthorized: return "401";
    case StatusCode::kForbidden: return "403";
    case StatusCode::kInvalid: return "422";
    case StatusCode::kTooManyRequests: return "429";
    case StatusCode::kTimeout: return "504";
    case StatusCode::kUnavailable: return "503";
    default: return "500";
  }
}

void recordMetrics(std::chrono::steady_clock::time_point start, const Status& st) {
  std::string code = "200";
  if (!st.ok()) code = httpCode(st.code());
  auto& reg = metrics::Registry::global();
  reg.histogram("clustertrustbundle_publisher_sync_duration_seconds",
                "The time it took to sync a cluster trust bundle.", metrics::exponentialBuckets(0.001, 2, 15),
                {{"code", code}})
      .observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  reg.counter("clustertrustbundle_publisher_sync_total", "Number of syncs that occurred in cluster trust bundle publisher.",
              {{"code", code}})
      .inc();
}

}  // namespace

std::string constructBundleName(const std::string& signerName, const std::string& bundle) {
  std::string prefix = signerName;
  std::replace(prefix.begin(), prefix.end(), '/', ':');
  unsigned char sum[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bundle.data()), bundle.size(), sum);
  static const char kHex[] = "0123456789abcdef";
  std::string out = prefix + ":";
  for (int i = 0; i < 12; ++i) {
    out += kHex[sum[i] >> 4];
    out += kHex[sum[i] & 15];
  }
  return out;
}

ClusterTrustBundlePublisher::ClusterTrustBundlePublisher(std::string signerName, std::string caBundle,
                                                         std::shared_ptr<client::RestClient> client, Clock& clock)
    : signerName_(std::move(signerName)), caBundle_(std::move(caBundle)), client_(std::move(client)),
      informer_(signerListerWatcher(client_, signerName_), informers::InformerOptions{Clock::Duration{0}, &clock}),
      base_("ca_cert_publisher_cluster_trust_bundles", [this](const std::string&) { return syncClusterTrustBundle(); },
            clock) {
  informers::EventHandler<ClusterTrustBundle> h;
  h.onAdd = [this](const auto&) { base_.enqueue(""); };
  h.onUpdate = [this](const auto&, const auto&) { base_.enqueue(""); };
  h.onDelete = [this](const auto&, bool) { base_.enqueue(""); };
  registrations_.push_back(informer_.addEventHandler(h));
}

void ClusterTrustBundlePublisher::run(std::stop_token stop) {
  KLOG_INFO("\"Starting ClusterTrustBundle CA cert publisher controller\"");
  informer_.start(stop);
  base_.enqueue("");  // the first sync, once the cache has synced
  base_.start(1, stop, {[this] { return informer_.hasSynced(); }});
}

runtime::SyncResult ClusterTrustBundlePublisher::syncClusterTrustBundle() {
  const auto start = std::chrono::steady_clock::now();
  const std::string bundleName = constructBundleName(signerName_, caBundle_);
  Status st = Status::Ok();
  auto bundle = informer_.store().get(bundleName);
  if (!bundle) {
    ClusterTrustBundle b;
    b.apiVersion = "certificates.k8s.io/v1";
    b.kind = "ClusterTrustBundle";
    b.metadata.name = bundleName;
    b.spec.signerName = signerName_;
    b.spec.trustBundle = caBundle_;
    st = client::create(*client_, "", b).status();
  } else if (bundle->spec.trustBundle != caBundle_) {
    ClusterTrustBundle b = *bundle;
    b.spec.trustBundle = caBundle_;
    st = client::update(*client_, b).status();
  }
  if (st.ok()) {
    for (const auto& other : informer_.store().list()) {
      if (other->metadata.name == bundleName) continue;
      Status d = client::remove<ClusterTrustBundle>(*client_, "", other->metadata.name);
      if (!d.ok() && d.code() != StatusCode::kNotFound) {
        KLOG_ERROR("\"failed to remove a cluster trust bundle\" err=" + log::quote(d.message()) +
                   " bundleName=" + log::quote(other->metadata.name));
        st = d;
      }
    }
  }
  recordMetrics(start, st);
  KLOG_V(4, "\"Finished syncing ClusterTrustBundle\" signerName=" + log::quote(signerName_) + " elapsedTime=" +
                log::quote(goDuration(std::chrono::steady_clock::now() - start)));
  if (!st.ok()) return runtime::SyncResult::error(st);
  return runtime::SyncResult::ok();
}

}  // namespace kcm::controllers::certificates
