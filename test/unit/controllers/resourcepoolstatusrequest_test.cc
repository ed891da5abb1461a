// resourcepoolstatusrequest-controller (upstream pkg/controller/resourcepoolstatusrequest's controller_test.go and
// views_test.go cases) over the fake apiserver: pool status from the latest generation of slices and the allocated
// claims, the partition and shareable views, retries for incomplete pools, one write per request, the TTL sweep.
#include <gtest/gtest.h>

#include "api/gen/resource_v1_json.h"
#include "api/gen/resource_v1alpha3_json.h"
#include "controllers/resourcepoolstatusrequest/controller.h"
#include "controllers/resourcepoolstatusrequest/views.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::resourcepoolstatusrequest {
namespace {

using api::resource::v1::CounterSet;
using api::resource::v1::Device;
using api::resource::v1::DeviceCounterConsumption;
using testing::FakeApiServer;
using namespace std::chrono_literals;

constexpr const char* kDriver = "gpu.example.com";

api::Quantity q(const char* s) { return *api::Quantity::parse(s); }

Device device(const std::string& name) {
  Device d;
  d.name = name;
  return d;
}

CounterSet counterSet(const std::string& name, std::map<std::string, std::string> counters) {
  CounterSet cs;
  cs.name = name;
  for (const auto& [k, v] : counters) cs.counters[k].value = q(v.c_str());
  return cs;
}

DeviceCounterConsumption consumes(const std::string& set, std::map<std::string, std::string> counters) {
  DeviceCounterConsumption c;
  c.counterSet = set;
  for (const auto& [k, v] : counters) c.counters[k].value = q(v.c_str());
  return c;
}

DeviceRecord partitionDevice(const std::string& name, const std::string& type, std::vector<DeviceCounterConsumption> cost) {
  DeviceRecord r;
  r.name = name, r.partitionAttr = "gpu.example.com/profile", r.partitionType = type, r.hasPartitionType = true;
  r.consumesCounters = std::move(cost);
  return r;
}

class ResourcePoolStatusRequestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    server->addResource({"resource.k8s.io", "v1alpha3", "resourcepoolstatusrequests", "ResourcePoolStatusRequest",
                         false, {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
  }
  // A slice of `devices` devices named <pool>-<slice>-<i> in pool `pool` at `generation`, `count` slices expected.
  ResourceSlice& slice(const std::string& name, const std::string& pool, int devices, int64_t generation = 1,
                       int64_t count = 1, std::optional<std::string> node = "node-1", const std::string& driver = kDriver) {
    ResourceSlice s;
    s.metadata.name = name;
    s.spec.driver = driver, s.spec.pool.name = pool, s.spec.pool.generation = generation;
    s.spec.pool.resourceSliceCount = count;
    s.spec.nodeName = node;
    for (int i = 0; i < devices; ++i) s.spec.devices.push_back(device(name + "-dev-" + std::to_string(i)));
    slices_[name] = s;
    return slices_[name];
  }
  void publish() {
    for (const auto& [n, s] : slices_) factory.forType<ResourceSlice>().store().upsert(n, std::make_shared<const ResourceSlice>(s));
  }
  // An allocated claim of the given pool's devices.
  void claim(const std::string& name, const std::string& pool, std::vector<std::string> devices, bool admin = false,
             api::StringMap<api::Quantity> consumed = {}) {
    ResourceClaim c;
    c.metadata.namespace_ = "default", c.metadata.name = name;
    auto& alloc = c.status.allocation.emplace();
    for (const auto& d : devices) {
      api::resource::v1::DeviceRequestAllocationResult r;
      r.request = "req", r.driver = kDriver, r.pool = pool, r.device = d;
      if (admin) r.adminAccess = true;
      r.consumedCapacity = consumed;
      alloc.devices.results.push_back(r);
    }
    factory.forType<ResourceClaim>().store().upsert("default/" + name, std::make_shared<const ResourceClaim>(c));
  }
  ResourcePoolStatusRequest request(const std::string& name, std::optional<std::string> pool = std::nullopt,
                                    std::optional<int32_t> limit = std::nullopt) {
    ResourcePoolStatusRequest r;
    r.metadata.name = name;
    r.spec.driver = kDriver, r.spec.poolName = pool, r.spec.limit = limit;
    return r;
  }
  ResourcePoolStatusRequest stored(const ResourcePoolStatusRequest& r) {
    auto added = server->add(r);
    factory.forType<ResourcePoolStatusRequest>().store().upsert(r.metadata.name,
                                                                 std::make_shared<const ResourcePoolStatusRequest>(added));
    return added;
  }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  std::map<std::string, ResourceSlice> slices_;
  Controller controller{server->client(), factory.forType<ResourcePoolStatusRequest>(), factory.forType<ResourceSlice>(),
                        factory.forType<ResourceClaim>(), &factory.forType<DeviceTaintRule>(), clock};
};

// single-pool-no-allocations / single-pool-with-allocations / multiple-slices-same-pool.
TEST_F(ResourcePoolStatusRequestTest, CountsDevicesOfAPoolAcrossItsSlices) {
  slice("s-a", "pool-a", 3, 1, 2);
  slice("s-b", "pool-a", 2, 1, 2);
  publish();
  claim("c1", "pool-a", {"s-a-dev-0"});
  claim("c2", "pool-a", {"s-a-dev-0", "s-b-dev-1"});  // s-a-dev-0 shared: counted once
  claim("c3", "pool-a", {"s-a-dev-2"}, /*admin=*/true);  // admin access observes: not allocated
  auto st = controller.calculatePoolStatus(request("r"));
  ASSERT_EQ(st.pools.size(), 1u);
  const auto& p = st.pools[0];
  EXPECT_EQ(p.driver, kDriver);
  EXPECT_EQ(p.poolName, "pool-a");
  EXPECT_EQ(p.generation, 1);
  EXPECT_EQ(p.resourceSliceCount, 2);
  EXPECT_EQ(p.totalDevices, 5);
  EXPECT_EQ(p.allocatedDevices, 2);
  EXPECT_EQ(p.availableDevices, 3);
  EXPECT_EQ(p.unavailableDevices, 0);
  EXPECT_EQ(p.nodeName, std::optional<std::string>("node-1"));
  EXPECT_FALSE(p.validationError.has_value());
  EXPECT_EQ(st.poolCount, 1);
  ASSERT_EQ(st.conditions.size(), 1u);
  EXPECT_EQ(st.conditions[0].type, "Complete");
  EXPECT_EQ(st.conditions[0].status, "True");
  EXPECT_EQ(st.conditions[0].reason, "CalculationComplete");
  EXPECT_EQ(st.conditions[0].message, "Calculated status for 1 pools");
}

// multiple-pools (sorted by pool name), filter-by-driver, filter-by-pool-name, limit-pools, no-matching-pools.
TEST_F(ResourcePoolStatusRequestTest, FiltersSortsAndLimitsPools) {
  slice("s3", "pool-c", 1);
  slice("s1", "pool-a", 1);
  slice("s2", "pool-b", 1);
  slice("other", "pool-a", 4, 1, 1, "node-1", "other.example.com");
  publish();
  auto all = controller.calculatePoolStatus(request("r"));
  ASSERT_EQ(all.pools.size(), 3u);
  EXPECT_EQ(all.pools[0].poolName, "pool-a");
  EXPECT_EQ(all.pools[0].totalDevices, 1) << "the other driver's pool of the same name is not counted";
  EXPECT_EQ(all.pools[1].poolName, "pool-b");
  EXPECT_EQ(all.pools[2].poolName, "pool-c");
  auto one = controller.calculatePoolStatus(request("r", "pool-b"));
  ASSERT_EQ(one.pools.size(), 1u);
  EXPECT_EQ(one.pools[0].poolName, "pool-b");
  auto limited = controller.calculatePoolStatus(request("r", std::nullopt, 2));
  EXPECT_EQ(limited.pools.size(), 2u);
  EXPECT_EQ(limited.poolCount, 3) << "the count before truncation";
  EXPECT_EQ(limited.conditions[0].message, "Calculated status for 2 pools");
  auto none = controller.calculatePoolStatus(request("r", "nope"));
  EXPECT_TRUE(none.pools.empty());
  EXPECT_EQ(none.poolCount, 0);
  EXPECT_EQ(none.conditions[0].message, "Calculated status for 0 pools");
}

// older-generation-slices-ignored, incomplete-pool-has-validation-error, mix-of-complete-and-incomplete-pools.
TEST_F(ResourcePoolStatusRequestTest, OnlyTheLatestGenerationCountsAndAnIncompletePoolIsFlagged) {
  slice("old", "pool-a", 5, 1, 1);
  slice("new", "pool-a", 2, 2, 1);
  slice("b-1", "pool-b", 1, 3, 2);  // one of two slices
  publish();
  auto st = controller.calculatePoolStatus(request("r"));
  ASSERT_EQ(st.pools.size(), 2u);
  EXPECT_EQ(st.pools[0].generation, 2);
  EXPECT_EQ(st.pools[0].totalDevices, 2);
  const auto& b = st.pools[1];
  EXPECT_EQ(b.generation, 3);
  EXPECT_EQ(b.validationError,
            std::optional<std::string>("PoolIncomplete: pool gpu.example.com/pool-b is incomplete: observed 1/2 slices at generation 3"));
  EXPECT_FALSE(b.totalDevices.has_value());
  EXPECT_FALSE(b.resourceSliceCount.has_value());
  EXPECT_EQ(st.conditions[0].message, "Calculated status for 2 pools (1 incomplete)");
}

// same-node-pool-sets-nodename, mixed-node-pool-clears-nodename, nil-nodename-slices-no-nodename.
TEST_F(ResourcePoolStatusRequestTest, NodeNameOnlyWhenEverySliceAgrees) {
  slice("a1", "same", 1, 1, 2, "n1");
  slice("a2", "same", 1, 1, 2, "n1");
  slice("b1", "mixed", 1, 1, 2, "n1");
  slice("b2", "mixed", 1, 1, 2, "n2");
  slice("c1", "none", 1, 1, 1, std::nullopt);
  publish();
  auto st = controller.calculatePoolStatus(request("r"));
  ASSERT_EQ(st.pools.size(), 3u);
  EXPECT_FALSE(st.pools[0].nodeName.has_value());  // mixed
  EXPECT_FALSE(st.pools[1].nodeName.has_value());  // none
  EXPECT_EQ(st.pools[2].nodeName, std::optional<std::string>("n1"));
}

// TestCalculatePoolStatus_DeviceCounts: NoSchedule/NoExecute taints (in the slice or from a DeviceTaintRule) make a
// device unavailable; available never goes below zero.
TEST_F(ResourcePoolStatusRequestTest, TaintedDevicesAreUnavailable) {
  auto& s = slice("s", "pool-a", 4);
  s.spec.devices[0].taints.push_back({});
  s.spec.devices[0].taints[0].key = "k", s.spec.devices[0].taints[0].effect = "NoSchedule";
  s.spec.devices[1].taints.push_back({});
  s.spec.devices[1].taints[0].key = "k", s.spec.devices[1].taints[0].effect = "None";  // no effect on scheduling
  publish();
  DeviceTaintRule rule;
  rule.metadata.name = "rule";
  rule.spec.taint.key = "k", rule.spec.taint.effect = "NoExecute";
  rule.spec.deviceSelector.emplace().device = "s-dev-2";
  factory.forType<DeviceTaintRule>().store().upsert("rule", std::make_shared<const DeviceTaintRule>(rule));
  DeviceTaintRule noSelector = rule;
  noSelector.metadata.name = "no-selector";
  noSelector.spec.deviceSelector = decltype(noSelector.spec.deviceSelector)();  // selects nothing
  factory.forType<DeviceTaintRule>().store().upsert("no-selector", std::make_shared<const DeviceTaintRule>(noSelector));
  claim("c", "pool-a", {"s-dev-0", "s-dev-3"});  // one of them tainted
  auto st = controller.calculatePoolStatus(request("r"));
  ASSERT_EQ(st.pools.size(), 1u);
  EXPECT_EQ(st.pools[0].totalDevices, 4);
  EXPECT_EQ(st.pools[0].unavailableDevices, 2);
  EXPECT_EQ(st.pools[0].allocatedDevices, 2);
  EXPECT_EQ(st.pools[0].availableDevices, 0);
}

// TestSyncRequest / TestSkipProcessedRequest: one status write, then never again.
TEST_F(ResourcePoolStatusRequestTest, SyncWritesStatusOnceThroughTheStatusSubresource) {
  slice("s", "pool-a", 2);
  publish();
  stored(request("r"));
  ASSERT_TRUE(controller.syncRequest("r").status.ok());
  auto got = server->get<ResourcePoolStatusRequest>("", "r");
  ASSERT_TRUE(got && got->status);
  EXPECT_EQ(got->status->poolCount, 1);
  ASSERT_EQ(got->status->pools.size(), 1u);
  EXPECT_EQ(got->status->pools[0].totalDevices, 2);
  EXPECT_EQ(server->actionsFor("update", "resourcepoolstatusrequests/status").size(), 1u);
  factory.forType<ResourcePoolStatusRequest>().store().upsert("r", std::make_shared<const ResourcePoolStatusRequest>(*got));
  ASSERT_TRUE(controller.syncRequest("r").status.ok());
  EXPECT_EQ(server->actionsFor("update", "resourcepoolstatusrequests/status").size(), 1u) << "processed: skipped";
  EXPECT_TRUE(controller.syncRequest("gone").status.ok());
}

// TestSyncRequestRequeuesIncompletePool / TestSyncRequestWritesStructuralViewError.
TEST_F(ResourcePoolStatusRequestTest, AnIncompletePoolIsRetriedButAViewErrorIsWritten) {
  slice("s", "pool-a", 1, 1, 2);
  publish();
  stored(request("r"));
  auto r = controller.syncRequest("r");
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(), "incomplete pools detected, requeueing");
  EXPECT_TRUE(server->writes().empty());

  slices_.clear();
  auto& s = slice("p", "pool-p", 1);
  s.spec.partitionTypeAttribute = "gpu.example.com/profile";  // but no sharedCounters
  factory.forType<ResourceSlice>().store().erase("s");
  publish();
  stored(request("v", "pool-p"));
  ASSERT_TRUE(controller.syncRequest("v").status.ok());
  auto got = server->get<ResourcePoolStatusRequest>("", "v");
  ASSERT_TRUE(got && got->status && got->status->pools.size() == 1);
  EXPECT_EQ(got->status->pools[0].validationError,
            std::optional<std::string>("PartitionTypeMissing: pool gpu.example.com/pool-p declares partitionTypeAttribute "
                                       "but publishes no sharedCounters"));
  EXPECT_EQ(got->status->pools[0].totalDevices, 1) << "the counts stay";
  EXPECT_EQ(got->status->conditions[0].message, "Calculated status for 1 pools (1 incomplete)");
}

// Only requests without status are queued.
TEST_F(ResourcePoolStatusRequestTest, HandlersQueueOnlyPendingRequests) {
  auto done = request("done");
  done.status.emplace();
  controller.enqueueRequest(done);
  EXPECT_EQ(controller.queue().len(), 0u);
  controller.enqueueRequest(request("pending"));
  EXPECT_EQ(controller.queue().tryGet(), std::optional<std::string>("pending"));
}

// TestShouldDeleteRequest / TestCleanupExpiredRequests.
TEST_F(ResourcePoolStatusRequestTest, RequestsExpireAfterTheirTTL) {
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(clock.wallNow().time_since_epoch()).count();
  auto completed = [&](const std::string& name, int64_t ago) {
    auto r = request(name);
    r.metadata.creationTimestamp = api::Time::fromUnix(now - ago - 10);
    auto& c = r.status.emplace().conditions.emplace_back();
    c.type = "Complete", c.status = "True", c.lastTransitionTime = api::Time::fromUnix(now - ago);
    return r;
  };
  auto pending = [&](const std::string& name, int64_t ago) {
    auto r = request(name);
    r.metadata.creationTimestamp = api::Time::fromUnix(now - ago);
    return r;
  };
  EXPECT_FALSE(controller.shouldDeleteRequest(completed("a", 30 * 60)));
  EXPECT_TRUE(controller.shouldDeleteRequest(completed("b", 2 * 3600)));
  EXPECT_FALSE(controller.shouldDeleteRequest(pending("c", 2 * 3600)));
  EXPECT_TRUE(controller.shouldDeleteRequest(pending("d", 25 * 3600)));
  EXPECT_FALSE(controller.shouldDeleteRequest(request("zero"))) << "a zero time is not old";

  stored(completed("fresh", 60));
  stored(completed("expired", 2 * 3600));
  stored(pending("stuck", 25 * 3600));
  stored(pending("waiting", 3600));
  controller.cleanupExpiredRequests();
  EXPECT_TRUE(server->get<ResourcePoolStatusRequest>("", "fresh").has_value());
  EXPECT_TRUE(server->get<ResourcePoolStatusRequest>("", "waiting").has_value());
  EXPECT_FALSE(server->get<ResourcePoolStatusRequest>("", "expired").has_value());
  EXPECT_FALSE(server->get<ResourcePoolStatusRequest>("", "stuck").has_value());
  auto deletes = server->actionsFor("delete", "resourcepoolstatusrequests");
  ASSERT_EQ(deletes.size(), 2u);
  EXPECT_NE(deletes[0].body.find("\"uid\""), std::string::npos) << "a UID precondition: " << deletes[0].body;
}

// TestComputePartitionSummary: each partition type measured on its own against the headroom in-use devices leave.
TEST(PoolViews, PartitionSummary) {
  PoolViewInput in;
  in.driver = kDriver, in.poolName = "pool-0";
  in.sharedCounters = {counterSet("gpu-0", {{"memory", "80Gi"}})};
  in.devices = {partitionDevice("full-0", "Full", {consumes("gpu-0", {{"memory", "80Gi"}})}),
                partitionDevice("half-0", "Half", {consumes("gpu-0", {{"memory", "40Gi"}})}),
                partitionDevice("half-1", "Half", {consumes("gpu-0", {{"memory", "40Gi"}})})};
  auto v = computePoolViews(in);
  EXPECT_EQ(v.validationError, "");
  ASSERT_EQ(v.partitionSummary.size(), 2u);
  EXPECT_EQ(v.partitionSummary[0].type, "Full");
  EXPECT_EQ(v.partitionSummary[0].attribute, "gpu.example.com/profile");
  EXPECT_EQ(v.partitionSummary[0].total, 1);
  EXPECT_EQ(v.partitionSummary[0].allocatable, 1);
  EXPECT_EQ(v.partitionSummary[1].type, "Half");
  EXPECT_EQ(v.partitionSummary[1].total, 2);
  EXPECT_EQ(v.partitionSummary[1].allocatable, 2);
  EXPECT_FALSE(v.shareable.has_value());

  in.inUse = {"full-0"};  // drains the counter
  v = computePoolViews(in);
  EXPECT_EQ(v.partitionSummary[0].allocatable, 0);
  EXPECT_EQ(v.partitionSummary[1].allocatable, 0);
  in.inUse = {"half-0"};
  v = computePoolViews(in);
  EXPECT_EQ(v.partitionSummary[0].allocatable, 0);
  EXPECT_EQ(v.partitionSummary[1].allocatable, 1);

  // fresh-device-clamp: 800Gi fits ten, three exist.
  in.inUse.clear();
  in.sharedCounters = {counterSet("gpu-0", {{"memory", "800Gi"}})};
  in.devices = {partitionDevice("f0", "Full", {consumes("gpu-0", {{"memory", "80Gi"}})}),
                partitionDevice("f1", "Full", {consumes("gpu-0", {{"memory", "80Gi"}})}),
                partitionDevice("f2", "Full", {consumes("gpu-0", {{"memory", "80Gi"}})})};
  v = computePoolViews(in);
  ASSERT_EQ(v.partitionSummary.size(), 1u);
  EXPECT_EQ(v.partitionSummary[0].allocatable, 3);
}

TEST(PoolViews, StructuralErrors) {
  PoolViewInput in;
  in.driver = kDriver, in.poolName = "pool-0";
  in.sharedCounters = {counterSet("gpu-0", {{"memory", "80Gi"}})};
  DeviceRecord mystery = partitionDevice("mystery", "", {consumes("gpu-0", {{"memory", "40Gi"}})});
  mystery.hasPartitionType = false;
  in.devices = {partitionDevice("full-0", "Full", {consumes("gpu-0", {{"memory", "80Gi"}})}), mystery};
  auto v = computePoolViews(in);
  EXPECT_EQ(v.validationError, "PartitionTypeMissing: device \"mystery\" in pool gpu.example.com/pool-0 does not carry "
                               "partition type attribute \"gpu.example.com/profile\"");
  EXPECT_TRUE(v.partitionSummary.empty());

  in.devices = {partitionDevice("half-0", "Half", {consumes("gpu-0", {{"memory", "40Gi"}})}),
                partitionDevice("half-1", "Half", {consumes("gpu-0", {{"memory", "50Gi"}})})};
  v = computePoolViews(in);
  EXPECT_EQ(v.validationError,
            "PartitionCostMismatch: devices of partition type \"Half\" in pool gpu.example.com/pool-0 consume different "
            "counters");

  in.devices.clear();
  for (int i = 0; i < 33; ++i)
    in.devices.push_back(partitionDevice("d" + std::to_string(i), "t" + std::to_string(i), {consumes("gpu-0", {{"memory", "1Gi"}})}));
  v = computePoolViews(in);
  EXPECT_EQ(v.validationError, "PartitionSummaryOverCap: pool gpu.example.com/pool-0 has 33 partition types, exceeding "
                               "the maximum of 32");
}

// TestComputeShareableSummary(_MultipleCapacities): sums per capacity key, consumption from claims, never below 0.
TEST(PoolViews, ShareableSummary) {
  PoolViewInput in;
  in.driver = kDriver, in.poolName = "pool-0";
  auto shareable = [](const std::string& name, const char* mem, const char* bw) {
    DeviceRecord r;
    r.name = name, r.allowMultiple = true;
    r.capacity["memory"].value = q(mem);
    r.capacity["bandwidth"].value = q(bw);
    return r;
  };
  in.devices = {shareable("s0", "40Gi", "100"), shareable("s1", "40Gi", "100"), DeviceRecord{.name = "plain"}};
  in.inUse = {"s0"};
  in.consumedCapacity["memory"] = quota::Amount::of(q("10Gi"));
  in.consumedCapacity["bandwidth"] = quota::Amount::of(q("250"));
  auto v = computePoolViews(in);
  ASSERT_TRUE(v.shareable.has_value());
  EXPECT_EQ(v.shareable->fullyAvailableDevices, 1);
  EXPECT_EQ(v.shareable->partiallyAvailableDevices, 1);
  ASSERT_EQ(v.shareable->capacity.size(), 2u);
  EXPECT_EQ(v.shareable->capacity[0].name, "bandwidth");
  EXPECT_EQ(v.shareable->capacity[0].total->str(), "200");
  EXPECT_EQ(v.shareable->capacity[0].consumed->str(), "250");
  EXPECT_EQ(v.shareable->capacity[0].available->str(), "0");
  EXPECT_EQ(v.shareable->capacity[1].name, "memory");
  EXPECT_EQ(v.shareable->capacity[1].total->str(), "80Gi");
  EXPECT_EQ(v.shareable->capacity[1].consumed->str(), "10Gi");
  EXPECT_EQ(v.shareable->capacity[1].available->str(), "70Gi");

  in.devices = {DeviceRecord{.name = "plain"}};
  EXPECT_FALSE(computePoolViews(in).shareable.has_value()) << "no shareable device: no view";
}

// TestResolveDevicePartitions / TestResolvePartitionType.
TEST(PoolViews, PartitionAttributeResolution) {
  api::StringMap<api::resource::v1::DeviceAttribute> attrs;
  attrs["profile"].string = "bare";
  attrs["other.example.com/shape"].string = "square";
  attrs["count"].int_ = 3;
  EXPECT_EQ(resolvePartitionType(kDriver, attrs, "gpu.example.com/profile"), std::optional<std::string>("bare"));
  attrs["gpu.example.com/profile"].string = "qualified";
  EXPECT_EQ(resolvePartitionType(kDriver, attrs, "gpu.example.com/profile"), std::optional<std::string>("qualified"));
  EXPECT_EQ(resolvePartitionType(kDriver, attrs, "other.example.com/shape"), std::optional<std::string>("square"));
  EXPECT_FALSE(resolvePartitionType(kDriver, attrs, "gpu.example.com/count").has_value()) << "not a string";
  EXPECT_FALSE(resolvePartitionType(kDriver, attrs, "gpu.example.com/none").has_value());

  PoolViewInput in;
  in.driver = kDriver;
  DeviceRecord d;
  d.name = "d0", d.attributes = attrs;
  in.devices = {d};
  resolveDevicePartitions(std::string("gpu.example.com/profile"), in);
  EXPECT_EQ(in.devices[0].partitionAttr, "gpu.example.com/profile") << "the request's default";
  EXPECT_EQ(in.devices[0].partitionType, "qualified");
  in.devices = {d, d};
  in.devices[0].partitionAttr = "other.example.com/shape";
  resolveDevicePartitions(std::string("gpu.example.com/profile"), in);
  EXPECT_EQ(in.devices[0].partitionType, "square");
  EXPECT_EQ(in.devices[1].partitionAttr, "") << "a slice of the pool declares one: no default";
  in.devices = {d};
  resolveDevicePartitions(std::nullopt, in);
  EXPECT_EQ(in.devices[0].partitionAttr, "");
  EXPECT_FALSE(in.devices[0].hasPartitionType);
}

TEST(PoolViews, CounterCostKeyIsCanonical) {
  EXPECT_EQ(consumesCountersKey({consumes("b", {{"y", "1024Mi"}, {"x", "1000m"}}), consumes("a", {{"z", "2"}})}),
            "a/z=2,b/x=1,b/y=1Gi");
}

}  // namespace
}  // namespace kcm::controllers::resourcepoolstatusrequest
