// service-cidr-controller (upstream pkg/controller/servicecidrs/servicecidrs_controller_test.go) over the fake
// apiserver and informer stores the test fills, with the clock injected.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/gen/networking_v1_json.h"
#include "controllers/servicecidrs/servicecidrs_controller.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::servicecidrs {
namespace {

using testing::FakeApiServer;
using json = nlohmann::json;
using namespace std::chrono_literals;

class ServiceCIDRTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addResource({"networking.k8s.io", "v1", "servicecidrs", "ServiceCIDR", false,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
    server->addResource({"networking.k8s.io", "v1", "ipaddresses", "IPAddress", false});
  }
  ServiceCIDR cidr(const std::string& name, std::vector<std::string> cidrs, bool deleting = false) {
    ServiceCIDR c;
    c.metadata.name = name;
    c.spec.cidrs.assign(cidrs.begin(), cidrs.end());
    if (deleting) {
      c.metadata.finalizers = {kServiceCIDRProtectionFinalizer};
      c.metadata.deletionTimestamp =
          api::Time::fromUnix(std::chrono::system_clock::to_time_t(clock.wallNow()) - 1);
    }
    ServiceCIDR stored = server->add(c);
    if (deleting) stored.metadata.deletionTimestamp = c.metadata.deletionTimestamp;
    factory.forType<ServiceCIDR>().store().upsert(name, std::make_shared<const ServiceCIDR>(stored));
    return stored;
  }
  void ip(const std::string& address) {
    IPAddress a;
    a.metadata.name = address;
    a.metadata.labels["ipaddress.kubernetes.io/managed-by"] = kIPAllocatorControllerName;
    a.metadata.labels["ipaddress.kubernetes.io/ip-family"] = address.find(':') == std::string::npos ? "IPv4" : "IPv6";
    factory.forType<IPAddress>().store().upsert(address, std::make_shared<const IPAddress>(a));
  }
  std::vector<testing::Action> patches(const std::string& sub) {
    std::vector<testing::Action> out;
    for (const auto& a : server->actionsFor("patch", "servicecidrs"))
      if (a.subresource == sub) out.push_back(a);
    return out;
  }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  client::EventBroadcaster broadcaster{server->client(), "", clock};
  ServiceCIDRsController controller{server->client(), factory.forType<ServiceCIDR>(), factory.forType<IPAddress>(),
                                    broadcaster.newRecorder(kControllerName), clock};
};

TEST_F(ServiceCIDRTest, ANewServiceCIDRGetsTheFinalizerAndReadyByServerSideApply) {
  cidr("kubernetes", {"10.96.0.0/22"});
  ASSERT_TRUE(controller.sync("kubernetes").status.ok());
  auto meta = patches("");
  ASSERT_EQ(meta.size(), 1u);
  EXPECT_EQ(json::parse(meta[0].body), json::parse(R"({"metadata":{"finalizers":["networking.k8s.io/service-cidr-finalizer"]}})"));
  auto status = patches("status");
  ASSERT_EQ(status.size(), 1u);
  EXPECT_EQ(status[0].patchType, "application/apply-patch+yaml");
  json body = json::parse(status[0].body);
  EXPECT_EQ(body["kind"], "ServiceCIDR");
  EXPECT_EQ(body["status"]["conditions"][0]["type"], "Ready");
  EXPECT_EQ(body["status"]["conditions"][0]["status"], "True");
  EXPECT_EQ(body["status"]["conditions"][0]["message"], "Kubernetes Service CIDR is ready");
  bool fieldManager = false, force = false;
  for (const auto& [k, v] : status[0].query) {
    fieldManager = fieldManager || (k == "fieldManager" && v == kControllerName);
    force = force || (k == "force" && v == "true");
  }
  EXPECT_TRUE(fieldManager && force);
}

TEST_F(ServiceCIDRTest, DeletionIsHeldWhileAnAllocatedAddressHasNoOtherServiceCIDR) {
  ServiceCIDR doomed = cidr("extra", {"10.100.0.0/24"}, true);
  ip("10.100.0.5");
  EXPECT_FALSE(controller.canDeleteCIDR(doomed));
  ASSERT_TRUE(controller.sync("extra").status.ok());
  auto status = patches("status");
  ASSERT_EQ(status.size(), 1u);
  json c = json::parse(status[0].body)["status"]["conditions"][0];
  EXPECT_EQ(c["status"], "False");
  EXPECT_EQ(c["reason"], "Terminating");
  EXPECT_TRUE(patches("").empty());  // the finalizer stays
  // A wider ServiceCIDR takes the address over: the finalizer goes once 10 s have passed since the deletion.
  cidr("wide", {"10.100.0.0/16"});
  EXPECT_TRUE(controller.canDeleteCIDR(doomed));
  auto r = controller.sync("extra");
  ASSERT_TRUE(r.status.ok());
  ASSERT_TRUE(r.requeueAfter.has_value());
  EXPECT_LE(*r.requeueAfter, std::chrono::seconds(10));
  EXPECT_TRUE(patches("").empty());
  clock.advance(10s);
  ASSERT_TRUE(controller.sync("extra").status.ok());
  auto meta = patches("");
  ASSERT_EQ(meta.size(), 1u);
  EXPECT_EQ(json::parse(meta[0].body),
            json::parse(R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["networking.k8s.io/service-cidr-finalizer"]}})"));
}

TEST_F(ServiceCIDRTest, NetworkAndBroadcastAddressesDoNotPinAServiceCIDR) {
  ServiceCIDR doomed = cidr("extra", {"10.100.0.0/24"}, true);
  ip("10.100.0.0");    // the network address
  ip("10.100.0.255");  // the IPv4 broadcast address
  ip("10.101.0.1");    // outside
  EXPECT_TRUE(controller.canDeleteCIDR(doomed));
  ServiceCIDR v6 = cidr("v6", {"fd00::/112"}, true);
  ip("fd00::ffff");  // no broadcast in IPv6: this one counts
  EXPECT_FALSE(controller.canDeleteCIDR(v6));
}

}  // namespace
}  // namespace kcm::controllers::servicecidrs
