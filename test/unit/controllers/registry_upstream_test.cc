// Our controller table against upstream's at the pin: the names the upstream binary's --help lists for
// --controllers (test/golden/upstream-help.txt, captured from the pinned kube-controller-manager), the
// disabled-by-default ones, and that every one of them has an init function here (registering fails otherwise).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "controllers/register.h"
#include "controllers/registry.h"

namespace kcm::controllers {
namespace {

std::set<std::string> listAfter(const std::string& help, const std::string& label) {
  const auto at = help.find(label);
  if (at == std::string::npos) return {};
  const auto end = help.find_first_of("\n(", at);
  std::stringstream names(help.substr(at + label.size(), end - at - label.size()));
  std::set<std::string> out;
  for (std::string n; std::getline(names, n, ',');) {
    n.erase(0, n.find_first_not_of(' '));
    n.erase(n.find_last_not_of(' ') + 1);
    if (!n.empty()) out.insert(n);
  }
  return out;
}

TEST(RegistryUpstream, EveryUpstreamControllerIsInOurTableWithItsDefaultAndInit) {
  std::ifstream f(KCM_TESTDATA_DIR "/../golden/upstream-help.txt");
  ASSERT_TRUE(f.good());
  const std::string help((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto all = listAfter(help, "All controllers: ");
  const auto disabled = listAfter(help, "Disabled-by-default controllers: ");
  ASSERT_EQ(all.size(), 49u);
  ASSERT_EQ(disabled, (std::set<std::string>{"bootstrap-signer-controller", "selinux-warning-controller",
                                             "token-cleaner-controller"}));

  ASSERT_TRUE(registerControllerInitFuncs().ok());
  std::set<std::string> ours, ourDisabled, notImplemented;
  for (const auto& d : controllerDescriptors()) {
    ours.insert(d.name);
    if (d.disabledByDefault) ourDisabled.insert(d.name);
    if (!d.init) notImplemented.insert(d.name);
    for (const auto& a : d.aliases) EXPECT_EQ(canonicalName(a), d.name) << a;
    EXPECT_EQ(canonicalName(d.name), d.name);
  }
  EXPECT_EQ(ours, all);
  EXPECT_EQ(ourDisabled, disabled);
  EXPECT_TRUE(notImplemented.empty()) << *notImplemented.begin();
  // Old names kubeadm and operators still pass.
  EXPECT_EQ(canonicalName("bootstrapsigner"), "bootstrap-signer-controller");
  EXPECT_EQ(canonicalName("tokencleaner"), "token-cleaner-controller");
  EXPECT_EQ(canonicalName("resource-claim-controller"), "resourceclaim-controller");
  EXPECT_EQ(canonicalName("svm"), "storage-version-migrator-controller");
  EXPECT_FALSE(canonicalName("service-lb-controller").has_value());
  // upstream's requiredFeatureGates, in its order, where a controller has more than one.
  for (const auto& d : controllerDescriptors()) {
    if (d.name == "storageversion-garbage-collector-controller") {
      EXPECT_EQ(d.requiredFeatureGates, (std::vector<std::string>{"APIServerIdentity", "StorageVersionAPI"}));
    } else if (d.name == "device-taint-eviction-controller") {
      EXPECT_EQ(d.requiredFeatureGates, (std::vector<std::string>{"DynamicResourceAllocation", "DRADeviceTaints"}));
    } else if (d.name == "resourceclaim-controller") {
      EXPECT_EQ(d.requiredFeatureGates, std::vector<std::string>{"DynamicResourceAllocation"});
    }
  }  // the cloud loops left upstream's registry
}

}  // namespace
}  // namespace kcm::controllers
