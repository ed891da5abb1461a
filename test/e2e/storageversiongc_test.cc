// storageversion-garbage-collector-controller on the real cluster, with its gates on in ours (StorageVersionAPI;
// APIServerIdentity is on by default) and the cluster serving internal.apiserver.k8s.io/v1alpha1 (hack/cluster.sh).
// What upstream's integration test (test/integration/storageversion) checks of the collector: when a
// kube-apiserver's identity Lease is deleted, its entries leave every StorageVersion (the common encoding version
// and AllEncodingVersionsEqual follow); a StorageVersion whose only entry names no live kube-apiserver is deleted.
// Fake apiserver identities stand in for a second apiserver.
#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class StorageVersionGC : public SoloKcmSuite<StorageVersionGC> {
 public:
  static constexpr const char* kControllers = "storageversion-garbage-collector-controller";
  static constexpr const char* kLogName = "kcm-storageversion-gc";
  static std::vector<std::string> extraFlags() { return {"--feature-gates=StorageVersionAPI=true"}; }

 protected:
  void SetUp() override {
    SoloKcmSuite::SetUp();
    // The role the apiserver's bootstrap policy gives the collector when the apiserver's own StorageVersionAPI and
    // APIServerIdentity gates are on (this cluster's are not: it only serves the API).
    apply(R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":)"
          R"("system:controller:storage-version-garbage-collector"},"rules":[)"
          R"({"apiGroups":["coordination.k8s.io"],"resources":["leases"],"verbs":["get","list","watch"]},)"
          R"({"apiGroups":["internal.apiserver.k8s.io"],"resources":["storageversions"],)"
          R"("verbs":["get","list","watch","patch","update","delete"]},)"
          R"({"apiGroups":["internal.apiserver.k8s.io"],"resources":["storageversions/status"],)"
          R"("verbs":["get","patch","update"]}]})");
    apply(R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":)"
          R"("system:controller:storage-version-garbage-collector"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io",)"
          R"("kind":"ClusterRole","name":"system:controller:storage-version-garbage-collector"},"subjects":[)"
          R"({"kind":"ServiceAccount","name":"storage-version-garbage-collector","namespace":"kube-system"}]})");
  }
  void identityLease(const std::string& name) {
    ExecResult r = kubectl({"apply", "-n", "kube-system", "-f", "-"},
                           R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":")" + name +
                               R"(","namespace":"kube-system","labels":{"apiserver.kubernetes.io/identity":)"
                               R"("kube-apiserver"}},"spec":{"holderIdentity":")" + name +
                               R"(","leaseDurationSeconds":3600}})");
    ASSERT_TRUE(r.ok()) << r.err;
  }
  static std::string entry(const std::string& id, const std::string& version) {
    return R"({"apiServerID":")" + id + R"(","encodingVersion":")" + version + R"(","decodableVersions":[")" + version +
           R"("],"servedVersions":[")" + version + R"("]})";
  }
  // A StorageVersion with these entries in its status (commonEncodingVersion as the apiserver requires it).
  void storageVersion(const std::string& name, const std::vector<std::string>& entries, const std::string& common) {
    apply(R"({"apiVersion":"internal.apiserver.k8s.io/v1alpha1","kind":"StorageVersion","metadata":{"name":")" + name +
          R"("},"spec":{}})");
    std::string list;
    for (const auto& e : entries) list += (list.empty() ? "" : ",") + e;
    std::string status = R"({"status":{"storageVersions":[)" + list + "]";
    if (!common.empty()) status += R"(,"commonEncodingVersion":")" + common + R"(")";
    status += "}}";
    ExecResult r = kubectl({"patch", "storageversion", name, "--subresource=status", "--type=merge", "-p", status});
    ASSERT_TRUE(r.ok()) << r.err;
  }
  std::string get(const std::string& name, const std::string& path) {
    return kubectl({"get", "storageversion", name, "-o", "jsonpath={" + path + "}"}).out;
  }
  bool exists(const std::string& name) { return kubectl({"get", "storageversion", name, "-o", "name"}).ok(); }
};

TEST_F(StorageVersionGC, ADeletedApiserversEntriesLeaveEveryStorageVersion) {
  const std::string a = ns() + "-apiserver-a", b = ns() + "-apiserver-b";
  identityLease(a);
  identityLease(b);
  const std::string sv = ns() + ".kcm.example.com.widgets";
  storageVersion(sv, {entry(a, "kcm.example.com/v1"), entry(b, "kcm.example.com/v2")}, "");
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(get(sv, ".status.storageVersions[*].apiServerID"), a + " " + b) << "entries of live apiservers went";

  ExecResult r = kubectl({"delete", "lease", b, "-n", "kube-system"});
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_TRUE(waitFor([&] { return get(sv, ".status.storageVersions[*].apiServerID") == a; }, 30s))
      << get(sv, ".status");
  EXPECT_EQ(get(sv, ".status.commonEncodingVersion"), "kcm.example.com/v1");
  const std::string c = ".status.conditions[?(@.type==\"AllEncodingVersionsEqual\")].";
  EXPECT_EQ(get(sv, c + "status"), "True");
  EXPECT_EQ(get(sv, c + "reason"), "CommonEncodingVersionSet");
  EXPECT_EQ(get(sv, c + "message"), "Common encoding version set");

  // Its last apiserver gone too: the StorageVersion goes.
  r = kubectl({"delete", "lease", a, "-n", "kube-system"});
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_TRUE(waitFor([&] { return !exists(sv); }, 30s)) << get(sv, ".status");
}

TEST_F(StorageVersionGC, AStorageVersionNamingNoLiveApiserverIsDeleted) {
  const std::string sv = ns() + ".kcm.example.com.gadgets";
  storageVersion(sv, {entry(ns() + "-apiserver-never", "kcm.example.com/v1")}, "kcm.example.com/v1");
  EXPECT_TRUE(waitFor([&] { return !exists(sv); }, 30s)) << get(sv, ".status");
}

}  // namespace
}  // namespace kcm::e2e
