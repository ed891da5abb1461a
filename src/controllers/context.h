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
namespace gc {
class GarbageCollector;
}

struct ControllerContext {
  const options::KubeControllerManagerOptions* options = nullptr;
  const options::FeatureGates* featureGates = nullptr;
  std::shared_ptr<client::RestClient> rootClient;
  std::unique_ptr<ClientBuilder> clientBuilder;
  std::unique_ptr<informers::SharedInformerFactory> informerFactory;
  std::shared_ptr<client::DiscoveryClient> discovery;
  // Events as upstream gives them to each controller: a broadcaster of its own writing through the controller's
  // own client (so audit logs show the controller's identity), source {Component: component} with no host
  // (e.g. NewDeploymentController). The broadcasters live here, until the controllers are gone.
  std::shared_ptr<client::EventRecorder> newEventRecorder(std::shared_ptr<client::RestClient> client,
                                                          const std::string& component) {
    auto b = std::make_shared<client::EventBroadcaster>(std::move(client), "");
    eventBroadcasters.push_back(b);
    return b->newRecorder(component);
  }
  std::vector<std::shared_ptr<client::EventBroadcaster>> eventBroadcasters;
  // The garbage collector once built (upstream's ControllerContext.GraphBuilder): the storage version migrator
  // reads its monitors. Empty when it is off.
  std::weak_ptr<gc::GarbageCollector> garbageCollector;
  std::stop_token stop;
  std::atomic<bool> informersStarted{false};
  // Registers a debug page on the secure server (e.g. /debug/controllers/garbagecollector/graph), behind the
  // same authorization as /metrics; a no-op without serving.
  std::function<void(const std::string& path, std::function<std::string()> content)> addDebugHandler =
      [](const std::string&, std::function<std::string()>) {};
};

}  // namespace kcm::controllers
