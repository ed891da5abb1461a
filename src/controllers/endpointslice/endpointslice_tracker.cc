#include "controllers/endpointslice/endpointslice_tracker.h"

namespace kcm::controllers::endpointslice {

using api::discovery::v1::EndpointSlice;

std::string EndpointSliceTracker::serviceKey(const EndpointSlice& s) {
  auto it = s.metadata.labels.find("kubernetes.io/service-name");
  return s.metadata.namespace_ + "/" + (it == s.metadata.labels.end() ? "" : it->second);
}

bool EndpointSliceTracker::has(const EndpointSlice& s) {
  std::lock_guard l(mu_);
  auto g = generationsByService_.find(serviceKey(s));
  return g != generationsByService_.end() && g->second.count(s.metadata.uid);
}

bool EndpointSliceTracker::shouldSync(const EndpointSlice& s) {
  std::lock_guard l(mu_);
  auto g = generationsByService_.find(serviceKey(s));
  if (g == generationsByService_.end()) return true;
  auto it = g->second.find(s.metadata.uid);
  return it == g->second.end() || s.metadata.generation > it->second;
}

bool EndpointSliceTracker::staleSlices(const std::string& ns, const std::string& service,
                                       const std::vector<const EndpointSlice*>& slices) {
  std::lock_guard l(mu_);
  auto g = generationsByService_.find(ns + "/" + service);
  if (g == generationsByService_.end()) return false;
  std::map<std::string, int64_t> provided;
  for (const auto* s : slices) {
    provided[s->metadata.uid] = s->metadata.generation;
    auto it = g->second.find(s->metadata.uid);
    if (it != g->second.end() && (it->second == kDeletionExpected || it->second > s->metadata.generation)) return true;
  }
  for (const auto& [uid, generation] : g->second)
    if (generation != kDeletionExpected && !provided.count(uid)) return true;
  return false;
}

void EndpointSliceTracker::update(const EndpointSlice& s) {
  std::lock_guard l(mu_);
  generationsByService_[serviceKey(s)][s.metadata.uid] = s.metadata.generation;
}

void EndpointSliceTracker::expectDeletion(const EndpointSlice& s) {
  std::lock_guard l(mu_);
  generationsByService_[serviceKey(s)][s.metadata.uid] = kDeletionExpected;
}

bool EndpointSliceTracker::handleDeletion(const EndpointSlice& s) {
  std::lock_guard l(mu_);
  auto g = generationsByService_.find(serviceKey(s));
  if (g != generationsByService_.end()) {
    auto it = g->second.find(s.metadata.uid);
    if (it != g->second.end()) {
      const int64_t generation = it->second;
      g->second.erase(it);
      if (generation != kDeletionExpected) return false;
    }
  }
  return true;
}

void EndpointSliceTracker::deleteService(const std::string& ns, const std::string& name) {
  std::lock_guard l(mu_);
  generationsByService_.erase(ns + "/" + name);
}

}  // namespace kcm::controllers::endpointslice
