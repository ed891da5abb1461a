// endpoints-controller and endpointslice-controller on the real control plane (the cases of upstream
// test/e2e/network/service.go and endpointslice.go that need no traffic): KWOK runs the pods, gives them IPs and
// makes them Ready; Endpoints and EndpointSlices follow pods coming and going, label changes, several and named
// ports, headless hostnames; a Service without selector keeps the Endpoints its owner writes; a deleted Service's
// Endpoints go, its slices with it (owner references, garbage collector); 1,001 pods behind one Service give an
// over-capacity Endpoints and slices of at most 100. endpointslice-mirroring-controller mirrors custom Endpoints
// (endpointslicemirroring.go); service-cidr-controller protects and readies ServiceCIDRs (service_cidrs.go).
#include "framework/framework.h"
#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

struct EndpointsSuite {
  static constexpr const char* kControllers =
      "endpoints-controller,endpointslice-controller,endpointslice-mirroring-controller,service-cidr-controller,"
      "garbage-collector-controller";
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
  // The Service's EndpointSlices (ours), as JSON items.
  Json slices(const std::string& service) {
    return kubectlJson({"get", "endpointslices", "-n", ns(), "-l",
                        "kubernetes.io/service-name=" + service + ",endpointslice.kubernetes.io/managed-by="
                        "endpointslice-controller.k8s.io"})["items"];
  }
  // Ready endpoints' addresses over the Service's slices, sorted.
  std::vector<std::string> sliceReadyIPs(const std::string& service) {
    std::vector<std::string> ips;
    for (const auto& s : slices(service))
      for (const auto& e : s.value("endpoints", Json::array()))
        if (e["conditions"].value("ready", false))
          for (const auto& a : e["addresses"]) ips.push_back(a);
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
  // The slices say the same, with the Service's ports and labels.
  EXPECT_TRUE(waitFor([&] { return sliceReadyIPs("web") == std::vector<std::string>{podIP("other")}; }, 30s));
  Json sl = slices("web");
  ASSERT_EQ(sl.size(), 1u);
  EXPECT_EQ(sl[0]["addressType"], "IPv4");
  EXPECT_EQ(sl[0]["metadata"]["labels"]["tier"], "front");
  EXPECT_EQ(sl[0]["metadata"]["ownerReferences"][0]["kind"], "Service");
  EXPECT_EQ(sl[0]["metadata"]["ownerReferences"][0]["name"], "web");
  std::set<std::pair<std::string, int>> slicePorts;
  for (const auto& p : sl[0]["ports"]) slicePorts.insert({p["name"].get<std::string>(), p["port"].get<int>()});
  EXPECT_EQ(slicePorts, (std::set<std::pair<std::string, int>>{{"http", 8080}, {"metrics", 9100}}));
  // The Service goes: so do its Endpoints, and its slices with it.
  ASSERT_TRUE(kubectl({"delete", "service", "web", "-n", ns()}).ok());
  EXPECT_TRUE(waitFor([&] { return endpoints("web").is_null(); }, 30s));
  EXPECT_TRUE(waitFor([&] { return slices("web").empty(); }, 60s));
}

// endpointslice.go "should create Endpoints and EndpointSlices for Pods matching a Service": pods exposing the named
// port on different numbers get one slice per port number; a Service matching nothing keeps one empty slice.
TEST_F(EndpointsE2E, SlicesSplitByPortAndAnEmptyServiceKeepsAPlaceholder) {
  apply(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"split"},
    "spec":{"selector":{"app":"split"},"ports":[{"name":"http","port":80,"targetPort":"http"}]}})");
  apply(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"empty"},"spec":{"selector":{"app":"none"},"ports":[{"port":80}]}})");
  pod("split-a", R"("app":"split")");
  apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"split-b","labels":{"app":"split"}},
    "spec":{"nodeName":"kwok-node-1","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10",
    "ports":[{"name":"http","containerPort":8081}]}]}})");
  ASSERT_TRUE(waitFor([&] { return sliceReadyIPs("split").size() == 2; }, 30s)) << slices("split").dump();
  std::set<int> ports;
  for (const auto& s : slices("split")) {
    ASSERT_EQ(s["endpoints"].size(), 1u);
    ports.insert(s["ports"][0]["port"].get<int>());
  }
  EXPECT_EQ(ports, (std::set<int>{8080, 8081}));
  ASSERT_TRUE(waitFor([&] { return slices("empty").size() == 1; }, 30s));
  EXPECT_TRUE(slices("empty")[0].value("endpoints", Json()).is_null());
}

