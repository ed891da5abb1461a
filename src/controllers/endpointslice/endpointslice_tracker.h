#pragma once
// EndpointSliceTracker (k8s.io/endpointslice/util): the generation of every EndpointSlice this controller wrote,
// per Service, and the ones it deleted, so a sync on a cache that has not caught up yet is refused (StaleSlices)
// and the controller's own writes do not wake it again (ShouldSync, HandleDeletion).
#include <map>
#include <mutex>
#include <string>

#include "api/gen/discovery_v1.h"

namespace kcm::controllers::endpointslice {

class EndpointSliceTracker {
 public:
  bool has(const api::discovery::v1::EndpointSlice& s);
  // ShouldSync: unknown, or newer than what we wrote.
  bool shouldSync(const api::discovery::v1::EndpointSlice& s);
  // StaleSlices: a slice older than written, one expected deleted still there, or one written missing.
  bool staleSlices(const std::string& ns, const std::string& service,
                   const std::vector<const api::discovery::v1::EndpointSlice*>& slices);
  void update(const api::discovery::v1::EndpointSlice& s);
  void expectDeletion(const api::discovery::v1::EndpointSlice& s);
  // HandleDeletion: true when the deletion was ours (expected) or the slice unknown.
  bool handleDeletion(const api::discovery::v1::EndpointSlice& s);
  void deleteService(const std::string& ns, const std::string& name);

 private:
  static constexpr int64_t kDeletionExpected = -1;
  static std::string serviceKey(const api::discovery::v1::EndpointSlice& s);
  std::mutex mu_;
  std::map<std::string, std::map<std::string, int64_t>> generationsByService_;  // ns/svc -> uid -> generation
};

}  // namespace kcm::controllers::endpointslice
