// selinux-warning-controller: the translator's label comparison (upstream translator/selinux_translator_test.go),
// the volume cache's conflicts (cache/volumecache_test.go) and the controller's sync
// (selinux_warning_controller_test.go's cases, on CSI volumes) with events through the fake apiserver and the
// conflict metric as /metrics renders it.
#include <gtest/gtest.h>

#include <algorithm>

#include "api/gen/core_v1_json.h"
#include "api/gen/storage_v1_json.h"
#include "base/metrics.h"
#include "client/events.h"
#include "controllers/volume/common/csi_translation.h"
#include "controllers/volume/selinuxwarning/selinux_warning_controller.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::volume::selinuxwarning {
namespace {

using testing::FakeApiServer;
using namespace std::chrono_literals;

api::core::v1::SELinuxOptions opts(std::string user, std::string role, std::string type, std::string level) {
  api::core::v1::SELinuxOptions o;
  o.user = std::move(user), o.role = std::move(role), o.type = std::move(type), o.level = std::move(level);
  return o;
}

TEST(SELinuxTranslator, OptionsToFileLabel) {
  EXPECT_EQ(SELinuxOptionsToFileLabel(nullptr), "") << "nil options";
  auto all = opts("system_u", "system_r", "container_t", "s0:c1,c2");
  EXPECT_EQ(SELinuxOptionsToFileLabel(&all), "system_u:system_r:container_t:s0:c1,c2");
  auto some = opts("", "system_r", "", "s0");
  EXPECT_EQ(SELinuxOptionsToFileLabel(&some), ":system_r::s0");
  auto level = opts("", "", "", "s0:c1");
  EXPECT_EQ(SELinuxOptionsToFileLabel(&level), ":::s0:c1");
  auto none = opts("", "", "", "");
  EXPECT_EQ(SELinuxOptionsToFileLabel(&none), "") << "no fields set";
}

TEST(SELinuxTranslator, ConflictsAsUpstream) {
  struct Case {
    const char *a, *b;
    bool conflict;
  } cases[] = {
      {"", "", false},
      {"", "system_u:system_r:container_t", false},
      {"", "system_u:system_r:container_t:s0:c1,c2", true},
      {":::", "system_u:system_r:container_t", false},
      {"system_u:system_r:container_t:", "system_u:system_r", false},
      {"system_u:system_r:conflict_t:", "system_u:system_r:container_t", true},
      {"::conflict_t", "::container_t", true},
      {"system_u::container_t", ":system_r::", false},
      {":::s0:c1,c2", "", true},
  };
  for (const auto& c : cases) EXPECT_EQ(Conflicts(c.a, c.b), c.conflict) << c.a << " vs " << c.b;
  EXPECT_EQ(ParseSELinuxLabel("a:b:c:s0:c1,c2")[3], "s0:c1,c2") << "the level keeps its colons";
}

TEST(SELinuxVolumeCache, ConflictsAreFoundReplacedAndDropped) {
  VolumeCache cache;
  const ObjectName p1{"ns", "p1"}, p2{"ns", "p2"}, p3{"ns", "p3"};
  EXPECT_TRUE(cache.AddVolume("vol1", p1, "system_u:system_r:label1", "MountOption", "").empty())
      << "new volume in empty cache";
  EXPECT_TRUE(cache.AddVolume("vol1", p2, "system_u:system_r:label1", "MountOption", "").empty())
      << "same policy and label";
  EXPECT_TRUE(cache.AddVolume("vol1", p3, "::label1:", "MountOption", "").empty()) << "incomparable label";
  auto c = cache.AddVolume("vol1", p3, "system_u:system_r:label2", "MountOption", "");
  ASSERT_EQ(c.size(), 4u) << "a conflicting label: two per pod pair";
  EXPECT_EQ(c[0].Pod, p3);
  EXPECT_EQ(c[0].EventReason, "SELinuxLabelConflict");
  EXPECT_EQ(cache.GetConflicts().size(), 4u);
  // The pod replaced with a conflicting policy instead: its label conflicts are gone, the policy ones are new.
  c = cache.AddVolume("vol1", p3, "system_u:system_r:label1", "Recursive", "");
  ASSERT_EQ(c.size(), 4u);
  for (const auto& x : c) EXPECT_EQ(x.PropertyName, "SELinuxChangePolicy");
  EXPECT_EQ(cache.GetConflicts().size(), 4u);
  cache.DeletePod(p3);
  EXPECT_TRUE(cache.GetConflicts().empty()) << "deleting one of the conflicting pods clears its conflicts";
  cache.DeletePod(p3);  // already deleted: no-op
  EXPECT_EQ(cache.entries().size(), 2u);
  cache.DeletePod(p1), cache.DeletePod(p2);
  EXPECT_TRUE(cache.entries().empty());
}

TEST(SELinuxVolumeCache, EventMessagesNameThePodOnlyInTheSameNamespace) {
  Conflict same{"SELinuxLabel", "SELinuxLabelConflict", {"ns1", "pod1"}, ":::s0:c1,c2", {"ns1", "pod2"}, ":::s0:c98,c99"};
  EXPECT_EQ(same.EventMessage(),
            "SELinuxLabel \":::s0:c1,c2\" conflicts with pod pod2 that uses the same volume as this pod with "
            "SELinuxLabel \":::s0:c98,c99\". If both pods land on the same node, only one of them may access the "
            "volume.");
  Conflict other = same;
  other.OtherPod.ns = "ns2";
  EXPECT_EQ(other.EventMessage(),
            "SELinuxLabel\":::s0:c1,c2\" conflicts with another pod that uses the same volume as this pod with a "
            "different SELinuxLabel. If both pods land on the same node, only one of them may access the volume.");
}

class SELinuxWarningTest : public ::testing::Test {
 protected:
  static constexpr const char* kNS = "ns1";
  void SetUp() override { server->addStandardResources(); }

