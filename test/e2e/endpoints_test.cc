// endpoints-controller on the real control plane (the endpoints cases of upstream test/e2e/network/service.go that
// need no traffic): KWOK runs the pods, gives them IPs and makes them Ready; the Endpoints follow pods coming and
// going, label changes, several and named ports, headless hostnames; a Service without selector keeps the
// Endpoints its owner writes; a deleted Service's Endpoints goes.
#include "framework/framework.h"
#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

struct EndpointsSuite {
  static constexpr const char* kControllers = "endpoints-controller";
  static constexpr const char* kLogName = "kcm-endpoints";
  static std::vector<std::string> extraFlags() { return {}; }
};
class EndpointsE2E : public SoloKcmSuite<EndpointsSuite> {
 protected:
  void pod(const std::string& name, const std::string& labels, const std::string& extraSpec = "",
           const std::string& extraMeta = "") {
    apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(",)" + extraMeta + R"("labels":{)" +
          labels + R"(}},
      "spec":{"nodeName":"kwok-node-)" + std::to_string(next_++ % 3) + R"(",)" + extraSpec + R"("containers":[{"name":"c",
      "image":"registry.k8s.io/pause:3.10","ports":[{"name":"http","containerPort":8080},{"name":"metrics","containerPort":9100}]}]}})");
  }
  std::string podIP(const std::string& name) {
    std::string ip;
    waitFor([&] { return !(ip = kubectl({"get", "pod", name, "-n", ns(), "-o", "jsonpath={.status.podIP}"}).out).empty(); },
            30s);
    return ip;
  }
  Json endpoints(const std::string& name) {
    ExecResult r = kubectl({"get", "endpoints", name, "-n", ns(), "-o", "json"});
    return r.ok() ? Json::parse(r.out) : Json();
  }
  // The ready addresses' IPs of every subset, sorted.
  std::vector<std::string> readyIPs(const std::string& name) {
    std::vector<std::string> ips;
    Json e = endpoints(name);
    if (e.is_null()) return ips;
    for (const auto& s : e.value("subsets", Json::array()))
      for (const auto& a : s.value("addresses", Json::array())) ips.push_back(a["ip"]);
    std::sort(ips.begin(), ips.end());
    return ips;
  }
  int next_ = 0;
};

TEST_F(EndpointsE2E, EndpointsFollowPodsAndTheirLabels) {
  apply(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"web","labels":{"tier":"front"}},
    "spec":{"selector":{"app":"web"},"ports":[{"name":"http","port":80,"targetPort":"http"},
    {"name":"metrics","port":9100,"targetPort":9100}]}})");
  pod("a", R"("app":"web")");
  pod("b", R"("app":"web")");
  pod("other", R"("app":"other")");
  std::vector<std::string> want = {podIP("a"), podIP("b")};
  std::sort(want.begin(), want.end());
  ASSERT_TRUE(waitFor([&] { return readyIPs("web") == want; }, 30s)) << endpoints("web").dump();
  Json e = endpoints("web");
  EXPECT_EQ(e["metadata"]["labels"]["endpoints.kubernetes.io/managed-by"], "endpoint-controller");
  EXPECT_EQ(e["metadata"]["labels"]["tier"], "front");
  EXPECT_TRUE(e["metadata"]["annotations"].contains("endpoints.kubernetes.io/last-change-trigger-time"));
  ASSERT_EQ(e["subsets"].size(), 1u);
  std::set<std::pair<std::string, int>> ports;
  for (const auto& p : e["subsets"][0]["ports"]) ports.insert({p["name"].get<std::string>(), p["port"].get<int>()});
  EXPECT_EQ(ports, (std::set<std::pair<std::string, int>>{{"http", 8080}, {"metrics", 9100}}));
  for (const auto& a : e["subsets"][0]["addresses"]) {
    EXPECT_EQ(a["targetRef"]["kind"], "Pod");
    EXPECT_EQ(a["nodeName"].get<std::string>().rfind("kwok-node-", 0), 0u);
  }
  // Relabelled out of the selector, then deleted: each goes from the Endpoints.
  ASSERT_TRUE(kubectl({"label", "pod", "b", "-n", ns(), "--overwrite", "app=gone"}).ok());
  EXPECT_TRUE(waitFor([&] { return readyIPs("web") == std::vector<std::string>{podIP("a")}; }, 30s));
  ASSERT_TRUE(kubectl({"label", "pod", "other", "-n", ns(), "--overwrite", "app=web"}).ok());
  EXPECT_TRUE(waitFor([&] { return readyIPs("web").size() == 2; }, 30s));
  ASSERT_TRUE(kubectl({"delete", "pod", "a", "-n", ns(), "--grace-period=0", "--force"}).ok());
  EXPECT_TRUE(waitFor([&] { return readyIPs("web") == std::vector<std::string>{podIP("other")}; }, 30s))
      << endpoints("web").dump();
  // The Service goes: so do its Endpoints.
  ASSERT_TRUE(kubectl({"delete", "service", "web", "-n", ns()}).ok());
  EXPECT_TRUE(waitFor([&] { return endpoints("web").is_null(); }, 30s));
}

TEST_F(EndpointsE2E, HeadlessServicesPublishHostnamesAndPortlessSubsets) {
  apply(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"db"},"spec":{"clusterIP":"None","selector":{"app":"db"}}})");
  pod("db-0", R"("app":"db")", R"("hostname":"db-0","subdomain":"db",)");
  const std::string ip = podIP("db-0");
  ASSERT_TRUE(waitFor([&] { return readyIPs("db") == std::vector<std::string>{ip}; }, 30s)) << endpoints("db").dump();
  Json e = endpoints("db");
  EXPECT_EQ(e["metadata"]["labels"]["service.kubernetes.io/headless"], "");
  EXPECT_FALSE(e["subsets"][0].contains("ports"));
  EXPECT_EQ(e["subsets"][0]["addresses"][0]["hostname"], "db-0");
}

TEST_F(EndpointsE2E, AServiceWithoutSelectorKeepsTheEndpointsItsOwnerWrites) {
  apply(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"external"},"spec":{"ports":[{"port":443}]}})");
  apply(R"({"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"external"},
    "subsets":[{"addresses":[{"ip":"192.0.2.10"}],"ports":[{"port":443}]}]})");
  std::this_thread::sleep_for(3s);
  Json e = endpoints("external");
  EXPECT_EQ(readyIPs("external"), std::vector<std::string>{"192.0.2.10"});
  EXPECT_FALSE(e["metadata"].value("labels", Json::object()).contains("endpoints.kubernetes.io/managed-by"));
}

TEST_F(EndpointsE2E, PublishNotReadyAddressesKeepsTerminatingPods) {
  apply(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"sticky"},
    "spec":{"publishNotReadyAddresses":true,"selector":{"app":"sticky"},"ports":[{"port":80,"targetPort":8080}]}})");
  // A finalizer keeps the pod terminating once deleted.
  pod("s", R"("app":"sticky")", "", R"("finalizers":["e2e.kcm/hold"],)");
  const std::string ip = podIP("s");
  ASSERT_TRUE(waitFor([&] { return readyIPs("sticky") == std::vector<std::string>{ip}; }, 30s));
  ASSERT_TRUE(kubectl({"delete", "pod", "s", "-n", ns(), "--wait=false"}).ok());
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(readyIPs("sticky"), std::vector<std::string>{ip}) << endpoints("sticky").dump();
  kubectl({"patch", "pod", "s", "-n", ns(), "--type=merge", "-p", R"({"metadata":{"finalizers":null}})"});
}

}  // namespace
}  // namespace kcm::e2e
