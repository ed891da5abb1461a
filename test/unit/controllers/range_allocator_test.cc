// node-ipam-controller's RangeAllocator against the in-memory apiserver: the CIDRs nodes already hold are taken
// from a live node list when the allocator is built, and one it cannot occupy refuses the start (upstream
// pkg/controller/nodeipam/ipam/cidr_allocator.go New, range_allocator.go NewCIDRRangeAllocator); events are
// recorded on the Node as pkg/controller/util/node RecordNodeStatusChange does. Issue 13 item 10.
#include "controllers/nodeipam/range_allocator.h"

#include <gtest/gtest.h>

#include "api/gen/core_v1_json.h"
#include "client/events.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers {
namespace {

using api::core::v1::Node;
using testing::Action;
using testing::FakeApiServer;
using namespace std::chrono_literals;

Node makeNode(const std::string& name, std::vector<std::string> podCIDRs = {}) {
  Node n;
  n.metadata.name = name;
  if (!podCIDRs.empty()) n.spec.podCIDR = podCIDRs.front();
  n.spec.podCIDRs.assign(podCIDRs.begin(), podCIDRs.end());
  return n;
}

class Harness {
 public:
  Harness() { server->addStandardResources(); }
  // Stores the node on the server and in the informer's cache (as the informer would have it).
  Node addNode(const Node& n) {
    Node stored = server->add(n);
    factory.forType<Node>().store().upsert(n.metadata.name, std::make_shared<const Node>(stored));
    return stored;
  }
  Result<std::unique_ptr<RangeAllocator>> create(const std::vector<std::string>& clusterCIDRs, int mask) {
    std::vector<IpCidr> cidrs;
    std::vector<int> masks;
    for (const auto& c : clusterCIDRs) {
      cidrs.push_back(*IpCidr::parse(c));
      masks.push_back(mask);
    }
    return RangeAllocator::create(server->client(), broadcaster.newRecorder("cidrAllocator"),
                                  factory.forType<Node>(), cidrs, masks, {});
  }
  std::vector<api::core::v1::Event> events() {
    broadcaster.flush();
    return eventSink->list<api::core::v1::Event>();
  }

  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>();
  std::shared_ptr<FakeApiServer> eventSink = std::make_shared<FakeApiServer>();
  client::EventBroadcaster broadcaster{eventSink->client(), "test"};
  informers::SharedInformerFactory factory{server->client(), 0s};
};

// CIDRs held by nodes at start are occupied before the first allocation, from the node list the allocator
// reads when it is built (not only once its informer has synced).
TEST(RangeAllocatorStart, OccupiesTheCIDRsNodesAlreadyHold) {
  Harness h;
  h.addNode(makeNode("old", {"10.0.0.0/25"}));
  auto alloc = h.create({"10.0.0.0/24"}, 25);
  ASSERT_TRUE(alloc.ok()) << alloc.status().toString();
  h.addNode(makeNode("new"));
  ASSERT_TRUE((*alloc)->syncNode("new").status.ok());
  auto n = h.server->get<Node>("", "new");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->spec.podCIDRs, std::vector<std::string>{"10.0.0.128/25"});
  EXPECT_EQ(n->spec.podCIDR, "10.0.0.128/25");
}

struct BadCIDRCase {
  std::string name;
  std::vector<std::string> podCIDRs;
  std::string want;  // part of the error
};

void PrintTo(const BadCIDRCase& c, std::ostream* os) { *os << c.name; }

class RangeAllocatorBadCIDR : public ::testing::TestWithParam<BadCIDRCase> {};

// Garbage in a node's podCIDRs, a CIDR outside the cluster range, or more CIDRs than cluster CIDRs (a
// dual-stack cluster turned single-stack): upstream's constructor fails, and with it the controller manager.
TEST_P(RangeAllocatorBadCIDR, RefusesToStart) {
  const auto& tc = GetParam();
  Harness h;
  h.addNode(makeNode("fine", {"10.0.1.0/24"}));
  h.addNode(makeNode("bad", tc.podCIDRs));
  auto alloc = h.create({"10.0.0.0/16"}, 24);
  ASSERT_FALSE(alloc.ok());
  EXPECT_NE(alloc.status().message().find(tc.want), std::string::npos) << alloc.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    RangeAllocator, RangeAllocatorBadCIDR,
    ::testing::Values(BadCIDRCase{"Unparsable", {"garbage"}, "failed to parse node bad, CIDR garbage"},
                      BadCIDRCase{"OutsideTheClusterCIDR", {"192.168.0.0/24"}, "as occupied for node: bad"},
                      BadCIDRCase{"MoreThanTheClusterCIDRs",
                                  {"10.0.2.0/24", "fd00::/64"},
                                  "does not exist in cluster cidrs configuration"}),
    [](const auto& info) { return info.param.name; });

// The range runs out: CIDRNotAvailable is recorded on the Node, referenced as upstream does (v1 Node, its UID).
TEST(RangeAllocatorEvents, CIDRNotAvailableReferencesTheNode) {
  Harness h;
  auto alloc = h.create({"10.0.0.0/24"}, 24);
  ASSERT_TRUE(alloc.ok()) << alloc.status().toString();
  h.addNode(makeNode("first"));
  const Node second = h.addNode(makeNode("second"));
  ASSERT_TRUE((*alloc)->syncNode("first").status.ok());
  EXPECT_FALSE((*alloc)->syncNode("second").status.ok());
  auto evs = h.events();
  ASSERT_EQ(evs.size(), 1u);
  const auto& e = evs[0];
  EXPECT_EQ(e.reason, "CIDRNotAvailable");
  EXPECT_EQ(e.type, "Normal");
  EXPECT_EQ(e.message, "Node second status is now: CIDRNotAvailable");
  EXPECT_EQ(e.involvedObject.kind, "Node");
  EXPECT_EQ(e.involvedObject.apiVersion, "v1");
  EXPECT_EQ(e.involvedObject.name, "second");
  EXPECT_EQ(e.involvedObject.uid, second.metadata.uid);
  EXPECT_NE(e.involvedObject.uid, "second");
}

// Three failed patches: CIDRAssignmentFailed on the Node, likewise referenced.
TEST(RangeAllocatorEvents, CIDRAssignmentFailedReferencesTheNode) {
  Harness h;
  auto alloc = h.create({"10.0.0.0/16"}, 24);
  ASSERT_TRUE(alloc.ok()) << alloc.status().toString();
  const Node n = h.addNode(makeNode("n"));
  h.server->prependReactor("patch", "nodes", [](const Action&) -> std::optional<client::Transport::Reply> {
    return FakeApiServer::errorReply(500, "InternalError", "fake error");
  });
  EXPECT_FALSE((*alloc)->syncNode("n").status.ok());
  EXPECT_EQ(h.server->actionsFor("patch", "nodes").size(), 3u);
  auto evs = h.events();
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].reason, "CIDRAssignmentFailed");
  EXPECT_EQ(evs[0].involvedObject.apiVersion, "v1");
  EXPECT_EQ(evs[0].involvedObject.uid, n.metadata.uid);
}

}  // namespace
}  // namespace kcm::controllers
