#pragma once
// node-ipam-controller with the RangeAllocator (upstream pkg/controller/nodeipam/ipam/range_allocator.go):
// gives each node without one spec.podCIDRs, one per --cluster-cidr (IPv4, IPv6, or one of each for dual-stack,
// sized by --node-cidr-mask-size(-ipv4/-ipv6)) and spec.podCIDR = the first, never handing out the
// --service-cluster-ip-range; releases a node's CIDRs when it is deleted; restart-safe: create() lists the nodes
// from the API server (polling up to 10 minutes while that fails) and occupies the CIDRs they hold, and fails
// when one cannot be occupied (garbage, outside the cluster CIDR, more CIDRs than cluster CIDRs), which stops the
// controller manager, as upstream's NewCIDRRangeAllocator. Events (CIDRNotAvailable when a range is exhausted,
// CIDRAssignmentFailed when the node cannot be patched) are recorded on the Node (v1, its UID).
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "api/gen/core_v1.h"
#include "base/clock.h"
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
                                                        const std::vector<IpCidr>& clusterCIDRs,
                                                        const std::vector<int>& nodeMaskSizes,
                                                        const std::vector<IpCidr>& serviceCIDRs,
                                                        Clock& clock = RealClock::get(), std::stop_token stop = {});
  // While running, running_managed_controllers{manager="kube-controller-manager",name="nodeipam"} is 1 (upstream's
  // RunWithMetrics); 0 once stopped.
  void run(int workers, std::stop_token stop);
  ~RangeAllocator();
  runtime::SyncResult syncNode(const std::string& name);

 private:
  bool started_ = false;
  RangeAllocator(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
                 informers::SharedInformer<api::core::v1::Node>& nodes, std::vector<CidrSet> sets);
  Status occupyCIDRs(const api::core::v1::Node& node);
  void releaseCIDRs(const api::core::v1::Node& node);

  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::EventRecorder> recorder_;
  informers::SharedInformer<api::core::v1::Node>& nodes_;
  std::mutex mu_;
  std::vector<CidrSet> sets_;  // one per cluster CIDR, in flag order
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers
