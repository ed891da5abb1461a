// storage-version-migrator-controller on the real cluster, what upstream's integration tests
// (test/integration/storageversionmigrator) check: a StorageVersionMigration of Secrets runs (Running, a
// resourceVersion recorded) and succeeds, then stops Running (MigrationCompleted); a CRD whose storage version moved
// from v1 to v2 has every custom resource written again (their resourceVersions move), gets StorageMigrating
// conditions and its status.storedVersions reduced to ["v2"]; a resource nobody serves fails the migration after
// its minute of grace. The garbage collector runs too: the migrator reads its monitors.
#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class StorageVersionMigrator : public SoloKcmSuite<StorageVersionMigrator> {
 public:
  static constexpr const char* kControllers = "storage-version-migrator-controller,garbage-collector-controller";
  static constexpr const char* kLogName = "kcm-svm";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  void svm(const std::string& name, const std::string& group, const std::string& resource) {
    apply(R"({"apiVersion":"storagemigration.k8s.io/v1","kind":"StorageVersionMigration","metadata":{"name":")" + name +
          R"("},"spec":{"resource":{"group":")" + group + R"(","resource":")" + resource + R"("}}})");
  }
  std::string get(const std::string& kind, const std::string& name, const std::string& path,
                  const std::string& namespace_ = "") {
    std::vector<std::string> args = {"get", kind, name, "-o", "jsonpath={" + path + "}"};
    if (!namespace_.empty()) args.insert(args.end(), {"-n", namespace_});
    return kubectl(args).out;
  }
  std::string cond(const std::string& svmName, const std::string& type, const std::string& field) {
    return get("storageversionmigration", svmName, ".status.conditions[?(@.type==\"" + type + "\")]." + field);
  }
};

TEST_F(StorageVersionMigrator, SecretsAreMigratedAndTheMigrationCompletes) {
  for (int i = 0; i < 3; ++i)
    apply(R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s)" + std::to_string(i) + R"(","namespace":")" +
          ns() + R"("},"stringData":{"k":"v"}})");
  const std::string name = "secrets-" + ns();
  svm(name, "", "secrets");
  EXPECT_TRUE(waitFor([&] { return cond(name, "Succeeded", "status") == "True"; }, 180s))
      << get("storageversionmigration", name, ".status");
  EXPECT_EQ(cond(name, "Succeeded", "reason"), "StorageVersionMigrationSucceeded");
  EXPECT_EQ(cond(name, "Succeeded", "message"), "Migration completed");
  EXPECT_FALSE(get("storageversionmigration", name, ".status.resourceVersion").empty());
  // The runner then takes it out of Running.
  EXPECT_TRUE(waitFor([&] { return cond(name, "Running", "status") == "False"; }, 30s))
      << get("storageversionmigration", name, ".status");
  EXPECT_EQ(cond(name, "Running", "reason"), "MigrationCompleted");
  EXPECT_EQ(cond(name, "Running", "message"), "Migration completed");
  EXPECT_EQ(cond(name, "Failed", "status"), "");
  kubectl({"delete", "storageversionmigration", name, "--wait=false"});
}

TEST_F(StorageVersionMigrator, ACRDsObjectsAreRewrittenAtTheNewStorageVersion) {
  const std::string group = "svm.e2e.kcm.example.com", crd = "widgets." + group;
  kubectl({"delete", "crd", crd, "--ignore-not-found", "--wait=true"});
  auto crdJson = [&](bool v2Storage) {
    auto version = [](const std::string& v, bool storage) {
      return R"({"name":")" + v + R"(","served":true,"storage":)" + (storage ? "true" : "false") +
             R"(,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}})";
    };
    return R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":")" + crd +
           R"("},"spec":{"group":")" + group + R"(","scope":"Namespaced","names":{"plural":"widgets","singular":"widget",)"
           R"("kind":"Widget","listKind":"WidgetList"},"versions":[)" + version("v1", !v2Storage) + "," +
           version("v2", v2Storage) + "]}}";
  };
  apply(crdJson(false));
  ASSERT_TRUE(waitFor([&] { return kubectl({"get", crd, "-n", ns()}).ok(); }, 60s));
  std::map<std::string, std::string> before;
  for (int i = 0; i < 3; ++i) {
    const std::string w = "w" + std::to_string(i);
    apply(R"({"apiVersion":")" + group + R"(/v1","kind":"Widget","metadata":{"name":")" + w + R"(","namespace":")" +
          ns() + R"("},"size":)" + std::to_string(i) + "}");
    before[w] = get(crd, w, ".metadata.resourceVersion", ns());
  }
  apply(crdJson(true));
  ASSERT_TRUE(waitFor([&] { return get("crd", crd, ".status.storedVersions") == R"(["v1","v2"])"; }, 30s))
      << get("crd", crd, ".status.storedVersions");

  const std::string name = "widgets-" + ns();
  svm(name, group, "widgets");
  EXPECT_TRUE(waitFor([&] { return cond(name, "Succeeded", "status") == "True"; }, 240s))
      << get("storageversionmigration", name, ".status");
  for (const auto& [w, rv] : before)
    EXPECT_NE(get(crd, w, ".metadata.resourceVersion", ns()), rv) << w << " was not written again";
  EXPECT_TRUE(waitFor([&] { return get("crd", crd, ".status.storedVersions") == R"(["v2"])"; }, 30s))
      << get("crd", crd, ".status");
  const std::string crdCond = ".status.conditions[?(@.type==\"StorageMigrating\")].";
  EXPECT_EQ(get("crd", crd, crdCond + "status"), "False");
  EXPECT_EQ(get("crd", crd, crdCond + "reason"), "MigrationSucceeded");
  EXPECT_EQ(get("crd", crd, crdCond + "message"),
            "The migration has succeeded and the stored versions have been updated");
  kubectl({"delete", "storageversionmigration", name, "--wait=false"});
  kubectl({"delete", "crd", crd, "--wait=false"});
}

TEST_F(StorageVersionMigrator, AResourceNobodyServesFailsAfterItsMinute) {
  const std::string name = "missing-" + ns();
  svm(name, "nothere.kcm.example.com", "gadgets");
  EXPECT_TRUE(waitFor([&] { return cond(name, "Running", "status") == "True"; }, 30s))
      << get("storageversionmigration", name, ".status");
  EXPECT_TRUE(waitFor([&] { return cond(name, "Failed", "status") == "True"; }, 150s))
      << get("storageversionmigration", name, ".status");
  EXPECT_EQ(cond(name, "Failed", "reason"), "StorageVersionMigrationFailed");
  EXPECT_EQ(cond(name, "Failed", "message"), "resource does not exist in discovery");
  EXPECT_TRUE(waitFor([&] { return cond(name, "Running", "status") == "False"; }, 30s));
  kubectl({"delete", "storageversionmigration", name, "--wait=false"});
}

}  // namespace
}  // namespace kcm::e2e