// 1,001 pods behind one Service: Endpoints truncated to 1,000 with the over-capacity annotation; slices of at most
// 100 endpoints (--max-endpoints-per-slice) holding all 1,001.
TEST_F(EndpointsE2E, AThousandAndOnePodsGiveAnOverCapacityEndpointsAndElevenSlices) {
  apply(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"big"},
    "spec":{"selector":{"app":"big"},"ports":[{"port":80,"targetPort":8080}]}})");
  std::string list = R"({"apiVersion":"v1","kind":"List","items":[)";
  for (int i = 0; i < 1001; ++i)
    list += std::string(i ? "," : "") + R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"big-)" +
            std::to_string(i) + R"(","labels":{"app":"big"}},"spec":{"nodeName":"kwok-node-)" + std::to_string(i % 3) +
            R"(","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}})";
  list += "]}";
  ASSERT_TRUE(kubectl({"apply", "-n", ns(), "-f", "-"}, list, 300s).ok());
  auto sliceEndpoints = [&] {
    size_t n = 0, max = 0;
    for (const auto& s : slices("big")) {
      size_t k = s.value("endpoints", Json::array()).size();
      n += k;
      max = std::max(max, k);
    }
    return std::make_pair(n, max);
  };
  EXPECT_TRUE(waitFor([&] { return sliceEndpoints().first == 1001; }, 240s, 2s)) << sliceEndpoints().first;
  EXPECT_LE(sliceEndpoints().second, 100u);
  EXPECT_GE(slices("big").size(), 11u);
  EXPECT_TRUE(waitFor([&] {
    Json e = endpoints("big");
    return !e.is_null() && e["metadata"].value("annotations", Json::object()).value(
                               "endpoints.kubernetes.io/over-capacity", "") == "truncated";
  }, 120s, 2s));
  size_t addresses = 0;
  for (const auto& s : endpoints("big").value("subsets", Json::array()))
    addresses += s.value("addresses", Json::array()).size() + s.value("notReadyAddresses", Json::array()).size();
  EXPECT_EQ(addresses, 1000u);
  kubectl({"delete", "pods", "--all", "-n", ns(), "--grace-period=0", "--force", "--wait=false"}, "", 300s);
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

// Readiness flips (the pod's Ready condition written through its status, as a kubelet would; KWOK leaves it): the
// address moves to notReadyAddresses and the slice endpoint turns ready=false, serving=false, and back.
TEST_F(EndpointsE2E, ReadinessFlipsReachEndpointsAndSlices) {
  apply(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"flip"},
    "spec":{"selector":{"app":"flip"},"ports":[{"port":80,"targetPort":8080}]}})");
  pod("flip", R"("app":"flip")");
  const std::string ip = podIP("flip");
  auto sliceConditions = [&] {
    Json s = slices("flip");
    if (s.empty() || s[0].value("endpoints", Json::array()).empty()) return Json();
    return s[0]["endpoints"][0]["conditions"];
  };
  auto notReadyIPs = [&] {
    std::vector<std::string> ips;
    Json e = endpoints("flip");
    if (e.is_null()) return ips;
    for (const auto& sub : e.value("subsets", Json::array()))
      for (const auto& a : sub.value("notReadyAddresses", Json::array())) ips.push_back(a["ip"]);
    return ips;
  };
  ASSERT_TRUE(waitFor([&] { return readyIPs("flip") == std::vector<std::string>{ip}; }, 30s));
  ASSERT_TRUE(waitFor([&] { return sliceConditions().value("ready", false); }, 30s)) << slices("flip").dump();
  auto setReady = [&](const char* status) {
    ASSERT_TRUE(kubectl({"patch", "pod", "flip", "-n", ns(), "--subresource=status", "--type=strategic", "-p",
                         std::string(R"({"status":{"conditions":[{"type":"Ready","status":")") + status + R"("}]}})"})
                    .ok());
  };
  setReady("False");
  EXPECT_TRUE(waitFor([&] { return notReadyIPs() == std::vector<std::string>{ip} && readyIPs("flip").empty(); }, 30s))
      << endpoints("flip").dump();
  EXPECT_TRUE(waitFor([&] {
    Json c = sliceConditions();
    return !c.is_null() && !c.value("ready", true) && !c.value("serving", true) && !c.value("terminating", true);
  }, 30s)) << slices("flip").dump();
  setReady("True");
  EXPECT_TRUE(waitFor([&] { return readyIPs("flip") == std::vector<std::string>{ip}; }, 30s));
  EXPECT_TRUE(waitFor([&] { return sliceConditions().value("ready", false); }, 30s));
}

