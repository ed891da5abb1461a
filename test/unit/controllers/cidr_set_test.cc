#include "controllers/nodeipam/cidr_set.h"
#include "controllers/nodeipam/ipam_config.h"

#include <gtest/gtest.h>

namespace kcm::controllers {
namespace {

TEST(CidrSet, AllocatesSlash24sInOrderAndExhausts) {
  auto cluster = IpCidr::parse("10.1.0.0/22");
  ASSERT_TRUE(cluster.ok());
  auto set = CidrSet::create(*cluster, 24);
  ASSERT_TRUE(set.ok());
  std::vector<std::string> got;
  for (int i = 0; i < 4; ++i) got.push_back(set->allocateNext()->toString());
  EXPECT_EQ(got, (std::vector<std::string>{"10.1.0.0/24", "10.1.1.0/24", "10.1.2.0/24", "10.1.3.0/24"}));
  auto none = set->allocateNext();
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no remaining CIDRs"), std::string::npos);
}

TEST(CidrSet, OccupiedAndServiceRangesAreSkippedAndReleaseFrees) {
  auto set = CidrSet::create(*IpCidr::parse("100.64.0.0/10"), 24);
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->size(), 16384u);
  ASSERT_TRUE(set->occupy(*IpCidr::parse("100.64.0.0/23")).ok());  // two /24s
  EXPECT_EQ(set->allocateNext()->toString(), "100.64.2.0/24");
  ASSERT_TRUE(set->release(*IpCidr::parse("100.64.0.0/24")).ok());
  EXPECT_EQ(set->used(), 2u);
  EXPECT_FALSE(set->occupy(*IpCidr::parse("10.96.0.0/22")).ok());  // outside: not ours to filter
}

TEST(CidrSet, RejectsBadInput) {
  EXPECT_FALSE(IpCidr::parse("100.64.0.0").ok());
  EXPECT_FALSE(IpCidr::parse("300.64.0.0/10").ok());
  EXPECT_FALSE(IpCidr::parse("100.64.0.0/33").ok());
  EXPECT_FALSE(CidrSet::create(*IpCidr::parse("100.64.0.0/10"), 8).ok());
  EXPECT_TRUE(CidrSet::create(*IpCidr::parse("10.0.0.0/8"), 28).ok());  // upstream caps only IPv6 sets
  EXPECT_FALSE(CidrSet::create(*IpCidr::parse("0.0.0.0/0"), 32).ok());  // our bitmap bound (2^24 subnets)
  EXPECT_EQ(IpCidr::parse("100.64.7.9/10")->toString(), "100.64.0.0/10");
}

}  // namespace
}  // namespace kcm::controllers

namespace kcm::controllers {
namespace {

TEST(CidrSet, IPv6SubnetsAndUpstreamSizeLimit) {
  auto cluster = IpCidr::parse("fd00:10::/48");
  ASSERT_TRUE(cluster.ok());
  EXPECT_TRUE(cluster->v6);
  auto set = CidrSet::create(*cluster, 64);
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->size(), 65536u);
  EXPECT_EQ(set->allocateNext()->toString(), "fd00:10::/64");
  EXPECT_EQ(set->allocateNext()->toString(), "fd00:10:0:1::/64");
  auto tooBig = CidrSet::create(*IpCidr::parse("fd00::/32"), 64);  // 2^32 subnets
  ASSERT_FALSE(tooBig.ok());
  EXPECT_EQ(tooBig.status().message(), "New CIDR set failed; the node CIDR size is too big");
  EXPECT_FALSE(set->overlaps(*IpCidr::parse("10.0.0.0/8")));  // other family
  EXPECT_EQ(IpCidr::parse("fd00:10::1/48")->toString(), "fd00:10::/48");  // host bits cleared
}

TEST(NodeIpamConfig, DualStackAndMaskFlagsAsUpstream) {
  auto dual = nodeIpamConfig("10.244.0.0/16,fd00:10::/48", 0, 25, 0, "10.96.0.0/12,fd00:20::/108");
  ASSERT_TRUE(dual.ok()) << dual.status().message();
  ASSERT_EQ(dual->clusterCIDRs.size(), 2u);
  EXPECT_EQ(dual->nodeMaskSizes, (std::vector<int>{25, 64}));
  EXPECT_EQ(dual->serviceCIDRs.size(), 2u);
  EXPECT_EQ(nodeIpamConfig("10.0.0.0/8,10.1.0.0/16", 0, 0, 0, "").status().message(),
            "len of ClusterCIDRs==2 and they are not configured as dual stack (at least one from each IPFamily");
  EXPECT_EQ(nodeIpamConfig("10.0.0.0/8,fd00::/48", 24, 0, 0, "").status().message(),
            "usage of --node-cidr-mask-size is not allowed with dual-stack clusters");
  EXPECT_EQ(nodeIpamConfig("fd00::/48", 0, 24, 0, "").status().message(),
            "usage of --node-cidr-mask-size-ipv4 is not allowed for a single-stack IPv6 cluster");
  EXPECT_EQ(nodeIpamConfig("10.0.0.0/8", 0, 0, 64, "").status().message(),
            "usage of --node-cidr-mask-size-ipv6 is not allowed for a single-stack IPv4 cluster");
  EXPECT_EQ(nodeIpamConfig("100.64.0.0/10", 0, 0, 0, "")->nodeMaskSizes, std::vector<int>{24});
  EXPECT_EQ(nodeIpamConfig("fd00::/48", 0, 0, 0, "")->nodeMaskSizes, std::vector<int>{64});
  EXPECT_NE(nodeIpamConfig("bogus", 0, 0, 0, "").status().message().find("failed to parse cidr value:\"bogus\""),
            std::string::npos);
}

}  // namespace
}  // namespace kcm::controllers
