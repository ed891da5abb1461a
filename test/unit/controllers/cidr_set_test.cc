#include "controllers/nodeipam/cidr_set.h"

#include <gtest/gtest.h>

namespace kcm::controllers {
namespace {

TEST(CidrSet, AllocatesSlash24sInOrderAndExhausts) {
  auto cluster = Ipv4Cidr::parse("10.1.0.0/22");
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
  auto set = CidrSet::create(*Ipv4Cidr::parse("100.64.0.0/10"), 24);
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->size(), 16384u);
  ASSERT_TRUE(set->occupy(*Ipv4Cidr::parse("100.64.0.0/23")).ok());  // two /24s
  EXPECT_EQ(set->allocateNext()->toString(), "100.64.2.0/24");
  ASSERT_TRUE(set->release(*Ipv4Cidr::parse("100.64.0.0/24")).ok());
  EXPECT_EQ(set->used(), 2u);
  EXPECT_FALSE(set->occupy(*Ipv4Cidr::parse("10.96.0.0/22")).ok());  // outside: not ours to filter
}

TEST(CidrSet, RejectsBadInput) {
  EXPECT_FALSE(Ipv4Cidr::parse("100.64.0.0").ok());
  EXPECT_FALSE(Ipv4Cidr::parse("300.64.0.0/10").ok());
  EXPECT_FALSE(Ipv4Cidr::parse("100.64.0.0/33").ok());
  EXPECT_FALSE(CidrSet::create(*Ipv4Cidr::parse("100.64.0.0/10"), 8).ok());
  EXPECT_FALSE(CidrSet::create(*Ipv4Cidr::parse("10.0.0.0/8"), 28).ok());
  EXPECT_EQ(Ipv4Cidr::parse("100.64.7.9/10")->toString(), "100.64.0.0/10");
}

}  // namespace
}  // namespace kcm::controllers