// topology_hints.go, without traffic: a Service with topology-mode Auto gets zone hints in proportion to the zones'
// allocatable CPU (zone-a: the three 32-CPU KWOK nodes; zone-b: one 96-CPU node added here), so of three zone-a and
// one zone-b endpoints one zone-a endpoint serves zone-b; TopologyAwareHintsEnabled, then, with the annotation
// gone, hints removed and TopologyAwareHintsDisabled.
TEST_F(EndpointsE2E, TopologyModeAutoSharesEndpointsByZoneCPU) {
  const std::string node = "kwok-zone-b-" + ns();
  ASSERT_TRUE(kubectl({"apply", "-f", "-"},
                      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + node +
                          R"(","annotations":{"kwok.x-k8s.io/node":"fake"},"labels":{"type":"kwok-e2e",)"
                          R"("topology.kubernetes.io/zone":"zone-b"}},"spec":{"taints":[{"key":"kcm.e2e/zone-b",)"
                          R"("effect":"NoSchedule"}]},"status":{"allocatable":{"cpu":"96","memory":"256Gi","pods":"110"},)"
                          R"("capacity":{"cpu":"96","memory":"256Gi","pods":"110"}}})")
                  .ok());
  struct Cleanup {
    std::string n, ns;
    ~Cleanup() {
      kubectl({"delete", "pod", "topo-b", "-n", ns, "--grace-period=0", "--force", "--ignore-not-found"});
      kubectl({"delete", "node", n, "--ignore-not-found"});
    }
  } cleanup{node, ns()};
  ASSERT_TRUE(waitFor([&] {
    ExecResult r = kubectl({"get", "node", node, "-o", "json"});
    return r.ok() && conditionStatus(Json::parse(r.out), "Ready") == "True";
  }, 30s));
  apply(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"topo",
    "annotations":{"service.kubernetes.io/topology-mode":"Auto"}},
    "spec":{"selector":{"app":"topo"},"ports":[{"port":80,"targetPort":8080}]}})");
  for (const char* p : {"topo-a0", "topo-a1", "topo-a2", "topo-b"})
    apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + std::string(p) + R"(","labels":{"app":"topo"}},
      "spec":{"nodeName":")" + (std::string(p) == "topo-b" ? node : "kwok-node-0") + R"(",
      "tolerations":[{"key":"kcm.e2e/zone-b","operator":"Exists"}],
      "containers":[{"name":"c","image":"registry.k8s.io/pause:3.10","ports":[{"containerPort":8080}]}]}})");
  // zone -> hinted zone -> count, over ready endpoints.
  auto hintsByZone = [&] {
    std::map<std::string, std::map<std::string, int>> out;
    for (const auto& sl : slices("topo"))
      for (const auto& e : sl.value("endpoints", Json::array()))
        if (e["conditions"].value("ready", false)) {
          std::string to = "-";
          if (e.contains("hints"))
            for (const auto& z : e["hints"].value("forZones", Json::array())) to = z["name"];
          out[e.value("zone", "")][to]++;
        }
    return out;
  };
  const std::map<std::string, std::map<std::string, int>> shared = {{"zone-a", {{"zone-a", 2}, {"zone-b", 1}}},
                                                                    {"zone-b", {{"zone-b", 1}}}};
  EXPECT_TRUE(waitFor([&] { return hintsByZone() == shared; }, 60s)) << slices("topo").dump();
  auto eventMessages = [&](const std::string& reason) {
    std::vector<std::string> out;
    ExecResult r = kubectl({"get", "events", "-n", ns(), "--field-selector", "involvedObject.name=topo", "-o", "json"});
    if (!r.ok()) return out;
    const Json list = Json::parse(r.out);
    for (const Json& e : list["items"])
      if (e.value("reason", "") == reason) out.push_back(e.value("message", ""));
    return out;
  };
  // Pods arriving one by one first give "Insufficient number of endpoints" and the like (TopologyAwareHintsDisabled
  // too), as upstream.
  auto hasEvent = [&](const std::string& reason, const std::string& message) {
    auto m = eventMessages(reason);
    return std::find(m.begin(), m.end(), message) != m.end();
  };
  EXPECT_TRUE(waitFor([&] {
    return hasEvent("TopologyAwareHintsEnabled", "Topology Aware Hints has been enabled, addressType: IPv4");
  }, 30s));
  ASSERT_TRUE(kubectl({"annotate", "service", "topo", "-n", ns(), "service.kubernetes.io/topology-mode-"}).ok());
  const std::map<std::string, std::map<std::string, int>> none = {{"zone-a", {{"-", 3}}}, {"zone-b", {{"-", 1}}}};
  EXPECT_TRUE(waitFor([&] { return hintsByZone() == none; }, 30s)) << slices("topo").dump();
  EXPECT_TRUE(waitFor([&] {
    return hasEvent("TopologyAwareHintsDisabled", "Topology Aware Hints has been disabled, addressType: IPv4");
  }, 30s)) << ::testing::PrintToString(eventMessages("TopologyAwareHintsDisabled"));
  // Back on; then the zone-b node moves to zone-a: the Node handler refreshes the zone shares and brings the Service
  // back (no pod changed), which now has one zone only.
  ASSERT_TRUE(kubectl({"annotate", "service", "topo", "-n", ns(), "service.kubernetes.io/topology-mode=Auto"}).ok());
  EXPECT_TRUE(waitFor([&] { return hintsByZone() == shared; }, 30s)) << slices("topo").dump();
  ASSERT_TRUE(kubectl({"label", "node", node, "--overwrite", "topology.kubernetes.io/zone=zone-a"}).ok());
  const std::map<std::string, std::map<std::string, int>> oneZone = {{"zone-a", {{"-", 4}}}};
  EXPECT_TRUE(waitFor([&] { return hintsByZone() == oneZone; }, 30s)) << slices("topo").dump();
  EXPECT_TRUE(waitFor([&] {
    return hasEvent("TopologyAwareHintsDisabled", std::string("Insufficient Node information: allocatable CPU or zone "
                                                              "not specified on one or more nodes, addressType: IPv4"));
  }, 30s)) << ::testing::PrintToString(eventMessages("TopologyAwareHintsDisabled"));
}

