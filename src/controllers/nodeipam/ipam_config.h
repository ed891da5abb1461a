#pragma once
// The node-ipam-controller's flags turned into cluster CIDRs and node mask sizes, with upstream's validation
// (cmd/kube-controller-manager/app/core.go validateCIDRs, setNodeCIDRMaskSizes) and messages.
#include <string>
#include <vector>

#include "base/status.h"
#include "controllers/nodeipam/cidr_set.h"

namespace kcm::controllers {

struct NodeIpamConfig {
  std::vector<IpCidr> clusterCIDRs;  // one, or one per family (dual-stack)
  std::vector<int> nodeMaskSizes;    // per cluster CIDR
  std::vector<IpCidr> serviceCIDRs;  // unparsable entries are skipped with a warning, as upstream
};

// maskSize/maskV4/maskV6: the flags' values, 0 when not set.
Result<NodeIpamConfig> nodeIpamConfig(const std::string& clusterCIDR, int maskSize, int maskV4, int maskV6,
                                      const std::string& serviceCIDR);

}  // namespace kcm::controllers
