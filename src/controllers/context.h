#pragma once
// ControllerContext (upstream's CreateControllerContext): what every controller's init function receives —
// the options, feature gates, the shared and metadata informer factories, a client builder (root or
// per-controller service-account credentials), discovery with a REST mapper reset every 30 s, and the stop token.
// Informers registered during init start after all controllers were started (InformersStarted).
#include <atomic>
#include <memory>
#include <stop_token>
#include <vector>

#include "client/discovery.h"
#include "client/events.h"
#include "controllers/client_builder.h"
#include "informers/factory.h"
#include <functional>
#include <string>

#include "options/feature_gates.h"
#include "options/typed_options.h"

namespace kcm::controllers {

struct ControllerContext {
  const options::KubeControllerManagerOptions* options = nullptr;
  const options::FeatureGates* featureGates = nullptr;
  std::shared_ptr<client::RestClient> rootClient;
  std::unique_ptr<ClientBuilder> clientBuilder;
  std::unique_ptr<informers::SharedInformerFactory> informerFactory;
  std::shared_ptr<client::DiscoveryClient> discovery;
  // Events: one broadcaster (root client), a recorder per controller with its event source component.
  std::shared_ptr<client::EventBroadcaster> eventBroadcaster;
  std::stop_token stop;
  std::atomic<bool> informersStarted{false};
  // Registers a debug page on the secure server (e.g. /debug/controllers/garbagecollector/graph), behind the
  // same authorization as /metrics; a no-op without serving.
  std::function<void(const std::string& path, std::function<std::string()> content)> addDebugHandler =
      [](const std::string&, std::function<std::string()>) {};
};

}  // namespace kcm::controllers
