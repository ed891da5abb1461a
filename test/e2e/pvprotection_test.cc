// persistentvolume-protection-controller on the real cluster, as upstream test/e2e/storage/pv_protection.go checks
// it: a new PV gets kubernetes.io/pv-protection, a PV that is not Bound goes at once when deleted, a Bound PV stays
// (deletionTimestamp set) until it is no longer Bound. No binder runs here: the test sets the phase itself through
// the status subresource. PVs are cluster-scoped, so their names carry the test's namespace.
#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class PVProtection : public SoloKcmSuite<PVProtection> {
 public:
  static constexpr const char* kControllers = "persistentvolume-protection-controller";
  static constexpr const char* kLogName = "kcm-pv-protection";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  std::string pv(const std::string& suffix) {
    const std::string name = ns() + "-" + suffix;
    apply(R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":")" + name +
          R"("},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],)"
          R"("persistentVolumeReclaimPolicy":"Retain","hostPath":{"path":"/tmp/)" + name + R"("}}})");
    return name;
  }
  std::string field(const std::string& name, const std::string& path) {
    return kubectl({"get", "pv", name, "-o", "jsonpath={" + path + "}"}).out;
  }
  bool exists(const std::string& name) { return kubectl({"get", "pv", name, "-o", "name"}).ok(); }
  void setPhase(const std::string& name, const std::string& phase) {
    ExecResult r = kubectl({"patch", "pv", name, "--subresource=status", "--type=merge", "-p",
                            R"({"status":{"phase":")" + phase + R"("}})"});
    ASSERT_TRUE(r.ok()) << r.err;
  }
  bool hasFinalizer(const std::string& name) {
    return field(name, ".metadata.finalizers").find("kubernetes.io/pv-protection") != std::string::npos;
  }
};

// "Verify \"immediate\" deletion of a PV that is not bound to a PVC".
TEST_F(PVProtection, APVThatIsNotBoundGetsTheFinalizerAndGoesWhenDeleted) {
  const std::string name = pv("unbound");
  ASSERT_TRUE(waitFor([&] { return hasFinalizer(name); }, 30s)) << field(name, ".metadata");
  ExecResult r = kubectl({"delete", "pv", name, "--wait=false"});
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_TRUE(waitFor([&] { return !exists(name); }, 30s)) << field(name, ".metadata");
}

// "Verify that PV bound to a PVC is not removed immediately", with the binding played by the test.
TEST_F(PVProtection, ABoundPVStaysUntilItIsNoLongerBound) {
  const std::string name = pv("bound");
  ASSERT_TRUE(waitFor([&] { return hasFinalizer(name); }, 30s)) << field(name, ".metadata");
  setPhase(name, "Bound");
  ExecResult r = kubectl({"delete", "pv", name, "--wait=false"});
  ASSERT_TRUE(r.ok()) << r.err;
  std::this_thread::sleep_for(3s);
  EXPECT_TRUE(exists(name)) << "a Bound PV lost its finalizer";
  EXPECT_FALSE(field(name, ".metadata.deletionTimestamp").empty());
  EXPECT_TRUE(hasFinalizer(name));
  setPhase(name, "Released");
  EXPECT_TRUE(waitFor([&] { return !exists(name); }, 30s)) << field(name, ".metadata");
}

}  // namespace
}  // namespace kcm::e2e
