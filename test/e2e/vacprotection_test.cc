// volumeattributesclass-protection-controller on the real cluster: a new VolumeAttributesClass gets
// kubernetes.io/vac-protection, an unused one goes at once when deleted, and one a PVC (spec or status) or a PV
// names stays (deletionTimestamp set) until nothing names it. The apiserver's StorageObjectInUseProtection
// admission puts kubernetes.io/pvc-protection / pv-protection on claims and volumes, so their protection
// controllers run too and let them go once deleted (no pod uses the claims, the volumes are never Bound). No
// binder or CSI driver runs: the claims stay Pending and the test writes their status itself. VACs and PVs are
// cluster-scoped, so their names carry the test's namespace; whatever a failed test leaves is unblocked in TearDown.
#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class VACProtection : public SoloKcmSuite<VACProtection> {
 public:
  static constexpr const char* kControllers =
      "volumeattributesclass-protection-controller,persistentvolumeclaim-protection-controller,"
      "persistentvolume-protection-controller";
  static constexpr const char* kLogName = "kcm-vac-protection";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  void TearDown() override {
    for (const auto& [kind, name] : clusterScoped_) {
      kubectl({"patch", kind, name, "--type=merge", "-p", R"({"metadata":{"finalizers":null}})"});
      kubectl({"delete", kind, name, "--wait=false", "--ignore-not-found"});
    }
    SoloKcmSuite<VACProtection>::TearDown();
  }

  std::string vac(const std::string& suffix) {
    const std::string name = ns() + "-" + suffix;
    clusterScoped_.emplace_back("volumeattributesclass", name);
    apply(R"({"apiVersion":"storage.k8s.io/v1","kind":"VolumeAttributesClass","metadata":{"name":")" + name +
          R"("},"driverName":"example.csi.k8s.io","parameters":{"iops":"3000","throughput":"125"}})");
    return name;
  }
  void pvc(const std::string& name, const std::string& vacName) {
    apply(R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":")" + name + R"(","namespace":")" +
          ns() + R"("},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"","volumeAttributesClassName":")" +
          vacName + R"(","resources":{"requests":{"storage":"1Gi"}}}})");
  }
  std::string pv(const std::string& suffix, const std::string& vacName) {
    const std::string name = ns() + "-" + suffix;
    clusterScoped_.emplace_back("pv", name);
    apply(R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":")" + name +
          R"("},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],)"
          R"("persistentVolumeReclaimPolicy":"Retain","storageClassName":"","volumeAttributesClassName":")" + vacName +
          R"(","csi":{"driver":"example.csi.k8s.io","volumeHandle":")" + name + R"("}}})");
    return name;
  }
  std::string vacField(const std::string& name, const std::string& path) {
    return kubectl({"get", "volumeattributesclass", name, "-o", "jsonpath={" + path + "}"}).out;
  }
  bool vacExists(const std::string& name) {
    return kubectl({"get", "volumeattributesclass", name, "-o", "name"}).ok();
  }
  bool protectedVAC(const std::string& name) {
    return vacField(name, ".metadata.finalizers").find("kubernetes.io/vac-protection") != std::string::npos;
  }
  void remove(const std::vector<std::string>& what) {
    std::vector<std::string> args = {"delete"};
    args.insert(args.end(), what.begin(), what.end());
    args.push_back("--wait=false");
    ExecResult r = kubectl(args);
    ASSERT_TRUE(r.ok()) << r.err;
  }
  // Deleted but held: still there, with a deletionTimestamp and the finalizer, a few seconds on.
  void expectHeld(const std::string& name, const std::string& by) {
    std::this_thread::sleep_for(3s);
    ASSERT_TRUE(vacExists(name)) << "a VAC " << by << " names lost its finalizer";
    EXPECT_FALSE(vacField(name, ".metadata.deletionTimestamp").empty());
    EXPECT_TRUE(protectedVAC(name));
  }
  void patchClaimStatus(const std::string& claim, const std::string& status) {
    ExecResult r = kubectl({"patch", "pvc", claim, "-n", ns(), "--subresource=status", "--type=merge", "-p",
                            R"({"status":)" + status + "}"});
    ASSERT_TRUE(r.ok()) << r.err;
  }

 private:
  std::vector<std::pair<std::string, std::string>> clusterScoped_;
};

TEST_F(VACProtection, ANewVACGetsTheFinalizerAndAnUnusedOneGoesWhenDeleted) {
  const std::string name = vac("unused");
  ASSERT_TRUE(waitFor([&] { return protectedVAC(name); }, 30s)) << vacField(name, ".metadata");
  remove({"volumeattributesclass", name});
  EXPECT_TRUE(waitFor([&] { return !vacExists(name); }, 30s)) << vacField(name, ".metadata");
}

TEST_F(VACProtection, AVACAClaimNamesStaysUntilTheClaimIsGone) {
  const std::string name = vac("claimed");
  ASSERT_TRUE(waitFor([&] { return protectedVAC(name); }, 30s)) << vacField(name, ".metadata");
  pvc("data", name);
  remove({"volumeattributesclass", name});
  expectHeld(name, "a PVC's spec");
  remove({"pvc", "data", "-n", ns()});
  EXPECT_TRUE(waitFor([&] { return !vacExists(name); }, 60s)) << vacField(name, ".metadata");
}

// status.currentVolumeAttributesClassName and status.modifyVolumeStatus.targetVolumeAttributesClassName hold a
// VAC as the spec does; a status update that stops naming it lets it go while the claim stays.
TEST_F(VACProtection, AVACOnlyAClaimStatusNamesStaysUntilTheStatusMovesOn) {
  const std::string gold = vac("gold");
  const std::string silver = vac("silver");
  ASSERT_TRUE(waitFor([&] { return protectedVAC(gold) && protectedVAC(silver); }, 30s));
  pvc("data", gold);
  patchClaimStatus("data", R"({"currentVolumeAttributesClassName":")" + silver +
                               R"(","modifyVolumeStatus":{"status":"InProgress","targetVolumeAttributesClassName":")" +
                               silver + R"("}})");
  remove({"volumeattributesclass", silver});
  expectHeld(silver, "a PVC's status");
  patchClaimStatus("data", R"({"currentVolumeAttributesClassName":")" + gold + R"(","modifyVolumeStatus":null})");
  EXPECT_TRUE(waitFor([&] { return !vacExists(silver); }, 30s)) << vacField(silver, ".metadata");
  EXPECT_TRUE(vacExists(gold));
  EXPECT_TRUE(protectedVAC(gold));
  remove({"pvc", "data", "-n", ns()});
  remove({"volumeattributesclass", gold});
  EXPECT_TRUE(waitFor([&] { return !vacExists(gold); }, 60s)) << vacField(gold, ".metadata");
}

TEST_F(VACProtection, AVACAVolumeNamesStaysUntilTheVolumeIsGone) {
  const std::string name = vac("volume");
  ASSERT_TRUE(waitFor([&] { return protectedVAC(name); }, 30s)) << vacField(name, ".metadata");
  const std::string volume = pv("pv", name);
  remove({"volumeattributesclass", name});
  expectHeld(name, "a PV");
  remove({"pv", volume});
  EXPECT_TRUE(waitFor([&] { return !vacExists(name); }, 60s)) << vacField(name, ".metadata");
}

}  // namespace
}  // namespace kcm::e2e