  // A pod in ns1 whose one container mounts vol1 and whose pod security context has the level (if any) and policy.
  Pod pod(const std::string& name, const std::string& level, const std::string& policy = "",
          const std::string& phase = "Running") {
    Pod p;
    p.metadata.namespace_ = kNS;
    p.metadata.name = name;
    p.metadata.uid = "uid-" + name;
    auto& c = p.spec.containers.emplace_back();
    c.name = "container1";
    c.volumeMounts.emplace_back().name = "vol1";
    auto& sc = p.spec.securityContext.emplace();
    if (!level.empty()) sc.seLinuxOptions = opts("", "", "", level);
    if (!policy.empty()) sc.seLinuxChangePolicy = policy;
    p.spec.volumes.emplace_back().name = "emptyDir1";
    p.spec.volumes.back().emptyDir.emplace();
    p.status.phase = phase;
    return p;
  }
  static Pod withPVC(Pod p, const std::string& claim) {
    auto& v = p.spec.volumes.emplace_back();
    v.name = "vol1";
    v.persistentVolumeClaim.emplace().claimName = claim;
    return p;
  }
  void addPod(const Pod& p) {
    factory.forType<Pod>().store().upsert(std::string(kNS) + "/" + p.metadata.name, std::make_shared<const Pod>(p));
  }
  void removePod(const std::string& name) { factory.forType<Pod>().store().erase(std::string(kNS) + "/" + name); }
  // pvc1 bound to the CSI volume pv1 of driver "csi.test" (or only pending, unbound).
  void boundClaim(bool bound = true) {
    PersistentVolumeClaim c;
    c.metadata.namespace_ = kNS, c.metadata.name = "pvc1", c.metadata.uid = "pvcuid";
    c.spec.accessModes = {"ReadWriteOnce"};
    if (bound) c.spec.volumeName = "pv1", c.status.phase = "Bound";
    else c.status.phase = "Pending";
    factory.forType<PersistentVolumeClaim>().store().upsert("ns1/pvc1", std::make_shared<const PersistentVolumeClaim>(c));
    PersistentVolume v;
    v.metadata.name = "pv1";
    auto& csi = v.spec.csi.emplace();
    csi.driver = "csi.test", csi.volumeHandle = "handle1";
    auto& ref = v.spec.claimRef.emplace();
    ref.kind = "PersistentVolumeClaim", ref.namespace_ = kNS, ref.name = "pvc1", ref.uid = "pvcuid";
    v.status.phase = "Bound";
    factory.forType<PersistentVolume>().store().upsert("pv1", std::make_shared<const PersistentVolume>(v));
  }
  void driver(std::optional<bool> seLinuxMount) {
    api::storage::v1::CSIDriver d;
    d.metadata.name = "csi.test";
    d.spec.seLinuxMount = seLinuxMount;
    factory.forType<CSIDriver>().store().upsert("csi.test", std::make_shared<const CSIDriver>(d));
  }
  std::vector<std::string> events() {
    broadcaster.flush();
    auto e = server->createdEvents();
    std::sort(e.begin(), e.end());
    return e;
  }
  using Entry = VolumeCache::Entry;
  Entry entry(const std::string& pod, const std::string& label, const std::string& policy,
              const std::string& volume = "kubernetes.io/csi/csi.test^handle1", const std::string& driver = "csi.test") {
    return {volume, {kNS, pod}, label, policy, driver};
  }
  std::string conflictSeries() {
    std::string out;
    auto text = metrics::Registry::global().render();
    size_t pos = 0;
    while ((pos = text.find(kConflictMetric, pos)) != std::string::npos) {
      auto end = text.find('\n', pos);
      out += text.substr(pos, end - pos) + "\n";
      pos = end;
    }
    return out;
  }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  client::EventBroadcaster broadcaster{server->client(), "", clock};
  Controller controller{broadcaster.newRecorder("selinux_warning"), factory.forType<Pod>(),
                        factory.forType<PersistentVolumeClaim>(), factory.forType<PersistentVolume>(),
                        factory.forType<CSIDriver>(), clock};
};

TEST_F(SELinuxWarningTest, APodWithoutVolumesOrWithAnUnboundClaim) {
  auto p = pod("pod1", "s0:c1,c2");
  p.spec.volumes.clear();
  p.spec.containers[0].volumeMounts.clear();
  addPod(p);
  EXPECT_TRUE(controller.sync("ns1/pod1").status.ok()) << "existing pod with no volumes";
  EXPECT_TRUE(controller.labelCache().entries().empty());

  addPod(withPVC(pod("pod1", "s0:c1,c2"), "pvc1"));
  boundClaim(false);
  auto r = controller.sync("ns1/pod1");
  ASSERT_FALSE(r.status.ok()) << "existing pod with unbound PVC";
  EXPECT_EQ(r.status.message(),
            "ns1/pod1 failed with: error processing PVC \"ns1\"/\"pvc1\": PVC ns1/pvc1 has non-bound phase "
            "(\"Pending\") or empty pvc.Spec.VolumeName (\"\")");
  EXPECT_TRUE(controller.labelCache().entries().empty());
}

TEST_F(SELinuxWarningTest, ABoundClaimIsCachedWithTheMountLabelAndPolicy) {
  boundClaim();
  driver(true);
  addPod(withPVC(pod("pod1", "s0:c1,c2"), "pvc1"));
  ASSERT_TRUE(controller.sync("ns1/pod1").status.ok());
  EXPECT_EQ(controller.labelCache().entries(), std::vector<Entry>{entry("pod1", ":::s0:c1,c2", "MountOption")});

  addPod(withPVC(pod("pod1", "s0:c1,c2", "Recursive"), "pvc1"));
  ASSERT_TRUE(controller.sync("ns1/pod1").status.ok());
  EXPECT_EQ(controller.labelCache().entries(), std::vector<Entry>{entry("pod1", "", "Recursive")})
      << "Recursive change policy: no mount label";

  addPod(withPVC(pod("pod1", ""), "pvc1"));
  ASSERT_TRUE(controller.sync("ns1/pod1").status.ok());
  EXPECT_EQ(controller.labelCache().entries(), std::vector<Entry>{entry("pod1", "", "Recursive")})
      << "empty label implies Recursive policy";

  driver(false);
  addPod(withPVC(pod("pod1", "s0:c1,c2"), "pvc1"));
  ASSERT_TRUE(controller.sync("ns1/pod1").status.ok());
  EXPECT_EQ(controller.labelCache().entries(), std::vector<Entry>{entry("pod1", "", "Recursive")})
      << "CSIDriver.SELinuxMount disabled: the kubelet relabels recursively";
  EXPECT_TRUE(events().empty());
}

TEST_F(SELinuxWarningTest, TwoPodsWithDifferentLabelsConflictWithAnEventEachAndAMetric) {
  boundClaim();
  driver(true);
  addPod(withPVC(pod("pod1", "s0:c1,c2"), "pvc1"));
  addPod(withPVC(pod("pod2", "s0:c98,c99"), "pvc1"));
  ASSERT_TRUE(controller.sync("ns1/pod1").status.ok());
  ASSERT_TRUE(controller.sync("ns1/pod2").status.ok());
  EXPECT_EQ(events(),
            (std::vector<std::string>{
                "Normal SELinuxLabelConflict SELinuxLabel \":::s0:c1,c2\" conflicts with pod pod2 that uses the same "
                "volume as this pod with SELinuxLabel \":::s0:c98,c99\". If both pods land on the same node, only one "
                "of them may access the volume.",
                "Normal SELinuxLabelConflict SELinuxLabel \":::s0:c98,c99\" conflicts with pod pod1 that uses the "
                "same volume as this pod with SELinuxLabel \":::s0:c1,c2\". If both pods land on the same node, only "
                "one of them may access the volume."}));
  EXPECT_EQ(conflictSeries(),
            "selinux_warning_controller_selinux_volume_conflict [ALPHA] Conflict between two Pods using the same "
            "volume\n"
            "selinux_warning_controller_selinux_volume_conflict gauge\n"
            "selinux_warning_controller_selinux_volume_conflict{pod1_name=\"pod1\",pod1_namespace=\"ns1\","
            "pod1_value=\":::s0:c1,c2\",pod2_name=\"pod2\",pod2_namespace=\"ns1\",pod2_value=\":::s0:c98,c99\","
            "property=\"SELinuxLabel\"} 1\n"
            "selinux_warning_controller_selinux_volume_conflict{pod1_name=\"pod2\",pod1_namespace=\"ns1\","
            "pod1_value=\":::s0:c98,c99\",pod2_name=\"pod1\",pod2_namespace=\"ns1\",pod2_value=\":::s0:c1,c2\","
            "property=\"SELinuxLabel\"} 1\n");

  // pod2 succeeds: the kubelet unmounts its volumes, the conflict and its series go.
  addPod(withPVC(pod("pod2", "s0:c98,c99", "", "Succeeded"), "pvc1"));
  ASSERT_TRUE(controller.sync("ns1/pod2").status.ok());
  EXPECT_EQ(controller.labelCache().entries(), std::vector<Entry>{entry("pod1", ":::s0:c1,c2", "MountOption")});
  EXPECT_EQ(conflictSeries(), "") << "a family without series is not printed";
}

TEST_F(SELinuxWarningTest, APolicyConflictAndAGonePodGetsNoEvent) {
  boundClaim();
  driver(true);
  addPod(withPVC(pod("pod2", "s0:c1,c2"), "pvc1"));
  ASSERT_TRUE(controller.sync("ns1/pod2").status.ok());
  removePod("pod2");  // gone from the cache, not yet synced
  addPod(withPVC(pod("pod1", "s0:c1,c2", "Recursive"), "pvc1"));
  ASSERT_TRUE(controller.sync("ns1/pod1").status.ok());
  EXPECT_EQ(events(), (std::vector<std::string>{
                          "Normal SELinuxChangePolicyConflict SELinuxChangePolicy \"Recursive\" conflicts with pod "
                          "pod2 that uses the same volume as this pod with SELinuxChangePolicy \"MountOption\". If "
                          "both pods land on the same node, only one of them may access the volume."}))
      << "the policy conflict comes first; pod2 is gone, so the report stops there (its label conflict too: an empty "
         "label conflicts with any level)";
  ASSERT_TRUE(controller.sync("ns1/pod2").status.ok()) << "deleted pod";
  EXPECT_EQ(controller.labelCache().entries(), std::vector<Entry>{entry("pod1", "", "Recursive")});
  EXPECT_TRUE(controller.labelCache().GetConflicts().empty());
}

TEST_F(SELinuxWarningTest, AVolumeMountedWithTwoLabelsInOnePodIsAWarning) {
  boundClaim();
  driver(true);
  auto p = withPVC(pod("pod1", "s0:c1,c2"), "pvc1");
  auto& c2 = p.spec.containers.emplace_back();
  c2.name = "container2";
  c2.volumeMounts.emplace_back().name = "vol1";
  c2.securityContext.emplace().seLinuxOptions = opts("", "", "", "s0:c5");
  addPod(p);
  auto r = controller.sync("ns1/pod1");
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(), "ns1/pod1 failed with: multiple SELinux labels found: :::s0:c1,c2,:::s0:c5");
  EXPECT_EQ(events(), (std::vector<std::string>{"Warning MultipleSELinuxLabels Volume \"vol1\" is mounted twice with "
                                                "different SELinux labels inside this pod"}));
  EXPECT_TRUE(controller.labelCache().entries().empty());
}

