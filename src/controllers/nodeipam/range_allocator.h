#pragma once
// node-ipam-controller with the RangeAllocator (upstream pkg/controller/nodeipam/ipam/range_allocator.go):
// gives each node without one a spec.podCIDR/podCIDRs from --cluster-cidr, /--node-cidr-mask-size(-ipv4) each,
// never handing out the --service-cluster-ip-range; releases a node's CIDR when it is deleted; restart-safe
// (CIDRs already on nodes are occupied before any allocation). When the range is exhausted it records the event
// CIDRNotAvailable on the node. IPv4 only for now (an IPv6 --cluster-cidr fails the controller's start).
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/gen/core_v1.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/nodeipam/cidr_set.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers {

class RangeAllocator {
 public:
  static Result<std::unique_ptr<RangeAllocator>> create(std::shared_ptr<client::RestClient> client,
                                                        std::shared_ptr<client::EventRecorder> recorder,
                                                        informers::SharedInformer<api::core::v1::Node>& nodes,
                                                        const std::string& clusterCIDR, int nodeMaskSize,
                                                        const std::string& serviceCIDR);
  void run(int workers, std::stop_token stop);
  runtime::SyncResult syncNode(const std::string& name);

 private:
  RangeAllocator(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
                 informers::SharedInformer<api::core::v1::Node>& nodes, CidrSet set);
  Status occupyCIDRs(const api::core::v1::Node& node);
  void releaseCIDRs(const api::core::v1::Node& node);

  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::EventRecorder> recorder_;
  informers::SharedInformer<api::core::v1::Node>& nodes_;
  std::mutex mu_;
  CidrSet set_;
  runtime::ControllerBase base_;
  std::jthread thread_;
};

}  // namespace kcm::controllers
