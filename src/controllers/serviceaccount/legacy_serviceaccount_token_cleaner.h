#pragma once
// legacy-serviceaccount-token-cleaner-controller (alias legacy-service-account-token-cleaner; upstream
// pkg/controller/serviceaccount/legacy_serviceaccount_token_cleaner.go): once a day, for every legacy
// (kubernetes.io/service-account-token) Secret older than --legacy-service-account-token-clean-up-period, still
// referenced by its ServiceAccount, not mounted or referenced by any pod of its namespace and not used within the
// period (label kubernetes.io/legacy-token-last-used): first labels it kubernetes.io/legacy-token-invalid-since
// (today, UTC), then deletes it once that date is a clean-up period old (resourceVersion precondition). Nothing
// happens before the apiserver's tracking start (kube-system/kube-apiserver-legacy-service-account-token-tracking,
// key `since`) plus a day plus the period.
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>

#include "api/gen/core_v1.h"
#include "base/clock.h"
#include "base/executor.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"

namespace kcm::controllers {

inline constexpr const char* kLegacyTokenLastUsedLabelKey = "kubernetes.io/legacy-token-last-used";
inline constexpr const char* kLegacyTokenInvalidSinceLabelKey = "kubernetes.io/legacy-token-invalid-since";
inline constexpr const char* kLegacyTokenTrackingConfigMapName = "kube-apiserver-legacy-service-account-token-tracking";
inline constexpr const char* kLegacyTokenTrackingConfigMapDataKey = "since";

class LegacySATokenCleaner {
 public:
  static constexpr std::chrono::hours kDefaultCleanerSyncInterval{24};
  LegacySATokenCleaner(std::shared_ptr<client::RestClient> client,
                       informers::SharedInformer<api::core::v1::ServiceAccount>& sas,
                       informers::SharedInformer<api::core::v1::Secret>& secrets,
                       informers::SharedInformer<api::core::v1::Pod>& pods, std::chrono::seconds cleanUpPeriod,
                       Clock::Duration syncInterval = kDefaultCleanerSyncInterval, Clock& clock = RealClock::get());
  void run(std::stop_token stop);
  void evaluateSATokens();  // one pass

 private:
  Result<std::chrono::system_clock::time_point> latestPossibleTrackedSinceTime();
  std::shared_ptr<const api::core::v1::ServiceAccount> getServiceAccount(const api::core::v1::Secret& secret) const;
  const std::set<std::string>& mountedSecretNames(const std::string& ns,
                                                  std::unordered_map<std::string, std::set<std::string>>& cache) const;
  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<api::core::v1::ServiceAccount>& sas_;
  informers::SharedInformer<api::core::v1::Secret>& secrets_;
  informers::SharedInformer<api::core::v1::Pod>& pods_;
  std::chrono::seconds minimumSinceLastUsed_;
  Clock::Duration syncInterval_;
  Clock& clock_;
  Periodic periodic_;  // last: stopped before the rest goes
};

// "2006-01-02" in UTC, and its strict parse (time.Parse with that layout).
std::string formatDate(std::chrono::system_clock::time_point t);
std::optional<std::chrono::system_clock::time_point> parseDate(const std::string& s);

}  // namespace kcm::controllers
