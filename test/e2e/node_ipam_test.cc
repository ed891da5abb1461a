// node-ipam-controller in a dual-stack configuration (the seed's IPv4-only command line is covered by
// BasicControllers): a new node gets one pod CIDR per family, in --cluster-cidr order. The IPv4 range is the
// seed's: the KWOK nodes may hold CIDRs from it already, and a range allocator refuses to start when a node holds
// one outside its cluster CIDRs (upstream's occupyCIDRs at start).
#include <sstream>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class NodeIpamDualStack : public SoloKcmSuite<NodeIpamDualStack> {
 public:
  static constexpr const char* kControllers = "node-ipam-controller";
  static constexpr const char* kLogName = "kcm-node-ipam-dual";
  static std::vector<std::string> extraFlags() {
    return {"--allocate-node-cidrs=true", "--cluster-cidr=100.64.0.0/10,fd00:10::/48", "--node-cidr-mask-size-ipv4=26",
            "--service-cluster-ip-range=10.96.0.0/22"};
  }
};

TEST_F(NodeIpamDualStack, NewNodeGetsOneCIDRPerFamily) {
  const std::string node = "e2e-dual-" + ns();
  ASSERT_TRUE(kubectl({"apply", "-f", "-"}, R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + node + R"("}})").ok());
  struct Cleanup {
    std::string n;
    ~Cleanup() { kubectl({"delete", "node", n, "--ignore-not-found"}); }
  } cleanup{node};
  auto cidrs = [&] {
    return kubectl({"get", "node", node, "-o", "jsonpath={.spec.podCIDR} {.spec.podCIDRs[0]} {.spec.podCIDRs[1]}"}).out;
  };
  ASSERT_TRUE(waitFor([&] { return cidrs().find(':') != std::string::npos; }, 30s)) << cidrs() << kcm_->log();
  std::istringstream in(cidrs());
  std::string podCIDR, v4, v6;
  in >> podCIDR >> v4 >> v6;
  EXPECT_EQ(podCIDR, v4);
  EXPECT_EQ(v4.rfind("100.", 0), 0u) << v4;
  EXPECT_EQ(v4.substr(v4.size() - 3), "/26") << v4;
  EXPECT_EQ(v6.rfind("fd00:10:", 0), 0u) << v6;
  EXPECT_EQ(v6.substr(v6.size() - 3), "/64") << v6;
}

}  // namespace
}  // namespace kcm::e2e
