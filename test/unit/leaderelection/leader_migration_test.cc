// Leader migration configuration and filter: upstream's config_test.go and migrator_test.go cases, and the error
// texts upstream's kube-controller-manager v1.37.2 prints for the same files.
#include "leaderelection/leader_migration.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include <unistd.h>

namespace kcm::leaderelection {
namespace {

std::string header(const std::string& version = "v1alpha1") {
  return "apiVersion: controllermanager.config.k8s.io/" + version + "\nkind: LeaderMigrationConfiguration\n";
}

TEST(LeaderMigrationConfig, EmptyAndWrongTypeAreErrors) {
  auto empty = DecodeLeaderMigrationConfiguration("");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "Object 'Kind' is missing in ''");
  auto kubelet = DecodeLeaderMigrationConfiguration("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n");
  ASSERT_FALSE(kubelet.ok());
  EXPECT_EQ(kubelet.status().message(),
            "no kind \"KubeletConfiguration\" is registered for version \"kubelet.config.k8s.io/v1beta1\" in scheme "
            "\"pkg/runtime/scheme.go:111\"");
  auto noVersion = DecodeLeaderMigrationConfiguration("kind: LeaderMigrationConfiguration\n");
  ASSERT_FALSE(noVersion.ok());
  EXPECT_EQ(noVersion.status().message(), "Object 'apiVersion' is missing in 'kind: LeaderMigrationConfiguration\n'");
  auto v2 = DecodeLeaderMigrationConfiguration(header("v2") + "leaderName: x\n");
  ASSERT_FALSE(v2.ok());
  EXPECT_NE(v2.status().message().find("for version \"controllermanager.config.k8s.io/v2\""), std::string::npos);
  auto broken = DecodeLeaderMigrationConfiguration("kind: [unclosed\n");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().message().rfind("yaml: ", 0), 0u) << broken.status().message();
}

TEST(LeaderMigrationConfig, BasicEndpointsAndLeaders) {
  auto basic = DecodeLeaderMigrationConfiguration(header() +
                                                  "leaderName: migration-120-to-121\nresourceLock: leases\n"
                                                  "controllerLeaders: []\n");
  ASSERT_TRUE(basic.ok()) << basic.status().message();
  EXPECT_EQ(basic->leaderName, "migration-120-to-121");
  EXPECT_EQ(basic->resourceLock, "leases");
  EXPECT_TRUE(basic->controllerLeaders.empty());

  auto leaders = DecodeLeaderMigrationConfiguration(header("v1beta1") +
                                                    "leaderName: migration-120-to-121\nresourceLock: endpoints\n"
                                                    "controllerLeaders: \n"
                                                    "  - name: route-controller\n    component: kube-controller-manager\n"
                                                    "  - name: service-controller\n    component: kube-controller-manager\n");
  ASSERT_TRUE(leaders.ok()) << leaders.status().message();
  EXPECT_EQ(leaders->resourceLock, "endpoints");
  ASSERT_EQ(leaders->controllerLeaders.size(), 2u);
  EXPECT_EQ(leaders->controllerLeaders[1].name, "service-controller");
  EXPECT_EQ(leaders->controllerLeaders[1].component, "kube-controller-manager");

  // JSON is YAML.
  auto json = DecodeLeaderMigrationConfiguration(
      R"({"apiVersion":"controllermanager.config.k8s.io/v1alpha1","kind":"LeaderMigrationConfiguration",)"
      R"("leaderName":"m","resourceLock":"leases","controllerLeaders":[{"name":"a","component":"*"}]})");
  ASSERT_TRUE(json.ok()) << json.status().message();
  EXPECT_EQ(json->controllerLeaders.at(0).component, "*");
}

TEST(LeaderMigrationConfig, V1HasNoResourceLockAndMeansLeases) {
  auto v1 = DecodeLeaderMigrationConfiguration(header("v1") + "leaderName: x\n");
  ASSERT_TRUE(v1.ok()) << v1.status().message();
  EXPECT_EQ(v1->resourceLock, "leases");
  auto withLock = DecodeLeaderMigrationConfiguration(header("v1") + "leaderName: x\nresourceLock: leases\n");
  ASSERT_FALSE(withLock.ok());
  EXPECT_EQ(withLock.status().message(), "strict decoding error: unknown field \"resourceLock\"");
}

TEST(LeaderMigrationConfig, StrictDecodingAndTypeErrors) {
  auto unknown = DecodeLeaderMigrationConfiguration(header() + "leaderName: m\nresourceLock: endpoints\nfoo: bar\n"
                                                               "controllerLeaders:\n- name: a\n  bar: 1\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(),
            "strict decoding error: unknown field \"foo\", unknown field \"controllerLeaders[0].bar\"");
  auto dup = DecodeLeaderMigrationConfiguration(header("v1beta1") +
                                                "leaderName: x\nresourceLock: endpoints\nresourceLock: endpoints1\nfoo: 1\n");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().message(),
            "strict decoding error: yaml: unmarshal errors:\n  line 5: key \"resourceLock\" already set in map, "
            "unknown field \"foo\"");
  auto number = DecodeLeaderMigrationConfiguration(header("v1beta1") +
                                                   "leaderName: x\ncontrollerLeaders:\n- name: a\n  foo: b\n  component: 3\n");
  ASSERT_FALSE(number.ok());
  EXPECT_EQ(number.status().message(),
            "json: cannot unmarshal number into Go struct field ControllerLeaderConfiguration.controllerLeaders.component "
            "of type string");
  auto yes = DecodeLeaderMigrationConfiguration(header() + "leaderName: yes\n");
  ASSERT_FALSE(yes.ok());
  EXPECT_EQ(yes.status().message(),
            "json: cannot unmarshal bool into Go struct field LeaderMigrationConfiguration.leaderName of type string");
  auto quoted = DecodeLeaderMigrationConfiguration(header() + "leaderName: \"yes\"\nresourceLock: leases\n");
  ASSERT_TRUE(quoted.ok()) << quoted.status().message();
  EXPECT_EQ(quoted->leaderName, "yes");
}

