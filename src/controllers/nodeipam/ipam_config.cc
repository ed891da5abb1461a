#include "controllers/nodeipam/ipam_config.h"

#include "base/log.h"

namespace kcm::controllers {

namespace {
constexpr int kDefaultNodeMaskIPv4 = 24;
constexpr int kDefaultNodeMaskIPv6 = 64;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  std::string t = a == std::string::npos ? "" : s.substr(a, b - a + 1);
  for (size_t start = 0;;) {
    size_t c = t.find(',', start);
    out.push_back(t.substr(start, c == std::string::npos ? std::string::npos : c - start));
    if (c == std::string::npos) break;
    start = c + 1;
  }
  return out;
}
}  // namespace

Result<NodeIpamConfig> nodeIpamConfig(const std::string& clusterCIDR, int maskSize, int maskV4, int maskV6,
                                      const std::string& serviceCIDR) {
  NodeIpamConfig cfg;
  bool hasV4 = false, hasV6 = false;
  for (const auto& s : split(clusterCIDR)) {
    auto c = IpCidr::parse(s);
    if (!c.ok())
      return Status(StatusCode::kInvalidArgument,
                    "failed to parse cidr value:\"" + s + "\" with error:" + c.status().message());
    (c->v6 ? hasV6 : hasV4) = true;
    cfg.clusterCIDRs.push_back(*c);
  }
  const size_t n = cfg.clusterCIDRs.size();
  const bool dualStack = hasV4 && hasV6;
  if (n > 1 && !dualStack)
    return Status(StatusCode::kInvalidArgument, "len of ClusterCIDRs==" + std::to_string(n) +
                                                    " and they are not configured as dual stack (at least one from "
                                                    "each IPFamily");
  if (n > 2)
    return Status(StatusCode::kInvalidArgument,
                  "length of clusterCIDRs is:" + std::to_string(n) + " more than max allowed of 2");

  int v4 = kDefaultNodeMaskIPv4, v6 = kDefaultNodeMaskIPv6;
  if (n > 1) {
    if (maskSize != 0)
      return Status(StatusCode::kInvalidArgument, "usage of --node-cidr-mask-size is not allowed with dual-stack clusters");
    if (maskV4 != 0) v4 = maskV4;
    if (maskV6 != 0) v6 = maskV6;
  } else if (maskSize != 0) {
    if (maskV4 != 0 || maskV6 != 0)
      return Status(StatusCode::kInvalidArgument,
                    "usage of --node-cidr-mask-size-ipv4 and --node-cidr-mask-size-ipv6 is not allowed if "
                    "--node-cidr-mask-size is set. For dual-stack clusters please unset it and use IPFamily specific "
                    "flags");
    v4 = v6 = maskSize;
  } else {
    const bool singleV6 = cfg.clusterCIDRs[0].v6;
    if (maskV4 != 0) {
      if (singleV6)
        return Status(StatusCode::kInvalidArgument,
                      "usage of --node-cidr-mask-size-ipv4 is not allowed for a single-stack IPv6 cluster");
      v4 = maskV4;
    }
    if (maskV6 != 0) {
      if (!singleV6)
        return Status(StatusCode::kInvalidArgument,
                      "usage of --node-cidr-mask-size-ipv6 is not allowed for a single-stack IPv4 cluster");
      v6 = maskV6;
    }
  }
  for (const auto& c : cfg.clusterCIDRs) cfg.nodeMaskSizes.push_back(c.v6 ? v6 : v4);

  if (!serviceCIDR.empty())
    for (const auto& s : split(serviceCIDR)) {
      auto c = IpCidr::parse(s);
      if (c.ok()) cfg.serviceCIDRs.push_back(*c);
      else KLOG_INFO("\"Warning: unsuccessful parsing of service CIDR\" CIDR=\"" + s + "\" err=\"" + c.status().message() + "\"");
    }
  return cfg;
}

}  // namespace kcm::controllers