TEST_F(SELinuxWarningTest, InlineVolumesByPlugin) {
  // iSCSI supports mount -o context: two levels conflict; hostPath does not: Recursive, no conflict.
  for (const char* name : {"pod1", "pod2"}) {
    auto p = pod(name, std::string(name) == "pod1" ? "s0:c1" : "s0:c2");
    auto& v = p.spec.volumes.emplace_back();
    v.name = "vol1";
    auto& is = v.iscsi.emplace();
    is.targetPortal = "10.0.0.1:3260", is.iqn = "iqn.2001-04.com.example:storage", is.lun = 1;
    addPod(p);
    ASSERT_TRUE(controller.sync(std::string("ns1/") + name).status.ok());
  }
  const std::string iscsi = "kubernetes.io/iscsi/10.0.0.1:3260:iqn.2001-04.com.example:storage:1";
  EXPECT_EQ(controller.labelCache().entries(),
            (std::vector<Entry>{entry("pod1", ":::s0:c1", "MountOption", iscsi, ""),
                                entry("pod2", ":::s0:c2", "MountOption", iscsi, "")}));
  EXPECT_EQ(events().size(), 2u);

  auto h = pod("pod3", "s0:c3");
  h.spec.volumes.emplace_back().name = "vol1";
  h.spec.volumes.back().hostPath.emplace().path = "/data";
  addPod(h);
  ASSERT_TRUE(controller.sync("ns1/pod3").status.ok());
  auto entries = controller.labelCache().entries();
  EXPECT_NE(std::find(entries.begin(), entries.end(), entry("pod3", "", "Recursive", "kubernetes.io/host-path//data", "")),
            entries.end());

  // An inline CSI volume has no unique name in the CSI plugin: an error, retried.
  auto c = pod("pod4", "s0:c4");
  c.spec.volumes.emplace_back().name = "vol1";
  c.spec.volumes.back().csi.emplace().driver = "csi.test";
  addPod(c);
  auto r = controller.sync("ns1/pod4");
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(),
            "ns1/pod4 failed with: failed to get unique volume name for volume \"vol1\": failed to GetVolumeName from "
            "volumePlugin for volumeSpec \"vol1\" err=kubernetes.io/csi: plugin.GetVolumeName failed to extract volume "
            "source from spec: unexpected api.CSIVolumeSource found in volume.Spec");
}

