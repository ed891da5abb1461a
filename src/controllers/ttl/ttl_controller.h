#pragma once
// ttl-controller (upstream pkg/controller/ttl/ttl_controller.go): sets the node annotation
// node.alpha.kubernetes.io/ttl (seconds kubelets may cache secrets/configmaps) from the cluster size, with
// upstream's overlapping bands so the value does not flap at a boundary: <=100 nodes 0 s, then 15, 30, 60, 300.
// Every node add/update is enqueued (nodes report status periodically, so a size change reaches all of them).
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "api/gen/core_v1.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers {

inline constexpr const char* kObjectTTLAnnotationKey = "node.alpha.kubernetes.io/ttl";

class TTLController {
 public:
  TTLController(std::shared_ptr<client::RestClient> client, informers::SharedInformer<api::core::v1::Node>& nodes);
  void run(int workers, std::stop_token stop);
  runtime::SyncResult updateNodeIfNeeded(const std::string& key);
  int desiredTTLSeconds() const;

 private:
  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<api::core::v1::Node>& nodes_;
  mutable std::mutex mu_;
  int nodeCount_ = 0;
  size_t boundaryStep_ = 0;
  int desiredTTLSeconds_ = 0;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers
