// Typed options: the generated structs agree with the flag table's defaults, parsed values land in the right
// typed fields, validation aggregates upstream's errors, /configz and Go duration printing, and the serving TLS
// options (--tls-cipher-suites, --tls-sni-cert-key).
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "healthz/tls_options.h"
#include "options/options.h"
#include "options/typed_options.h"
#include "options/validation.h"

namespace kcm::options {
namespace {

using namespace std::chrono_literals;

KubeControllerManagerOptions parse(const std::vector<std::string>& args, std::vector<std::string>* errs = nullptr) {
  auto cl = parseCommandLine(args);
  EXPECT_TRUE(cl.ok()) << cl.status().toString();
  KubeControllerManagerOptions o;
  auto e = fromFlags(cl->flags, o);
  if (errs) *errs = e;
  else EXPECT_TRUE(e.empty()) << e.front();
  return o;
}

TEST(TypedOptions, StructDefaultsAreTheFlagTableDefaults) {
  // Every generated initializer equals what the parser gives for an empty command line.
  EXPECT_TRUE(parse({}) == KubeControllerManagerOptions{});
  KubeControllerManagerOptions d;
  EXPECT_EQ(d.deploymentController.concurrentDeploymentSyncs, 5);
  EXPECT_EQ(d.garbageCollectorController.concurrentGcSyncs, 20);
  EXPECT_EQ(d.generic.minResyncPeriod, 12h);
  EXPECT_EQ(d.generic.controllerShutdownTimeout, 10s);
  EXPECT_EQ(d.generic.controllers, std::vector<std::string>{"*"});
  EXPECT_TRUE(d.generic.leaderElect);
  EXPECT_FLOAT_EQ(d.nodeLifecycleController.nodeEvictionRate, 0.1f);
  EXPECT_EQ(d.secureServing.securePort, 10257);
}

TEST(TypedOptions, ParsedValuesLandInTypedFields) {
  auto o = parse({"--concurrent-deployment-syncs=7", "--node-monitor-grace-period=40s", "--controllers=a,-b",
                  "--controllers=c", "--tls-curve-preferences=23,24", "--feature-gates=A=true",
                  "--feature-gates=B=false", "--kube-api-qps=50.5", "--leader-elect=false",
                  "--tls-sni-cert-key=a.crt,a.key:x.com", "--tls-sni-cert-key=b.crt,b.key"});
  EXPECT_EQ(o.deploymentController.concurrentDeploymentSyncs, 7);
  EXPECT_EQ(o.nodeLifecycleController.nodeMonitorGracePeriod, 40s);
  EXPECT_EQ(o.generic.controllers, (std::vector<std::string>{"a", "-b", "c"}));
  EXPECT_EQ(o.secureServing.tlsCurvePreferences, (std::vector<int32_t>{23, 24}));
  EXPECT_EQ(o.generic.featureGates, (std::vector<std::string>{"A=true", "B=false"}));
  EXPECT_FLOAT_EQ(o.generic.kubeApiQps, 50.5f);
  EXPECT_FALSE(o.generic.leaderElect);
  EXPECT_EQ(o.secureServing.tlsSniCertKey, (std::vector<std::string>{"a.crt,a.key:x.com", "b.crt,b.key"}));
}

TEST(TypedOptions, ShorthandWithEqualsAsPflagReadsIt) {
  EXPECT_EQ(parse({"-v=4"}).logs.v, 4);
  EXPECT_EQ(parse({"-v", "3"}).logs.v, 3);
  EXPECT_EQ(parse({"--v=5"}).logs.v, 5);
}

// pflag: a bare boolean is true wherever it stands, and what follows it is not its value.
TEST(TypedOptions, ABareBooleanFlagIsTrueAnywhereOnTheLine) {
  auto o = parse({"--enable-hostpath-provisioner", "--pvclaimbinder-sync-period=2s", "--use-service-account-credentials",
                  "--leader-elect=false"});
  EXPECT_TRUE(o.persistentvolumeBinderController.enableHostpathProvisioner);
  EXPECT_TRUE(o.generic.useServiceAccountCredentials);
  EXPECT_EQ(o.persistentvolumeBinderController.pvclaimbinderSyncPeriod, 2s);
  auto first = parse({"--enable-dynamic-provisioning=false", "--enable-hostpath-provisioner", "--v=2"});
  EXPECT_FALSE(first.persistentvolumeBinderController.enableDynamicProvisioning);
  EXPECT_TRUE(first.persistentvolumeBinderController.enableHostpathProvisioner);
  EXPECT_EQ(first.logs.v, 2);
}

// Removed with the in-tree volume plugins in v1.31; an old manifest still carries them.
TEST(TypedOptions, RemovedVolumeHostFlagsAreAcceptedWithAWarning) {
  auto cl = parseCommandLine({"--volume-host-cidr-denylist=127.0.0.1/28,feed::/16", "--volume-host-allow-local-loopback",
                              "--enable-hostpath-provisioner"});
  ASSERT_TRUE(cl.ok()) << cl.status().toString();
  ASSERT_EQ(cl->warnings.size(), 2u);
  EXPECT_NE(cl->warnings[0].find("--volume-host"), std::string::npos) << cl->warnings[0];
  KubeControllerManagerOptions o;
  EXPECT_TRUE(fromFlags(cl->flags, o).empty());
  EXPECT_TRUE(o.persistentvolumeBinderController.enableHostpathProvisioner);
}

TEST(TypedOptions, RemovedFlagFeedsItsSuccessor) {
  auto o = parse({"--experimental-cluster-signing-duration=876000h", "--port=0"});
  EXPECT_EQ(o.certificatesigningrequestSigningController.clusterSigningDuration, 876000h);
}

TEST(TypedOptions, ValidationAggregatesUpstreamErrors) {
  EXPECT_TRUE(validate(KubeControllerManagerOptions{}).empty());
  KubeControllerManagerOptions o;
  o.generic.leaderElectResourceLock = "endpoints";
  o.jobController.concurrentJobSyncs = 0;
  o.endpointsliceController.maxEndpointsPerSlice = 1001;
  o.secureServing.securePort = 70000;
  o.generic.cloudProvider = "aws";
  o.nodeIpamController.serviceClusterIpRange = "10.0.0.0/24,fd00::/108,10.1.0.0/24";
  auto errs = validate(o, {"\"foo\" is not in the list of known controllers"});
  const std::vector<std::string> want = {
      "resourceLock value must be \"leases\"",
      "\"foo\" is not in the list of known controllers",
      "max-endpoints-per-slice must not be more than 1000, but got 1001",
      "concurrent-job-syncs must be greater than 0, but got 0",
      "--service-cluster-ip-range can not contain more than two entries",
      // upstream's text for a port above 65535 (SecureServingOptions.Validate's operator precedence); checked
      // against the upstream binary with --secure-port=99999
      "--secure-port 70000 must be between 1 and 65535, inclusive. It cannot be turned off with 0",
      "cloud provider \"aws\" was specified, but built-in cloud providers are disabled. Please set "
      "--cloud-provider=external and migrate to an external cloud provider",
  };
  EXPECT_EQ(errs, want);
}

TEST(TypedOptions, ANegativeSecurePortGetsTheZeroTurnsItOffText) {
  KubeControllerManagerOptions o;
  o.secureServing.securePort = -1;
  EXPECT_EQ(validate(o), std::vector<std::string>{
                             "--secure-port -1 must be between 0 and 65535, inclusive. 0 for turning off secure port"});
}

TEST(TypedOptions, BadValuesNameTheFlag) {
  auto cl = parseCommandLine({"--tls-curve-preferences=23,x"});
  if (!cl.ok()) {  // rejected by the parser already
    EXPECT_NE(cl.status().message().find("tls-curve-preferences"), std::string::npos);
    return;
  }
  KubeControllerManagerOptions o;
  auto errs = fromFlags(cl->flags, o);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].find("--tls-curve-preferences"), std::string::npos) << errs[0];
}

