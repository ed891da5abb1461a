#include "controllers/ttl/ttl_controller.h"

#include <climits>

#include "api/gen/core_v1_json.h"
#include "api/support/json_writer.h"
#include "client/typed_client.h"

namespace kcm::controllers {

using api::core::v1::Node;

namespace {
struct TTLBoundary {
  int sizeMin, sizeMax, ttlSeconds;
};
// Overlapping bands: grow past sizeMax to step up, shrink below sizeMin to step down.
constexpr TTLBoundary kBoundaries[] = {
    {0, 100, 0}, {90, 500, 15}, {450, 1000, 30}, {900, 2000, 60}, {1800, INT_MAX, 300},
};
}  // namespace

TTLController::TTLController(std::shared_ptr<client::RestClient> client, informers::SharedInformer<Node>& nodes)
    : client_(std::move(client)), nodes_(nodes),
      base_("ttlcontroller", [this](const std::string& key) { return updateNodeIfNeeded(key); }) {
  informers::EventHandler<Node> h;
  h.onAdd = [this](const auto& n) {
    {
      std::lock_guard l(mu_);
      ++nodeCount_;
      if (nodeCount_ > kBoundaries[boundaryStep_].sizeMax) desiredTTLSeconds_ = kBoundaries[++boundaryStep_].ttlSeconds;
    }
    base_.enqueue(n->metadata.name);
  };
  h.onUpdate = [this](const auto&, const auto& n) { base_.enqueue(n->metadata.name); };
  h.onDelete = [this](const auto&, bool) {
    std::lock_guard l(mu_);
    --nodeCount_;
    if (boundaryStep_ > 0 && nodeCount_ < kBoundaries[boundaryStep_].sizeMin)
      desiredTTLSeconds_ = kBoundaries[--boundaryStep_].ttlSeconds;
  };
  registrations_.push_back(nodes_.addEventHandler(h));
}

int TTLController::desiredTTLSeconds() const {
  std::lock_guard l(mu_);
  return desiredTTLSeconds_;
}

void TTLController::run(int workers, std::stop_token stop) {
  base_.start(workers, stop, {[this] { return nodes_.hasSynced(); }});
}

runtime::SyncResult TTLController::updateNodeIfNeeded(const std::string& key) {
  auto node = nodes_.store().get(key);
  if (!node) return runtime::SyncResult::ok();
  const int desired = desiredTTLSeconds();
  auto it = node->metadata.annotations.find(kObjectTTLAnnotationKey);
  if (it != node->metadata.annotations.end() && it->second == std::to_string(desired))
    return runtime::SyncResult::ok();
  // A strategic merge patch touching only the annotation (upstream computes the same two-way patch).
  std::string patch;
  api::JsonWriter w(patch);
  w.beginObject();
  w.key("metadata");
  w.beginObject();
  w.key("annotations");
  w.beginObject();
  w.key(kObjectTTLAnnotationKey);
  w.value(std::to_string(desired));
  w.endObject();
  w.endObject();
  w.endObject();
  auto r = client::patch<Node>(*client_, "", key, client::PatchType::kStrategicMerge, patch);
  if (r.ok() || r.status().code() == StatusCode::kNotFound) return runtime::SyncResult::ok();
  return runtime::SyncResult::error(r.status());
}

}  // namespace kcm::controllers
