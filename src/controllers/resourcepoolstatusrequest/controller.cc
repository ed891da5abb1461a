#include "controllers/resourcepoolstatusrequest/controller.h"

#include <algorithm>
#include <atomic>
#include <map>

#include "api/gen/resource_v1alpha3_json.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"
#include "controllers/resourcepoolstatusrequest/views.h"

namespace kcm::controllers::resourcepoolstatusrequest {
namespace {

using api::resource::v1alpha3::PoolStatus;
using namespace std::chrono_literals;

constexpr int kMaxRetries = 5;
constexpr auto kCleanupPollingInterval = 10min;
constexpr auto kCompletedRequestTTL = 1h;
constexpr auto kPendingRequestTTL = 24h;
constexpr int32_t kLimitDefault = 100;  // ResourcePoolStatusRequestLimitDefault
constexpr const char* kConditionComplete = "Complete";
constexpr const char* kConditionFailed = "Failed";
constexpr size_t kMaxValidationErrorBytes = 256;  // the field's +k8s:maxBytes

metrics::Counter& requestsProcessed(const std::string& driver) {
  return metrics::Registry::global().counter("resourcepoolstatusrequest_controller_requests_processed_total",
                                             "Total number of ResourcePoolStatusRequests processed",
                                             {{"driver_name", driver}});
}
metrics::Counter& requestProcessingErrors(const std::string& driver) {
  return metrics::Registry::global().counter(
      "resourcepoolstatusrequest_controller_request_processing_errors_total",
      "Total number of errors encountered while processing ResourcePoolStatusRequests", {{"driver_name", driver}});
}
metrics::Histogram& requestProcessingDuration(const std::string& driver) {
  std::vector<double> buckets;  // ExponentialBuckets(0.001, 2, 15)
  for (double b = 0.001; buckets.size() < 15; b *= 2) buckets.push_back(b);
  return metrics::Registry::global().histogram("resourcepoolstatusrequest_controller_request_processing_duration_seconds",
                                               "Time taken to process a ResourcePoolStatusRequest", buckets,
                                               {{"driver_name", driver}});
}

bool isNoScheduleOrNoExecute(const std::string& effect) { return effect == "NoSchedule" || effect == "NoExecute"; }

// ruleMakesDeviceUnavailable: the rule selects the device (a missing selector selects nothing) with an effect
// that keeps it from being scheduled.
bool ruleMakesDeviceUnavailable(const DeviceTaintRule& rule, const std::string& driver, const std::string& pool,
                                const std::string& device) {
  if (!isNoScheduleOrNoExecute(rule.spec.taint.effect)) return false;
  const auto& sel = rule.spec.deviceSelector;
  if (!sel) return false;
  if (sel->driver && *sel->driver != driver) return false;
  if (sel->pool && *sel->pool != pool) return false;
  if (sel->device && *sel->device != device) return false;
  return true;
}

bool deviceUnavailable(const std::string& driver, const std::string& pool, const api::resource::v1::Device& device,
                       const std::vector<std::shared_ptr<const DeviceTaintRule>>& rules) {
  for (const auto& t : device.taints)
    if (isNoScheduleOrNoExecute(t.effect)) return true;
  for (const auto& r : rules)
    if (ruleMakesDeviceUnavailable(*r, driver, pool, device.name)) return true;
  return false;
}

api::Time timeOf(std::chrono::system_clock::time_point t) {
  return api::Time::fromUnix(std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
}

std::string truncated(std::string s) {
  if (s.size() > kMaxValidationErrorBytes) s.resize(kMaxValidationErrorBytes);
  return s;
}

}  // namespace

Controller::Controller(std::shared_ptr<client::RestClient> client,
                       informers::SharedInformer<ResourcePoolStatusRequest>& requests,
                       informers::SharedInformer<ResourceSlice>& slices, informers::SharedInformer<ResourceClaim>& claims,
                       informers::SharedInformer<DeviceTaintRule>* taintRules, Clock& clock)
    : client_(std::move(client)), requests_(requests), slices_(slices), claims_(claims), taintRules_(taintRules),
      clock_(clock),
      // Upstream's queue has no name (no workqueue metrics); the requeue and drop lines are syncRequest's own.
      queue_("", [this](const std::string& k) {
        auto r = syncRequest(k);
        if (!r.status.ok()) {
          if (queue_.queue().numRequeues(k) < kMaxRetries)
            KLOG_ERROR("\"Error syncing request, requeuing\" err=" + log::quote(r.status.message()) +
                       " request=" + log::quote(k));
          else
            KLOG_ERROR("\"Dropping request out of the queue after max retries\" err=" +
                       log::quote(r.status.message()) + " request=" + log::quote(k) +
                       " retries=" + std::to_string(kMaxRetries));
          r.quiet = true;
        }
        return r;
      }, clock, kMaxRetries) {
  informers::EventHandler<ResourcePoolStatusRequest> h;
  h.onAdd = [this](const auto& r) { enqueueRequest(*r); };
  h.onUpdate = [this](const auto&, const auto& r) { enqueueRequest(*r); };
  registrations_.push_back(requests_.addEventHandler(h));
  KLOG_INFO("\"ResourcePoolStatusRequest controller initialized\"");
}

void Controller::run(std::stop_token stop) {
  KLOG_INFO("\"Starting ResourcePoolStatusRequest controller\"");
  KLOG_INFO("\"Waiting for informer caches to sync\"");
  std::vector<std::function<bool()>> synced = {[this] { return requests_.hasSynced(); },
                                               [this] { return slices_.hasSynced(); },
                                               [this] { return claims_.hasSynced(); }};
  if (taintRules_) synced.push_back([this] { return taintRules_->hasSynced(); });
  auto allSynced = [synced, logged = std::make_shared<std::atomic<bool>>(false)] {
    if (!std::all_of(synced.begin(), synced.end(), [](const auto& f) { return f(); })) return false;
    if (!logged->exchange(true)) KLOG_INFO("\"Starting workers\" count=1");
    return true;
  };
  // Requests are processed once the caches are in; expired ones are swept every 10 minutes from then on.
  cleanup_.start(clock_, kCleanupPollingInterval, stop, [this] { cleanupExpiredRequests(); }, allSynced);
  queue_.start(1, stop, synced);
}

void Controller::enqueueRequest(const ResourcePoolStatusRequest& request) {
  if (request.status) return;  // processed once, never again
  queue_.enqueue(request.metadata.name);
}

runtime::SyncResult Controller::syncRequest(const std::string& name) {
  const auto start = clock_.now();
  auto request = requests_.store().get(name);
  if (!request) return runtime::SyncResult::ok();  // deleted
  const std::string driver = request->spec.driver;
  if (request->status) {
    KLOG_V(4, "\"Request already processed, skipping\" request=" + log::quote(name));
    return runtime::SyncResult::ok();
  }
  KLOG_V(2, "\"Processing ResourcePoolStatusRequest\" request=" + log::quote(name) + " driver=" + log::quote(driver));
  ResourcePoolStatusRequestStatus status = calculatePoolStatus(*request);
  // A pool still missing slices of its generation: the driver is publishing; ask again later (not written).
  for (const auto& p : status.pools)
    if (p.validationError && p.validationError->starts_with(kPrefixPoolIncomplete))
      return runtime::SyncResult::error(Status(StatusCode::kUnavailable, "incomplete pools detected, requeueing"));

  ResourcePoolStatusRequest copy = *request;
  copy.status = std::move(status);
  const size_t poolCount = copy.status->pools.size();
  auto updated = client::updateStatus<ResourcePoolStatusRequest>(*client_, copy);
  const double seconds = std::chrono::duration<double>(clock_.now() - start).count();
  requestsProcessed(driver).inc();
  if (!driver.empty()) requestProcessingDuration(driver).observe(seconds);
  if (!updated.ok()) {
    requestProcessingErrors(driver).inc();
    return runtime::SyncResult::error(Status(updated.status().code(), "failed to update status for request " + name +
                                                                          ": " + updated.status().message()));
  }
  KLOG_V(2, "\"Successfully processed ResourcePoolStatusRequest\" request=" + log::quote(name) +
                " poolCount=" + std::to_string(poolCount));
  return runtime::SyncResult::ok();
}

ResourcePoolStatusRequestStatus Controller::calculatePoolStatus(const ResourcePoolStatusRequest& request) {
  const std::string& driver = request.spec.driver;
  const std::string poolFilter = request.spec.poolName.value_or("");
  struct PoolInfo {
    std::string nodeName;
    bool nodeNameMixed = false;
    int32_t totalDevices = 0, unavailableDevices = 0, sliceCount = 0;
    int64_t expectedSliceCount = 0, generation = 0;
    PoolViewInput view;
  };

  // Slices of the driver (and pool), in name order so that the views see devices in a stable order.
  std::vector<std::shared_ptr<const ResourceSlice>> slices;
  for (auto& s : slices_.store().list())
    if (s->spec.driver == driver && (poolFilter.empty() || s->spec.pool.name == poolFilter)) slices.push_back(s);
  std::sort(slices.begin(), slices.end(),
            [](const auto& a, const auto& b) { return a->metadata.name < b->metadata.name; });
  std::vector<std::shared_ptr<const DeviceTaintRule>> rules;
  if (taintRules_) rules = taintRules_->store().list();

  // Only the slices of each pool's latest generation count.
  std::map<std::string, int64_t> maxGeneration;  // "driver/pool"
  for (const auto& s : slices) {
    auto [it, added] = maxGeneration.emplace(s->spec.driver + "/" + s->spec.pool.name, s->spec.pool.generation);
    if (!added) it->second = std::max(it->second, s->spec.pool.generation);
  }
  std::map<std::string, PoolInfo> pools;  // "driver/pool", the order of the result
  for (const auto& s : slices) {
    const std::string& poolName = s->spec.pool.name;
    const std::string key = s->spec.driver + "/" + poolName;
    if (s->spec.pool.generation < maxGeneration[key]) continue;
    int32_t unavailable = 0;
    for (const auto& d : s->spec.devices) unavailable += deviceUnavailable(s->spec.driver, poolName, d, rules);
    const std::string nodeName = s->spec.nodeName.value_or("");
    auto [it, first] = pools.try_emplace(key);
    PoolInfo& info = it->second;
    if (first) {
      info.nodeName = nodeName;
      info.expectedSliceCount = s->spec.pool.resourceSliceCount;
      info.generation = maxGeneration[key];
      info.view.driver = s->spec.driver, info.view.poolName = poolName;
    } else if (nodeName != info.nodeName) {
      info.nodeNameMixed = true;
    }
    info.totalDevices += static_cast<int32_t>(s->spec.devices.size());
    info.unavailableDevices += unavailable;
    ++info.sliceCount;
    auto records = sliceDeviceRecords(*s);
    std::move(records.begin(), records.end(), std::back_inserter(info.view.devices));
    info.view.sharedCounters.insert(info.view.sharedCounters.end(), s->spec.sharedCounters.begin(),
                                    s->spec.sharedCounters.end());
  }

  // Allocated devices (each counted once however many claims share it) and their consumed capacity; admin access
  // observes rather than consumes.
  for (const auto& claim : claims_.store().list()) {
    if (!claim->status.allocation) continue;
    for (const auto& r : claim->status.allocation->devices.results) {
      if (r.adminAccess.value_or(false)) continue;
      auto it = pools.find(r.driver + "/" + r.pool);
      if (it == pools.end()) continue;
      it->second.view.inUse.insert(r.device);
      for (const auto& [name, q] : r.consumedCapacity) it->second.view.consumedCapacity[name].add(quota::Amount::of(q));
    }
  }

  ResourcePoolStatusRequestStatus status;
  for (auto& [key, info] : pools) {
    PoolStatus p;
    p.driver = info.view.driver, p.poolName = info.view.poolName, p.generation = info.generation;
    if (!info.nodeName.empty() && !info.nodeNameMixed) p.nodeName = info.nodeName;
    if (info.sliceCount < info.expectedSliceCount) {
      p.validationError = truncated(std::string(kPrefixPoolIncomplete) + " pool " + key + " is incomplete: observed " +
                                    std::to_string(info.sliceCount) + "/" + std::to_string(info.expectedSliceCount) +
                                    " slices at generation " + std::to_string(info.generation));
    } else {
      const int32_t allocated = static_cast<int32_t>(info.view.inUse.size());
      p.resourceSliceCount = info.sliceCount;
      p.totalDevices = info.totalDevices;
      p.allocatedDevices = allocated;
      p.availableDevices = std::max(0, info.totalDevices - allocated - info.unavailableDevices);
      p.unavailableDevices = info.unavailableDevices;
      resolveDevicePartitions(request.spec.defaultPartitionTypeAttribute, info.view);
      PoolViews v = computePoolViews(info.view);
      p.partitionSummary = std::move(v.partitionSummary);
      if (v.shareable) p.shareableSummary = std::move(*v.shareable);
      if (!v.validationError.empty()) p.validationError = truncated(std::move(v.validationError));
    }
    status.pools.push_back(std::move(p));
  }
  status.poolCount = static_cast<int32_t>(status.pools.size());
  const int32_t limit = request.spec.limit.value_or(kLimitDefault);
  if (limit >= 0 && static_cast<int64_t>(status.pools.size()) > limit) status.pools.resize(limit);
  const auto incomplete =
      std::count_if(status.pools.begin(), status.pools.end(), [](const auto& p) { return p.validationError.has_value(); });
  std::string message = "Calculated status for " + std::to_string(status.pools.size()) + " pools";
  if (incomplete > 0) message += " (" + std::to_string(incomplete) + " incomplete)";
  api::meta::v1::Condition c;
  c.type = kConditionComplete, c.status = "True", c.reason = "CalculationComplete", c.message = message;
  c.lastTransitionTime = timeOf(clock_.wallNow());
  status.conditions.push_back(std::move(c));
  KLOG_V(4, "\"Calculated pool status\" request=" + log::quote(request.metadata.name) +
                " poolCount=" + std::to_string(*status.poolCount) + " returned=" + std::to_string(status.pools.size()));
  return status;
}

void Controller::cleanupExpiredRequests() {
  int deleted = 0;
  for (const auto& r : requests_.store().list()) {
    if (!shouldDeleteRequest(*r)) continue;
    client::DeleteOptions o;
    o.preconditionUID = r->metadata.uid;
    if (Status st = client::remove<ResourcePoolStatusRequest>(*client_, "", r->metadata.name, o); !st.ok()) {
      if (st.code() != StatusCode::kNotFound)
        KLOG_ERROR("\"Failed to delete expired ResourcePoolStatusRequest\" err=" + log::quote(st.message()) +
                   " request=" + log::quote(r->metadata.name));
      continue;
    }
    ++deleted;
    KLOG_V(2, "\"Deleted expired ResourcePoolStatusRequest\" request=" + log::quote(r->metadata.name));
  }
  if (deleted > 0) KLOG_INFO("\"Cleanup completed\" deletedCount=" + std::to_string(deleted));
}

bool Controller::shouldDeleteRequest(const ResourcePoolStatusRequest& request) const {
  const int64_t now = timeOf(clock_.wallNow()).unixSeconds;
  auto olderThan = [now](const api::Time& t, std::chrono::seconds d) {
    return !t.isZero() && now - t.unixSeconds > d.count();
  };
  if (request.status) {
    for (const auto& c : request.status->conditions)
      if (c.type == kConditionComplete || c.type == kConditionFailed)
        return olderThan(c.lastTransitionTime, kCompletedRequestTTL);
    return olderThan(request.metadata.creationTimestamp, kCompletedRequestTTL);
  }
  return olderThan(request.metadata.creationTimestamp, kPendingRequestTTL);
}

}  // namespace kcm::controllers::resourcepoolstatusrequest
