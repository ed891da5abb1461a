#include "controllers/namespace/namespace_controller.h"

#include "base/log.h"

namespace kcm::controllers {

namespace {
constexpr auto kNamespaceDeletionGracePeriod = std::chrono::seconds(5);

std::unique_ptr<runtime::ItemRateLimiter> nsControllerRateLimiter() {
  std::vector<std::unique_ptr<runtime::ItemRateLimiter>> ls;
  ls.push_back(std::make_unique<runtime::ItemExponentialFailureRateLimiter>(std::chrono::milliseconds(5),
                                                                            std::chrono::seconds(60)));
  ls.push_back(std::make_unique<runtime::BucketRateLimiter>(10, 100));
  return std::make_unique<runtime::MaxOfRateLimiter>(std::move(ls));
}
}  // namespace

NamespaceController::NamespaceController(std::unique_ptr<NamespacedResourcesDeleter> deleter,
                                         informers::SharedInformer<api::core::v1::Namespace>& namespaces,
                                         Clock::Duration resyncPeriod)
    : deleter_(std::move(deleter)), namespaces_(namespaces),
      base_("namespace", [this](const std::string& key) { return syncNamespaceFromKey(key); }, RealClock::get(), -1,
            nsControllerRateLimiter()) {
  informers::EventHandler<api::core::v1::Namespace> h;
  h.onAdd = [this](const auto& ns) { enqueueNamespace(*ns); };
  h.onUpdate = [this](const auto&, const auto& ns) { enqueueNamespace(*ns); };
  registrations_.push_back(namespaces_.addEventHandler(h, resyncPeriod));
}

void NamespaceController::enqueueNamespace(const api::core::v1::Namespace& ns) {
  if (!ns.metadata.deletionTimestamp) return;
  // Give in-flight creations in the namespace a moment to land before listing its content.
  base_.enqueueAfter(ns.metadata.name, kNamespaceDeletionGracePeriod);
}

void NamespaceController::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting namespace controller\"");
  base_.start(workers, stop, {[this] { return namespaces_.hasSynced(); }});
}

runtime::SyncResult NamespaceController::syncNamespaceFromKey(const std::string& key) {
  if (!namespaces_.store().get(key)) {
    KLOG_INFO("\"Namespace has been deleted\" namespace=\"" + key + "\"");
    return runtime::SyncResult::ok();
  }
  auto o = deleter_->deleteNamespace(key);
  if (!o.status.ok()) return runtime::SyncResult::error(o.status);
  if (o.remainingEstimateSeconds > 0) {
    KLOG_V(4, "\"Content remaining in namespace\" namespace=\"" + key + "\" waitSeconds=" +
                  std::to_string(o.remainingEstimateSeconds / 2 + 1));
    return runtime::SyncResult::after(std::chrono::seconds(o.remainingEstimateSeconds / 2 + 1));
  }
  return runtime::SyncResult::ok();
}

}  // namespace kcm::controllers