TEST(TypedOptions, DurationsPrintAsGoDoes) {
  EXPECT_EQ(formatDuration(0s), "0s");
  EXPECT_EQ(formatDuration(1500ms), "1.5s");
  EXPECT_EQ(formatDuration(300ms), "300ms");
  EXPECT_EQ(formatDuration(1h + 2min + 3s), "1h2m3s");
  EXPECT_EQ(formatDuration(12h), "12h0m0s");
  EXPECT_EQ(formatDuration(5min), "5m0s");
  EXPECT_EQ(formatDuration(876000h), "876000h0m0s");
  EXPECT_EQ(formatDuration(std::chrono::nanoseconds(1500)), "1.5\u00b5s");
  EXPECT_EQ(formatDuration(std::chrono::nanoseconds(42)), "42ns");
}

TEST(TypedOptions, ConfigzIsTypedJsonByFlagSet) {
  auto o = parse({"--concurrent-deployment-syncs=9"});
  auto j = nlohmann::json::parse(toConfigz(o));
  EXPECT_EQ(j["kind"], "KubeControllerManagerConfiguration");
  EXPECT_EQ(j["DeploymentController"]["ConcurrentDeploymentSyncs"], 9);
  EXPECT_EQ(j["Generic"]["LeaderElect"], true);
  EXPECT_EQ(j["Generic"]["MinResyncPeriod"], "12h0m0s");
  EXPECT_EQ(j["Generic"]["Controllers"], nlohmann::json::array({"*"}));
  EXPECT_EQ(j["NodeLifecycleController"]["NodeEvictionRate"], 0.1);
}