// "existing pod with inline volume and PVC": in-tree AWS EBS volumes (a PV and an inline one) are the CSI
// driver's after migration, named by the translated handle.
TEST_F(SELinuxWarningTest, MigratedInTreeVolumesCountAsTheirCSIDriversVolumes) {
  api::storage::v1::CSIDriver ebs;
  ebs.metadata.name = "ebs.csi.aws.com";
  ebs.spec.seLinuxMount = true;
  factory.forType<CSIDriver>().store().upsert("ebs.csi.aws.com", std::make_shared<const CSIDriver>(ebs));
  boundClaim();
  PersistentVolume v = *factory.forType<PersistentVolume>().store().get("pv1");
  v.spec.csi.reset();
  v.spec.awsElasticBlockStore.emplace().volumeID = "aws://us-east-1a/vol-0123";
  factory.forType<PersistentVolume>().store().upsert("pv1", std::make_shared<const PersistentVolume>(v));
  auto p = withPVC(pod("pod1", "s0:c1,c2"), "pvc1");
  auto& inl = p.spec.volumes.emplace_back();
  inl.name = "inlineVolume";
  inl.awsElasticBlockStore.emplace().volumeID = "vol-inline1";
  p.spec.containers[0].volumeMounts.emplace_back().name = "inlineVolume";
  addPod(p);
  ASSERT_TRUE(controller.sync("ns1/pod1").status.ok());
  EXPECT_EQ(controller.labelCache().entries(),
            (std::vector<Entry>{
                entry("pod1", ":::s0:c1,c2", "MountOption", "kubernetes.io/csi/ebs.csi.aws.com^vol-0123", "ebs.csi.aws.com"),
                entry("pod1", ":::s0:c1,c2", "MountOption", "kubernetes.io/csi/ebs.csi.aws.com^vol-inline1",
                      "ebs.csi.aws.com")}));

  p.spec.volumes.back().awsElasticBlockStore->volumeID = "aws://us-east-1a/not-a-volume";
  addPod(p);
  auto r = controller.sync("ns1/pod1");
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(),
            "ns1/pod1 failed with: error performing CSI migration checks and translation for PVC \"ns1\"/\"\": failed "
            "to translate in-tree pv to CSI: failed to translate Kubernetes ID to EBS Volume ID Invalid format for AWS "
            "volume (aws://us-east-1a/not-a-volume)");
}

