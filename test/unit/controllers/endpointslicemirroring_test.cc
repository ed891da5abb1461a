// endpointslice-mirroring-controller (upstream endpointslicemirroring_controller_test.go, reconciler_test.go) over
// the fake apiserver and informer stores the test fills.
#include <gtest/gtest.h>

#include "api/gen/core_v1_json.h"
#include "api/gen/discovery_v1_json.h"
#include "controllers/endpointslicemirroring/endpointslicemirroring_controller.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::endpointslicemirroring {
namespace {

using testing::FakeApiServer;
using namespace std::chrono_literals;

class MirroringTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    server->addResource({"", "v1", "endpoints", "Endpoints", true});
    server->addResource({"discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true});
    Service s;
    s.metadata.namespace_ = "ns";
    s.metadata.name = "ext";
    factory.forType<Service>().store().upsert("ns/ext", std::make_shared<const Service>(s));
  }
  Endpoints endpoints(std::vector<std::string> ready, std::vector<std::string> notReady = {}) {
    Endpoints e;
    e.metadata.namespace_ = "ns";
    e.metadata.name = "ext";
    e.metadata.uid = "ep-uid";
    e.metadata.labels["team"] = "a";
    e.metadata.annotations["note"] = "x";
    e.metadata.annotations["endpoints.kubernetes.io/last-change-trigger-time"] = "2026-01-01T00:00:00Z";
    auto& s = e.subsets.emplace_back();
    for (const auto& ip : ready) s.addresses.emplace_back().ip = ip;
    for (const auto& ip : notReady) s.notReadyAddresses.emplace_back().ip = ip;
    auto& p = s.ports.emplace_back();
    p.name = "https";
    p.port = 443;
    p.protocol = "TCP";
    factory.forType<Endpoints>().store().upsert("ns/ext", std::make_shared<const Endpoints>(e));
    return e;
  }
  std::vector<EndpointSlice> slices() { return server->list<EndpointSlice>("ns"); }
  void cacheSlices() {
    for (const auto& s : slices())
      factory.forType<EndpointSlice>().store().upsert("ns/" + s.metadata.name, std::make_shared<const EndpointSlice>(s));
  }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  client::EventBroadcaster broadcaster{server->client(), "", clock};
  EndpointSliceMirroringController controller{server->client(), factory.forType<Endpoints>(),
                                              factory.forType<EndpointSlice>(), factory.forType<Service>(), 3,
                                              broadcaster.newRecorder("endpoint-slice-mirroring-controller"), 0s, clock};
};

TEST_F(MirroringTest, CustomEndpointsAreMirroredPerAddressTypeWithLabelsAndAnnotations) {
  endpoints({"192.0.2.1", "2001:db8::1"}, {"192.0.2.2"});
  ASSERT_TRUE(controller.syncEndpoints("ns/ext").status.ok());
  auto s = slices();
  ASSERT_EQ(s.size(), 2u);
  for (const auto& slice : s) {
    EXPECT_EQ(slice.metadata.labels.at("kubernetes.io/service-name"), "ext");
    EXPECT_EQ(slice.metadata.labels.at("endpointslice.kubernetes.io/managed-by"), kControllerName);
    EXPECT_EQ(slice.metadata.labels.at("team"), "a");
    EXPECT_EQ(slice.metadata.annotations.at("note"), "x");
    EXPECT_EQ(slice.metadata.annotations.count("endpoints.kubernetes.io/last-change-trigger-time"), 0u);
    EXPECT_EQ(slice.metadata.ownerReferences.at(0).kind, "Endpoints");
    EXPECT_EQ(slice.metadata.ownerReferences.at(0).uid, "ep-uid");
    EXPECT_EQ(slice.ports.at(0).port.value_or(0), 443);
    if (slice.addressType == "IPv4") {
      ASSERT_EQ(slice.endpoints.size(), 2u);
      for (const auto& e : slice.endpoints)
        EXPECT_EQ(*e.conditions.ready, e.addresses[0] == "192.0.2.1");
    } else {
      ASSERT_EQ(slice.endpoints.size(), 1u);
      EXPECT_EQ(slice.endpoints[0].addresses[0], "2001:db8::1");
    }
  }
  // In step: nothing more to write.
  cacheSlices();
  server->clearActions();
  ASSERT_TRUE(controller.syncEndpoints("ns/ext").status.ok());
  EXPECT_TRUE(server->writes().empty());
}

TEST_F(MirroringTest, InvalidAndSurplusAddressesAreSkipped) {
  endpoints({"192.0.2.1", "not-an-ip", "192.0.2.2", "192.0.2.3", "192.0.2.4"});
  ASSERT_TRUE(controller.syncEndpoints("ns/ext").status.ok());
  auto s = slices();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].endpoints.size(), 3u);  // the per-subset maximum (3 here)
}

TEST_F(MirroringTest, SkipMirrorLabelAGoneServiceOrASelectorRemoveTheMirroredSlices) {
  endpoints({"192.0.2.1"});
  ASSERT_TRUE(controller.syncEndpoints("ns/ext").status.ok());
  cacheSlices();
  ASSERT_EQ(slices().size(), 1u);
  Service withSelector;
  withSelector.metadata.namespace_ = "ns";
  withSelector.metadata.name = "ext";
  withSelector.spec.selector["app"] = "x";
  factory.forType<Service>().store().upsert("ns/ext", std::make_shared<const Service>(withSelector));
  ASSERT_TRUE(controller.syncEndpoints("ns/ext").status.ok());
  EXPECT_TRUE(slices().empty());

  Endpoints skip = endpoints({"192.0.2.1"});
  EXPECT_TRUE(shouldMirror(skip));
  skip.metadata.labels[kLabelSkipMirror] = "true";
  EXPECT_FALSE(shouldMirror(skip));
  Endpoints leader = endpoints({"192.0.2.1"});
  leader.metadata.annotations["control-plane.alpha.kubernetes.io/leader"] = "{}";
  EXPECT_FALSE(shouldMirror(leader));
}

TEST_F(MirroringTest, ChangedAddressesUpdateTheSliceInPlace) {
  endpoints({"192.0.2.1"});
  ASSERT_TRUE(controller.syncEndpoints("ns/ext").status.ok());
  cacheSlices();
  const std::string name = slices().at(0).metadata.name;
  endpoints({"192.0.2.1", "192.0.2.9"});
  server->clearActions();
  ASSERT_TRUE(controller.syncEndpoints("ns/ext").status.ok());
  EXPECT_EQ(server->actionsFor("update", "endpointslices").size(), 1u);
  EXPECT_EQ(server->actionsFor("create", "endpointslices").size(), 0u);
  EXPECT_EQ(slices().at(0).metadata.name, name);
  EXPECT_EQ(slices().at(0).endpoints.size(), 2u);
}

}  // namespace
}  // namespace kcm::controllers::endpointslicemirroring