TEST(TypedOptions, NotImplementedFlagsAreTheOnesNoCodeReads) {
  const auto& ni = notImplementedFlags();
  auto has = [&](const char* n) {
    return std::any_of(ni.begin(), ni.end(), [&](const char* x) { return std::string(x) == n; });
  };
  EXPECT_TRUE(has("flex-volume-plugin-dir"));
  EXPECT_FALSE(has("concurrent-device-taint-eviction-syncs"));
  EXPECT_FALSE(has("concurrent-validating-admission-policy-status-syncs"));
  EXPECT_FALSE(has("concurrent-resourceclaim-syncs"));
  EXPECT_FALSE(has("concurrent-ephemeralvolume-syncs"));
  EXPECT_FALSE(has("concurrent-statefulset-syncs"));
  EXPECT_FALSE(has("concurrent-daemonset-syncs"));
  EXPECT_FALSE(has("concurrent-resource-quota-syncs"));
  EXPECT_FALSE(has("resource-quota-sync-period"));
  EXPECT_FALSE(has("concurrent-job-syncs"));
  EXPECT_FALSE(has("concurrent-cron-job-syncs"));
  EXPECT_FALSE(has("horizontal-pod-autoscaler-sync-period"));
  EXPECT_FALSE(has("horizontal-pod-autoscaler-tolerance"));
  EXPECT_FALSE(has("enable-dynamic-provisioning"));
  EXPECT_FALSE(has("enable-hostpath-provisioner"));
  EXPECT_FALSE(has("pvclaimbinder-sync-period"));
  EXPECT_TRUE(has("pv-recycler-pod-template-filepath-nfs"));  // recycler pods are not implemented
  EXPECT_FALSE(has("concurrent-deployment-syncs"));
  EXPECT_FALSE(has("controller-shutdown-timeout"));
  EXPECT_FALSE(has("tls-cipher-suites"));
  EXPECT_FALSE(has("tls-sni-cert-key"));
  EXPECT_FALSE(has("cidr-allocator-type"));  // only its one legal value passes validation
}

// ---- serving TLS options

TEST(TlsOptions, CipherSuitesMapToOpenSslNames) {
  auto l = healthz::openSslCipherList({"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256",
                                       "TLS_RSA_WITH_AES_256_CBC_SHA"});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(*l, "ECDHE-RSA-AES128-GCM-SHA256:AES256-SHA");  // TLS 1.3 suites are not configurable, as in Go
  auto bad = healthz::openSslCipherList({"TLS_NOPE"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("Cipher suite TLS_NOPE not supported or doesn't exist"), std::string::npos);
  EXPECT_EQ(*healthz::openSslCipherList({}), "");
}

// A self-signed EC certificate with the given CN and DNS SANs, written to dir/name.{crt,key}.
void writeCert(const std::string& dir, const std::string& name, const std::string& cn,
               const std::vector<std::string>& dns) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), 0);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key);
  X509_NAME* n = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x, n);
  if (!dns.empty()) {
    std::string san;
    for (const auto& d : dns) san += (san.empty() ? "DNS:" : ",DNS:") + d;
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, nullptr, NID_subject_alt_name, san.c_str());
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(x, key, EVP_sha256());
  FILE* f = std::fopen((dir + "/" + name + ".crt").c_str(), "w");
  PEM_write_X509(f, x);
  std::fclose(f);
  f = std::fopen((dir + "/" + name + ".key").c_str(), "w");
  PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
  X509_free(x);
  EVP_PKEY_free(key);
}

TEST(TlsOptions, SniCertificatesSelectExactThenWildcard) {
  std::string dir = std::filesystem::temp_directory_path() / ("kcm-sni-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  writeCert(dir, "a", "a.example", {"a.example", "*.wild.example"});
  writeCert(dir, "b", "b.example", {});
  auto certs = healthz::loadSniCertificates({dir + "/a.crt," + dir + "/a.key",
                                             dir + "/b.crt," + dir + "/b.key:explicit.example,*.b.example"});
  ASSERT_TRUE(certs.ok()) << certs.status().toString();
  ASSERT_EQ(certs->size(), 2u);
  EXPECT_EQ((*certs)[0].names, (std::vector<std::string>{"a.example", "*.wild.example"}));  // from the SANs
  EXPECT_EQ((*certs)[1].names, (std::vector<std::string>{"explicit.example", "*.b.example"}));
  EXPECT_EQ(healthz::selectSniCertificate(*certs, "a.example"), &(*certs)[0]);
  EXPECT_EQ(healthz::selectSniCertificate(*certs, "x.wild.example"), &(*certs)[0]);
  EXPECT_EQ(healthz::selectSniCertificate(*certs, "explicit.example"), &(*certs)[1]);
  EXPECT_EQ(healthz::selectSniCertificate(*certs, "c.b.example"), &(*certs)[1]);
  EXPECT_EQ(healthz::selectSniCertificate(*certs, "x.y.b.example"), nullptr);  // one level only
  EXPECT_EQ(healthz::selectSniCertificate(*certs, "other.example"), nullptr);
  // Mismatched pair, missing file, malformed entry: errors name the culprit.
  auto mismatch = healthz::loadSniCertificates({dir + "/a.crt," + dir + "/b.key"});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("do not match"), std::string::npos);
  auto missing = healthz::loadSniCertificates({dir + "/none.crt," + dir + "/a.key"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(dir + "/none.crt"), std::string::npos);
  auto malformed = healthz::loadSniCertificates({"only-one-file"});
  ASSERT_FALSE(malformed.ok());
  EXPECT_NE(malformed.status().message().find("only-one-file"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kcm::options