TEST(CSITranslation, HandlesAsTheTranslatorsGiveThem) {
  using common::TranslateInTreeSpecToCSI;
  EXPECT_EQ(*common::KubernetesVolumeIDToEBSVolumeID("vol-1"), "vol-1");
  EXPECT_EQ(*common::KubernetesVolumeIDToEBSVolumeID("aws:///vol-2/"), "vol-2");
  EXPECT_FALSE(common::KubernetesVolumeIDToEBSVolumeID("aws://zone/x/vol-3").ok());
  auto pvSpec = [](PersistentVolume pv) {
    common::VolumeSpec s;
    s.pv = std::make_shared<const PersistentVolume>(std::move(pv));
    return s;
  };
  PersistentVolume gce;
  gce.metadata.name = "pd";
  gce.spec.gcePersistentDisk.emplace().pdName = "disk1";
  EXPECT_EQ(TranslateInTreeSpecToCSI(pvSpec(gce), "")->volumeHandle, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk1");
  gce.metadata.labels["topology.kubernetes.io/zone"] = "us-central1-a";
  EXPECT_EQ(TranslateInTreeSpecToCSI(pvSpec(gce), "")->volumeHandle, "projects/UNSPECIFIED/zones/us-central1-a/disks/disk1");
  gce.metadata.labels["topology.kubernetes.io/zone"] = "us-central1-a__us-central1-b";
  EXPECT_EQ(TranslateInTreeSpecToCSI(pvSpec(gce), "")->volumeHandle,
            "projects/UNSPECIFIED/regions/us-central1/disks/disk1");
  gce.metadata.labels["topology.kubernetes.io/zone"] = "us-central1-a__europe-west1-b";
  EXPECT_FALSE(TranslateInTreeSpecToCSI(pvSpec(gce), "").ok()) << "zones of two regions";

  PersistentVolume file;
  file.metadata.name = "share-pv";
  auto& af = file.spec.azureFile.emplace();
  af.secretName = "azure-storage-account-acct1-secret", af.shareName = "share";
  EXPECT_EQ(TranslateInTreeSpecToCSI(pvSpec(file), "").status().message(),
            "failed to translate in-tree pv to CSI: could not find a secret namespace in PersistentVolumeSource or "
            "ClaimRef");
  file.spec.claimRef.emplace().namespace_ = "ns1";
  file.metadata.annotations["kubernetes.io/azure-file-resource-group"] = "rg";
  auto t = TranslateInTreeSpecToCSI(pvSpec(file), "");
  EXPECT_EQ(t->driver, "file.csi.azure.com");
  EXPECT_EQ(t->volumeHandle, "rg#acct1#share#share-pv#ns1");

  api::core::v1::Volume inl;
  inl.name = "v";
  inl.azureDisk.emplace().diskURI = "/subscriptions/s/disks/d";
  inl.azureDisk->kind = "Shared";
  common::VolumeSpec s;
  s.volume = &inl;
  EXPECT_EQ(TranslateInTreeSpecToCSI(s, "ns").status().message(),
            "failed to translate in-tree pv to CSI: kind(Shared) is not supported in csi migration");
  inl.azureDisk->kind = "managed";
  EXPECT_EQ(TranslateInTreeSpecToCSI(s, "ns")->volumeHandle, "/subscriptions/s/disks/d");
}

}  // namespace
}  // namespace kcm::controllers::volume::selinuxwarning