TEST(LeaderMigrationConfig, ValidationMessages) {
  EXPECT_TRUE(ValidateLeaderMigrationConfiguration(DefaultLeaderMigrationConfiguration()).empty());
  LeaderMigrationConfiguration bad;
  bad.resourceLock = "foo";
  bad.controllerLeaders = {{"a", ""}, {"", "b"}};
  auto errs = ValidateLeaderMigrationConfiguration(bad);
  ASSERT_EQ(errs.size(), 4u);
  EXPECT_EQ(errs[0], "leaderName: Required value: leaderName must be set for LeaderMigrationConfiguration");
  EXPECT_EQ(errs[1], "resourceLock: Invalid value: \"foo\": resource Lock must be one of 'leases' or 'endpoints'");
  EXPECT_EQ(errs[2], "controllerLeaders[0].component: Required value");
  EXPECT_EQ(errs[3], "controllerLeaders[1].name: Required value");
  LeaderMigrationConfiguration endpoints{"m", "endpoints", {}};
  EXPECT_TRUE(ValidateLeaderMigrationConfiguration(endpoints).empty());  // valid here, refused when the lock is made
}

TEST(LeaderMigrationConfig, LoadFromFileAsApplyTo) {
  auto def = LoadLeaderMigrationConfiguration("");
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->leaderName, "cloud-provider-extraction-migration");
  EXPECT_EQ(def->resourceLock, "leases");
  ASSERT_EQ(def->controllerLeaders.size(), 3u);
  EXPECT_EQ(def->controllerLeaders[2].name, "cloud-node-lifecycle-controller");
  EXPECT_EQ(def->controllerLeaders[2].component, "*");

  auto missing = LoadLeaderMigrationConfiguration("/nonexistent/lm.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "unable to read leader migration configuration from \"/nonexistent/lm.yaml\": open /nonexistent/lm.yaml: "
            "no such file or directory");

  char path[] = "/tmp/lm-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << header() << "leaderName: \"\"\nresourceLock: foo\ncontrollerLeaders:\n- name: a\n- component: b\n";
  auto invalid = LoadLeaderMigrationConfiguration(path);
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.status().message(),
            "failed to parse leader migration configuration: [leaderName: Required value: leaderName must be set for "
            "LeaderMigrationConfiguration resourceLock: Invalid value: \"foo\": resource Lock must be one of 'leases' "
            "or 'endpoints' controllerLeaders[0].component: Required value controllerLeaders[1].name: Required value]");
  std::ofstream(path) << header() << "leaderName: m\nresourceLock: leases\ncontrollerLeaders:\n"
                                     "- name: deployment-controller\n  component: kube-controller-manager\n";
  auto good = LoadLeaderMigrationConfiguration(path);
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ(good->controllerLeaders.at(0).name, "deployment-controller");
  std::remove(path);
}

// upstream's migrator_test.go: listed controllers run under the migration lock when their component is ours or
// "*", are left alone when it is another's; unlisted ones run under the main lock.
TEST(LeaderMigrator, FilterFunc) {
  LeaderMigrationConfiguration fromKcm{"m", "leases",
                                       {{"route-controller", "kube-controller-manager"},
                                        {"service-controller", "kube-controller-manager"},
                                        {"cloud-node-lifecycle-controller", "kube-controller-manager"}}};
  LeaderMigrator kcm(fromKcm, "kube-controller-manager"), ccm(fromKcm, "cloud-controller-manager");
  EXPECT_EQ(kcm.FilterFunc("route-controller"), FilterResult::kMigrated);
  EXPECT_EQ(kcm.FilterFunc("deployment-controller"), FilterResult::kNonMigrated);
  EXPECT_EQ(ccm.FilterFunc("service-controller"), FilterResult::kUnowned);
  EXPECT_EQ(ccm.FilterFunc("cloud-node-controller"), FilterResult::kNonMigrated);

  LeaderMigrator wildcard(DefaultLeaderMigrationConfiguration(), "cloud-controller-manager");
  EXPECT_EQ(wildcard.FilterFunc("route-controller"), FilterResult::kMigrated);
  EXPECT_EQ(wildcard.FilterFunc("cloud-node-lifecycle-controller"), FilterResult::kMigrated);
  EXPECT_EQ(wildcard.FilterFunc("node-ipam-controller"), FilterResult::kNonMigrated);
}

}  // namespace
}  // namespace kcm::leaderelection