// endpointslicemirroring.go "should mirror a custom Endpoints resource through create update and delete".
TEST_F(EndpointsE2E, CustomEndpointsAreMirroredThroughCreateUpdateAndDelete) {
  apply(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"mirror"},"spec":{"ports":[{"name":"example","port":80}]}})");
  apply(R"({"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"mirror","labels":{"team":"a"}},
    "subsets":[{"addresses":[{"ip":"10.1.2.3"}],"ports":[{"name":"example","port":80,"protocol":"TCP"}]}]})");
  auto mirrored = [&] {
    return kubectlJson({"get", "endpointslices", "-n", ns(), "-l",
                        "kubernetes.io/service-name=mirror,endpointslice.kubernetes.io/managed-by="
                        "endpointslicemirroring-controller.k8s.io"})["items"];
  };
  auto addresses = [&] {
    std::vector<std::string> out;
    for (const auto& sl : mirrored())
      for (const auto& e : sl.value("endpoints", Json::array())) out.push_back(e["addresses"][0]);
    std::sort(out.begin(), out.end());
    return out;
  };
  ASSERT_TRUE(waitFor([&] { return addresses() == std::vector<std::string>{"10.1.2.3"}; }, 30s)) << mirrored().dump();
  Json sl = mirrored()[0];
  EXPECT_EQ(sl["addressType"], "IPv4");
  EXPECT_EQ(sl["ports"][0]["port"], 80);
  EXPECT_EQ(sl["metadata"]["labels"]["team"], "a");
  EXPECT_EQ(sl["metadata"]["ownerReferences"][0]["kind"], "Endpoints");
  apply(R"({"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"mirror","labels":{"team":"a"}},
    "subsets":[{"addresses":[{"ip":"10.2.3.4"},{"ip":"10.2.3.5"}],"ports":[{"name":"example","port":80,"protocol":"TCP"}]}]})");
  EXPECT_TRUE(waitFor([&] { return addresses() == std::vector<std::string>{"10.2.3.4", "10.2.3.5"}; }, 30s))
      << mirrored().dump();
  // Skipped when labelled, then gone with the Endpoints.
  ASSERT_TRUE(kubectl({"label", "endpoints", "mirror", "-n", ns(), "endpointslice.kubernetes.io/skip-mirror=true"}).ok());
  EXPECT_TRUE(waitFor([&] { return mirrored().empty(); }, 30s));
  ASSERT_TRUE(kubectl({"label", "endpoints", "mirror", "-n", ns(), "endpointslice.kubernetes.io/skip-mirror-"}).ok());
  EXPECT_TRUE(waitFor([&] { return addresses().size() == 2; }, 30s));
  ASSERT_TRUE(kubectl({"delete", "endpoints", "mirror", "-n", ns()}).ok());
  EXPECT_TRUE(waitFor([&] { return mirrored().empty(); }, 30s));
}

