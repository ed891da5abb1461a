#include "controllers/serviceaccount/legacy_serviceaccount_token_cleaner.h"

#include <ctime>

#include <nlohmann/json.hpp>

#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/util/pod_secrets.h"

namespace kcm::controllers {

using api::core::v1::Secret;
using api::core::v1::ServiceAccount;
using SysClock = std::chrono::system_clock;

std::string formatDate(SysClock::time_point t) {
  std::time_t tt = SysClock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::optional<SysClock::time_point> parseDate(const std::string& s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return std::nullopt;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
  std::tm tm{};
  tm.tm_year = std::stoi(s.substr(0, 4)) - 1900;
  tm.tm_mon = std::stoi(s.substr(5, 2)) - 1;
  tm.tm_mday = std::stoi(s.substr(8, 2));
  std::tm check = tm;
  std::time_t tt = timegm(&check);
  if (check.tm_year != tm.tm_year || check.tm_mon != tm.tm_mon || check.tm_mday != tm.tm_mday) return std::nullopt;
  return SysClock::from_time_t(tt);
}

LegacySATokenCleaner::LegacySATokenCleaner(std::shared_ptr<client::RestClient> client,
                                           informers::SharedInformer<ServiceAccount>& sas,
                                           informers::SharedInformer<Secret>& secrets,
                                           informers::SharedInformer<api::core::v1::Pod>& pods,
                                           std::chrono::seconds cleanUpPeriod, Clock::Duration syncInterval,
                                           Clock& clock)
    : client_(std::move(client)), sas_(sas), secrets_(secrets), pods_(pods), minimumSinceLastUsed_(cleanUpPeriod),
      syncInterval_(syncInterval), clock_(clock) {}

void LegacySATokenCleaner::run(std::stop_token stop) {
  KLOG_INFO("\"Starting legacy service account token cleaner controller\"");
  periodic_.start(clock_, syncInterval_, stop, [this] { evaluateSATokens(); },
                  [this] { return sas_.hasSynced() && secrets_.hasSynced() && pods_.hasSynced(); });
}

Result<SysClock::time_point> LegacySATokenCleaner::latestPossibleTrackedSinceTime() {
  auto cm = client::get<api::core::v1::ConfigMap>(*client_, "kube-system", kLegacyTokenTrackingConfigMapName);
  if (!cm.ok()) return cm.status();
  auto it = cm->data.find(kLegacyTokenTrackingConfigMapDataKey);
  if (it == cm->data.end()) return Status(StatusCode::kNotFound, "configMap does not have since label");
  auto since = parseDate(it->second);
  if (!since)
    return Status(StatusCode::kInvalidArgument, "error parsing trackedSince time: parsing time \"" + it->second +
                                                    "\" as \"2006-01-02\": cannot parse");
  return *since + std::chrono::hours(24);  // the day after: tracking may have started late that day
}

std::shared_ptr<const ServiceAccount> LegacySATokenCleaner::getServiceAccount(const Secret& secret) const {
  auto name = secret.metadata.annotations.find("kubernetes.io/service-account.name");
  if (name == secret.metadata.annotations.end() || name->second.empty()) return nullptr;
  auto uid = secret.metadata.annotations.find("kubernetes.io/service-account.uid");
  auto sa = sas_.store().get(secret.metadata.namespace_ + "/" + name->second);
  if (!sa) return nullptr;
  if (uid == secret.metadata.annotations.end() || uid->second.empty() || uid->second == sa->metadata.uid) return sa;
  return nullptr;
}

const std::set<std::string>& LegacySATokenCleaner::mountedSecretNames(
    const std::string& ns, std::unordered_map<std::string, std::set<std::string>>& cache) const {
  auto it = cache.find(ns);
  if (it != cache.end()) return it->second;
  std::set<std::string>& names = cache[ns];
  for (const auto& pod : pods_.store().byIndex(informers::kNamespaceIndex, ns)) insertPodSecretNames(*pod, names);
  return names;
}

void LegacySATokenCleaner::evaluateSATokens() {
  const SysClock::time_point now = clock_.wallNow();
  auto trackedSince = latestPossibleTrackedSinceTime();
  if (!trackedSince.ok()) {
    KLOG_ERROR("\"Getting lastest possible tracked_since time\" err=" + log::quote(trackedSince.status().message()));
    return;
  }
  if (now < *trackedSince + minimumSinceLastUsed_) return;  // tracking has not run for a whole period yet
  const SysClock::time_point preserveCreatedOnOrAfter = now - minimumSinceLastUsed_;
  const std::string preserveUsedOnOrAfter = formatDate(now - minimumSinceLastUsed_);
  std::unordered_map<std::string, std::set<std::string>> mounted;
  for (const auto& secret : secrets_.store().list()) {
    const auto& md = secret->metadata;
    if (secret->type != "kubernetes.io/service-account-token") continue;
    if (md.creationTimestamp.isZero() ||
        !(SysClock::from_time_t(md.creationTimestamp.unixSeconds) < preserveCreatedOnOrAfter))
      continue;
    if (md.deletionTimestamp && !md.deletionTimestamp->isZero()) continue;
    const std::string ref = log::quote(md.namespace_ + "/" + md.name);
    std::string lastUsed;
    if (auto l = md.labels.find(kLegacyTokenLastUsedLabelKey); l != md.labels.end()) {
      lastUsed = l->second;
      if (!parseDate(lastUsed)) {
        KLOG_ERROR("\"Parsing lastUsed time\" err=" + log::quote("parsing time \"" + lastUsed + "\" as \"2006-01-02\"") +
                   " secret=" + ref);
        continue;
      }
      if (lastUsed >= preserveUsedOnOrAfter) continue;
    }
    auto sa = getServiceAccount(*secret);
    if (!sa) continue;
    bool referenced = false;
    for (const auto& s : sa->secrets) referenced = referenced || s.name == md.name;
    if (!referenced) continue;
    if (mountedSecretNames(md.namespace_, mounted).count(md.name)) continue;
    std::string invalidSince;
    if (auto l = md.labels.find(kLegacyTokenInvalidSinceLabelKey); l != md.labels.end()) invalidSince = l->second;
    if (!parseDate(invalidSince)) {
      invalidSince = formatDate(now);
      KLOG_INFO("\"Mark the auto-generated service account token as invalid\" invalidSince=" + log::quote(invalidSince) +
                " secret=" + ref);
      // the apply configuration upstream marshals and sends as a merge patch (its uid makes it a precondition)
      nlohmann::ordered_json patch = {
          {"kind", "Secret"},
          {"apiVersion", "v1"},
          {"metadata",
           {{"name", md.name}, {"namespace", md.namespace_}, {"uid", md.uid},
            {"labels", {{kLegacyTokenInvalidSinceLabelKey, invalidSince}}}}}};
      auto r = client::patch<Secret>(*client_, md.namespace_, md.name, client::PatchType::kMerge, patch.dump());
      if (!r.ok())
        KLOG_ERROR("\"Failed to label legacy service account token secret with invalid since date\" err=" +
                   log::quote(r.status().message()));
      continue;
    }
    if (invalidSince >= preserveUsedOnOrAfter) continue;
    KLOG_INFO("\"Delete auto-generated service account token\" secret=" + ref + " creationTime=" +
              log::quote(md.creationTimestamp.rfc3339()) + " lastUsed=" + log::quote(lastUsed) +
              " invalidSince=" + log::quote(invalidSince));
    client::DeleteOptions o;
    o.preconditionResourceVersion = md.resourceVersion;
    Status st = client::remove<Secret>(*client_, md.namespace_, md.name, o);
    if (!st.ok() && st.code() != StatusCode::kConflict && st.code() != StatusCode::kNotFound)
      KLOG_ERROR("\"Deleting legacy service account token\" err=" + log::quote(st.message()) + " secret=" + ref +
                 " serviceaccount=" + log::quote(sa->metadata.name));
  }
}

}  // namespace kcm::controllers