// service_cidrs.go: a new ServiceCIDR gets the protection finalizer and Ready; deleting it while a Service holds one
// of its addresses leaves it Terminating; once the Service is gone, it goes too.
TEST_F(EndpointsE2E, AServiceCIDRIsProtectedWhileAServiceUsesIt) {
  struct Cleanup {
    ~Cleanup() { kubectl({"delete", "servicecidr", "e2e-extra", "--ignore-not-found", "--wait=false"}); }
  } cleanup;
  apply(R"({"apiVersion":"networking.k8s.io/v1","kind":"ServiceCIDR","metadata":{"name":"e2e-extra"},
    "spec":{"cidrs":["10.100.0.0/24"]}})");
  auto cidr = [] { return kubectlJson({"get", "servicecidr", "e2e-extra"}); };
  ASSERT_TRUE(waitFor([&] { return conditionStatus(cidr(), "Ready") == "True"; }, 30s)) << cidr().dump();
  EXPECT_EQ(cidr()["metadata"]["finalizers"], Json({"networking.k8s.io/service-cidr-finalizer"}));
  apply(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"in-extra"},
    "spec":{"clusterIP":"10.100.0.10","ports":[{"port":80}]}})");
  ASSERT_TRUE(waitFor([] { return kubectl({"get", "ipaddress", "10.100.0.10"}).ok(); }, 30s));
  ASSERT_TRUE(kubectl({"delete", "servicecidr", "e2e-extra", "--wait=false"}).ok());
  Json terminating;
  ASSERT_TRUE(waitFor([&] {
    Json c = cidr();
    for (const auto& cond : c["status"].value("conditions", Json::array()))
      if (cond["type"] == "Ready" && cond["status"] == "False") terminating = cond;
    return !terminating.is_null();
  }, 30s)) << cidr().dump();
  EXPECT_EQ(terminating["reason"], "Terminating");
  EXPECT_TRUE(kubectl({"get", "servicecidr", "e2e-extra"}).ok());
  ASSERT_TRUE(kubectl({"delete", "service", "in-extra", "-n", ns()}).ok());
  EXPECT_TRUE(waitFor([] { return !kubectl({"get", "servicecidr", "e2e-extra"}).ok(); }, 60s));
  // The cluster's default ServiceCIDR is protected and Ready too.
  Json def = kubectlJson({"get", "servicecidr", "kubernetes"});
  EXPECT_EQ(conditionStatus(def, "Ready"), "True");
}

}  // namespace
}  // namespace kcm::e2e
