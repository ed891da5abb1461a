// The certificates family on the real control plane: kubeadm's node join (a kubelet client CSR sent with a
// bootstrap token, auto-approved after a SubjectAccessReview and signed by the seed's cluster CA, then used to
// authenticate as the node), upstream test/e2e/auth/certificates.go's client built from a CSR, the signer's
// Failed condition, the kube-apiserver-serving ClusterTrustBundle, the CSR cleaner's issued-and-expired rule and
// the legacy service-account token cleaner.
#include <sys/stat.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "framework/framework.h"
#include "framework/kcm_process.h"
#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

std::string readAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A private key and PKCS#10 request made with openssl, in a folder of the test's own.
struct KeyAndRequest {
  std::string dir, key, csrBase64;
};
KeyAndRequest makeRequest(const std::string& name, const std::string& subject) {
  KeyAndRequest k;
  k.dir = Cluster::get().dir + "/e2e-csr-" + name;
  std::filesystem::create_directories(k.dir);
  k.key = k.dir + "/key.pem";
  ExecResult g = exec({"openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", k.key});
  EXPECT_TRUE(g.ok()) << g.err;
  ExecResult r = exec({"openssl", "req", "-new", "-key", k.key, "-subj", subject, "-out", k.dir + "/req.pem"});
  EXPECT_TRUE(r.ok()) << r.err;
  ExecResult b = exec({"base64", "-w0", k.dir + "/req.pem"});
  k.csrBase64 = b.out;
  return k;
}

std::string csrManifest(const std::string& name, const KeyAndRequest& k, const std::string& signer,
                        const std::string& usages, const std::string& extra = "") {
  return R"({"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":")" + name +
         R"("},"spec":{"request":")" + k.csrBase64 + R"(","signerName":")" + signer + R"(","usages":[)" + usages + "]" +
         extra + "}}";
}

std::string server() {
  return kubectl({"config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"}).out;
}

// kubectl as someone else: no kubeconfig, the cluster CA, and the given credentials.
ExecResult kubectlAs(const std::vector<std::string>& credentials, std::vector<std::string> args,
                     const std::string& input = "") {
  std::vector<std::string> full = {"--kubeconfig=/dev/null", "--server=" + server(),
                                   "--certificate-authority=" + Cluster::get().dir + "/pki/ca.crt"};
  full.insert(full.end(), credentials.begin(), credentials.end());
  full.insert(full.end(), args.begin(), args.end());
  return kubectl(full, input);
}

// The issued certificate written to a file; "" until there is one.
std::string certificateFile(const std::string& csr, const KeyAndRequest& k) {
  std::string b64 = kubectl({"get", "csr", csr, "-o", "jsonpath={.status.certificate}"}).out;
  if (b64.empty()) return "";
  std::string path = k.dir + "/cert.pem";
  std::ofstream(path + ".b64") << b64;
  exec({"sh", "-c", "base64 -d " + path + ".b64 > " + path});
  return path;
}

std::time_t certTime(const std::string& certFile, const char* which) {  // "-startdate" / "-enddate"
  ExecResult r = exec({"openssl", "x509", "-in", certFile, "-noout", which, "-dateopt", "iso_8601"});
  std::string v = r.out.substr(r.out.find('=') + 1);
  std::tm tm{};
  strptime(v.c_str(), "%Y-%m-%d %H:%M:%SZ", &tm);
  return timegm(&tm);
}

// The seed's command line (cluster CA as signer, --experimental-cluster-signing-duration=876000h).
class Certificates : public E2ETest {
 protected:
  static void SetUpTestSuite() {
    kubectl({"delete", "lease", "-n", "kube-system", "kube-controller-manager", "--ignore-not-found"});
    kcm_ = new KcmProcess(seedFlagsForCluster({"--secure-port=0"}), "kcm-certificates");
    ASSERT_TRUE(waitFor([] { return kcm_->log().find("Starting certificate controller") != std::string::npos; }, 30s))
        << kcm_->log();
  }
  static void TearDownTestSuite() {
    delete kcm_;
    kcm_ = nullptr;
    kubectl({"delete", "lease", "-n", "kube-system", "kube-controller-manager", "--ignore-not-found"});
  }
  void TearDown() override {
    for (const auto& c : cleanup_) kubectl({"delete", c[0], c[1], "-n", c.size() > 2 ? c[2] : "default",
                                            "--ignore-not-found"});
    E2ETest::TearDown();
  }
  void deleteAfter(std::vector<std::string> kindName) { cleanup_.push_back(std::move(kindName)); }
  static KcmProcess* kcm_;
  std::vector<std::vector<std::string>> cleanup_;
};
KcmProcess* Certificates::kcm_ = nullptr;

TEST_F(Certificates, KubeletClientCSRSentWithABootstrapTokenIsAutoApprovedSignedAndAuthenticatesAsTheNode) {
  // What kubeadm sets up for TLS bootstrapping: a bootstrap token and the two bindings of system:bootstrappers.
  ASSERT_TRUE(kubectl({"apply", "-f", "-"}, R"({"apiVersion":"v1","kind":"Secret",
    "metadata":{"name":"bootstrap-token-e2ecsr","namespace":"kube-system"},"type":"bootstrap.kubernetes.io/token",
    "stringData":{"token-id":"e2ecsr","token-secret":"0123456789abcdef","usage-bootstrap-authentication":"true",
    "auth-extra-groups":"system:bootstrappers:kubeadm:default-node-token"}})").ok());
  deleteAfter({"secret", "bootstrap-token-e2ecsr", "kube-system"});
  for (auto [binding, role] : {std::pair{"e2e-kubelet-bootstrap", "system:node-bootstrapper"},
                               std::pair{"e2e-node-autoapprove-bootstrap",
                                         "system:certificates.k8s.io:certificatesigningrequests:nodeclient"}}) {
    apply(std::string(R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":")") +
          binding + R"("},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":")" + role +
          R"("},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"system:bootstrappers"}]})");
    deleteAfter({"clusterrolebinding", binding});
  }
  KeyAndRequest k = makeRequest("kubelet", "/O=system:nodes/CN=system:node:kwok-node-0");
  const std::vector<std::string> token = {"--token=e2ecsr.0123456789abcdef"};
  ExecResult created = kubectlAs(token, {"create", "-f", "-"},
                                 csrManifest("e2e-node-csr", k, "kubernetes.io/kube-apiserver-client-kubelet",
                                             R"("digital signature","key encipherment","client auth")"));
  ASSERT_TRUE(created.ok()) << created.err;
  deleteAfter({"csr", "e2e-node-csr"});
  std::string cert;
  ASSERT_TRUE(waitFor([&] { return !(cert = certificateFile("e2e-node-csr", k)).empty(); }, 20s))
      << kubectl({"get", "csr", "e2e-node-csr", "-o", "yaml"}).out << kcm_->log().substr(0, 4000);
  Json csr = kubectlJson({"get", "csr", "e2e-node-csr"});
  EXPECT_EQ(csr["spec"]["username"], "system:bootstrap:e2ecsr");
  const Json& approved = csr["status"]["conditions"][0];
  EXPECT_EQ(approved["type"], "Approved");
  EXPECT_EQ(approved["reason"], "AutoApproved");
  EXPECT_EQ(approved["message"], "Auto approving kubelet client certificate after SubjectAccessReview.");
  ExecResult verify = exec({"openssl", "verify", "-CAfile", Cluster::get().dir + "/pki/ca.crt", cert});
  EXPECT_EQ(verify.out, cert + ": OK\n") << verify.err;
  ExecResult subject = exec({"openssl", "x509", "-in", cert, "-noout", "-subject", "-nameopt", "compat"});
  EXPECT_EQ(subject.out, "subject=/O=system:nodes/CN=system:node:kwok-node-0\n");
  // 876000h is past the CA's own end: the certificate ends with the CA.
  EXPECT_EQ(certTime(cert, "-enddate"), certTime(Cluster::get().dir + "/pki/ca.crt", "-enddate"));
  ExecResult whoami = kubectlAs({"--client-certificate=" + cert, "--client-key=" + k.key},
                                {"auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"});
  EXPECT_EQ(whoami.out, R"(system:node:kwok-node-0 ["system:nodes","system:authenticated"])") << whoami.err;
}

// test/e2e/auth/certificates.go "should support building a client with a CSR": kube-apiserver-client signer,
// approved by hand, expirationSeconds 1 h; the certificate lasts at most 1 h 5 min and authenticates as its CN.
TEST_F(Certificates, AClientBuiltFromAnApprovedCSRAuthenticatesAsItsCommonName) {
  apply(R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"e2e-tester-csr"},
    "rules":[{"verbs":["create"],"apiGroups":["certificates.k8s.io"],"resources":["certificatesigningrequests"]}]})");
  deleteAfter({"clusterrole", "e2e-tester-csr"});
  apply(R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"e2e-tester-csr"},
    "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"e2e-tester-csr"},
    "subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"tester-csr"}]})");
  deleteAfter({"clusterrolebinding", "e2e-tester-csr"});
  KeyAndRequest k = makeRequest("tester", "/CN=tester-csr");
  const std::string usages = R"("digital signature","key encipherment","client auth")";
  ASSERT_TRUE(kubectl({"create", "-f", "-"}, csrManifest("e2e-tester-csr", k, "kubernetes.io/kube-apiserver-client",
                                                         usages, R"(,"expirationSeconds":3600)")).ok());
  deleteAfter({"csr", "e2e-tester-csr"});
  // Not approved: not signed.
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(certificateFile("e2e-tester-csr", k), "");
  ASSERT_TRUE(kubectl({"certificate", "approve", "e2e-tester-csr"}).ok());
  std::string cert;
  ASSERT_TRUE(waitFor([&] { return !(cert = certificateFile("e2e-tester-csr", k)).empty(); }, 20s));
  const std::time_t lifetime = certTime(cert, "-enddate") - certTime(cert, "-startdate");
  EXPECT_EQ(lifetime, 3600 + 300) << "1 h asked, backdated 5 min";
  ExecResult asTester = kubectlAs({"--client-certificate=" + cert, "--client-key=" + k.key}, {"create", "-f", "-", "-o",
                                   "jsonpath={.spec.username}"},
                                  csrManifest("e2e-tester-csr-2", k, "kubernetes.io/kube-apiserver-client", usages));
  deleteAfter({"csr", "e2e-tester-csr-2"});
  EXPECT_EQ(asTester.out, "tester-csr") << asTester.err;
}

TEST_F(Certificates, AnApprovedRequestBreakingItsSignersRulesIsMarkedFailed) {
  KeyAndRequest k = makeRequest("bad-org", "/O=not-nodes/CN=system:node:kwok-node-1");
  ASSERT_TRUE(kubectl({"create", "-f", "-"}, csrManifest("e2e-bad-org", k, "kubernetes.io/kube-apiserver-client-kubelet",
                                                         R"("digital signature","client auth")")).ok());
  deleteAfter({"csr", "e2e-bad-org"});
  ASSERT_TRUE(kubectl({"certificate", "approve", "e2e-bad-org"}).ok());
  Json failed;
  ASSERT_TRUE(waitFor([&] {
    const Json csr = kubectlJson({"get", "csr", "e2e-bad-org"});  // kept alive across the loop
    for (const auto& c : csr["status"]["conditions"])
      if (c["type"] == "Failed") failed = c;
    return !failed.is_null();
  }, 20s));
  EXPECT_EQ(failed["status"], "True");
  EXPECT_EQ(failed["reason"], "SignerValidationFailure");
  EXPECT_EQ(failed["message"], "subject organization is not system:nodes");
  EXPECT_EQ(certificateFile("e2e-bad-org", k), "");
}

// kube-apiserver-serving-clustertrustbundle-publisher-controller: the serving CA (--root-ca-file) as a v1
// ClusterTrustBundle named after the signer and the bundle's hash, restored when deleted; other bundles of the
// signer are deleted.
TEST_F(Certificates, TheAPIServerServingCAIsPublishedAsAClusterTrustBundle) {
  const std::string ca = readAll(Cluster::get().dir + "/pki/ca.crt");
  auto bundles = [] {
    return kubectlJson({"get", "clustertrustbundles.v1.certificates.k8s.io",
                        "--field-selector=spec.signerName=kubernetes.io/kube-apiserver-serving"})["items"];
  };
  ASSERT_TRUE(waitFor([&] { return bundles().size() == 1; }, 20s)) << bundles().dump();
  const Json b = bundles()[0];
  const std::string name = b["metadata"]["name"];
  EXPECT_EQ(name.rfind("kubernetes.io:kube-apiserver-serving:", 0), 0u) << name;
  EXPECT_EQ(name.size(), std::string("kubernetes.io:kube-apiserver-serving:").size() + 24);
  EXPECT_EQ(b["spec"]["trustBundle"], ca);
  ExecResult hash = exec({"sh", "-c", "sha256sum < " + Cluster::get().dir + "/pki/ca.crt | cut -c1-24"});
  EXPECT_EQ(name.substr(name.rfind(':') + 1) + "\n", hash.out);
  const std::string uid = b["metadata"]["uid"];
  ASSERT_TRUE(kubectl({"delete", "clustertrustbundles.v1.certificates.k8s.io", name}).ok());
  EXPECT_TRUE(waitFor([&] {
    Json now = bundles();
    return now.size() == 1 && now[0]["metadata"]["uid"] != uid && now[0]["spec"]["trustBundle"] == ca;
  }, 20s)) << bundles().dump();
  apply(R"({"apiVersion":"certificates.k8s.io/v1","kind":"ClusterTrustBundle",
    "metadata":{"name":"kubernetes.io:kube-apiserver-serving:stale"},
    "spec":{"signerName":"kubernetes.io/kube-apiserver-serving","trustBundle":)" + Json(ca).dump() + "}}");
  EXPECT_TRUE(waitFor([&] {
    return !kubectl({"get", "clustertrustbundles.v1.certificates.k8s.io", "kubernetes.io:kube-apiserver-serving:stale"})
                .ok();
  }, 20s));
}

// ---- CSR clean-up, issued-and-expired rule: a signer with a 10 s --cluster-signing-duration, then a cleaner
// started after the certificate expired (its first pass runs once its cache has synced).
struct ShortSigner {
  static constexpr const char* kControllers = "csrsigning";
  static constexpr const char* kLogName = "kcm-short-signer";
  static std::vector<std::string> extraFlags() {
    const std::string pki = Cluster::get().dir + "/pki";
    return {"--cluster-signing-cert-file=" + pki + "/ca.crt", "--cluster-signing-key-file=" + pki + "/ca.key",
            "--cluster-signing-duration=10s"};
  }
};
class CSRCleanup : public SoloKcmSuite<ShortSigner> {};

TEST_F(CSRCleanup, AnIssuedCertificateThatExpiredIsDeletedButPendingAndFreshRequestsStay) {
  KeyAndRequest k = makeRequest("short", "/CN=short-lived");
  const std::string usages = R"("digital signature","client auth")";
  ASSERT_TRUE(kubectl({"create", "-f", "-"}, csrManifest("e2e-short", k, "kubernetes.io/kube-apiserver-client", usages,
                                                         R"(,"expirationSeconds":3600)")).ok());
  ASSERT_TRUE(kubectl({"create", "-f", "-"}, csrManifest("e2e-pending", k, "kubernetes.io/kube-apiserver-client",
                                                         usages)).ok());
  ASSERT_TRUE(kubectl({"create", "-f", "-"}, csrManifest("e2e-denied", k, "kubernetes.io/kube-apiserver-client",
                                                         usages)).ok());
  struct Cleanup {
    ~Cleanup() { kubectl({"delete", "csr", "e2e-short", "e2e-pending", "e2e-denied", "--ignore-not-found"}); }
  } cleanup;
  ASSERT_TRUE(kubectl({"certificate", "approve", "e2e-short"}).ok());
  ASSERT_TRUE(kubectl({"certificate", "deny", "e2e-denied"}).ok());
  std::string cert;
  ASSERT_TRUE(waitFor([&] { return !(cert = certificateFile("e2e-short", k)).empty(); }, 20s)) << kcm_->log();
  // min(expirationSeconds 1 h, --cluster-signing-duration 10 s), backdated 5 minutes.
  const std::time_t notAfter = certTime(cert, "-enddate");
  EXPECT_EQ(notAfter - certTime(cert, "-startdate"), 10 + 300);
  while (std::time(nullptr) <= notAfter + 1) std::this_thread::sleep_for(500ms);
  std::unique_ptr<KcmProcess> cleaner(startSoloKcm("csrcleaner", {}, "kcm-csr-cleaner"));
  EXPECT_TRUE(waitFor([&] { return !kubectl({"get", "csr", "e2e-short"}).ok(); }, 20s)) << cleaner->log();
  EXPECT_NE(cleaner->log().find("Cleaning CSR as the associated certificate is expired."), std::string::npos);
  EXPECT_TRUE(kubectl({"get", "csr", "e2e-pending"}).ok());
  EXPECT_TRUE(kubectl({"get", "csr", "e2e-denied"}).ok());
}

// ---- legacy-serviceaccount-token-cleaner-controller with a short --legacy-service-account-token-clean-up-period:
// an unused legacy token is labelled invalid since today, then (its label dated back a period, and the cleaner
// restarted: it runs once a day, first at start) deleted; a recently used one and one a pod mounts are kept.
struct LegacyCleaner {
  static constexpr const char* kControllers = "legacy-serviceaccount-token-cleaner-controller";
  static constexpr const char* kLogName = "kcm-legacy-token-cleaner";
  static std::vector<std::string> extraFlags() { return {"--legacy-service-account-token-clean-up-period=2s"}; }
};
class LegacyTokenCleanup : public E2ETest {};

std::string today(int daysBack = 0) {
  std::time_t t = std::time(nullptr) - daysBack * 86400;
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

TEST_F(LegacyTokenCleanup, AnUnusedLegacyTokenIsLabelledInvalidThenDeletedAndUsedOrMountedOnesStay) {
  // The apiserver started tracking token use today; pretend it was a few days ago (the cleaner waits a day past
  // that, plus the period).
  const std::string cm = "kube-apiserver-legacy-service-account-token-tracking";
  const std::string since = kubectl({"get", "configmap", "-n", "kube-system", cm, "-o", "jsonpath={.data.since}"}).out;
  ASSERT_FALSE(since.empty());
  struct Restore {
    std::string cm, since;
    ~Restore() {
      kubectl({"patch", "configmap", "-n", "kube-system", cm, "--type=merge", "-p",
               R"({"data":{"since":")" + since + R"("}})"});
    }
  } restore{cm, since};
  ASSERT_TRUE(kubectl({"patch", "configmap", "-n", "kube-system", cm, "--type=merge", "-p",
                       R"({"data":{"since":")" + today(3) + R"("}})"}).ok());
  apply(R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}})");  // pods are admitted
  apply(R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"legacy"},
    "secrets":[{"name":"unused"},{"name":"used"},{"name":"mounted"}]})");
  std::string saUID = kubectl({"get", "sa", "legacy", "-n", ns(), "-o", "jsonpath={.metadata.uid}"}).out;
  auto token = [&](const std::string& name, const std::string& labels) {
    apply(R"({"apiVersion":"v1","kind":"Secret","type":"kubernetes.io/service-account-token","metadata":{"name":")" +
          name + R"(","annotations":{"kubernetes.io/service-account.name":"legacy","kubernetes.io/service-account.uid":")" +
          saUID + R"("},"labels":{)" + labels + "}}}");
  };
  token("unused", "");
  token("used", R"("kubernetes.io/legacy-token-last-used":")" + today() + "\"");
  token("mounted", "");
  apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"mounts"},"spec":{"nodeName":"kwok-node-2",
    "automountServiceAccountToken":false,"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}],
    "volumes":[{"name":"t","secret":{"secretName":"mounted"}}]}})");
  std::this_thread::sleep_for(3s);  // older than the 2 s period
  auto label = [&](const std::string& name) {
    return kubectl({"get", "secret", name, "-n", ns(), "-o",
                    R"(jsonpath={.metadata.labels.kubernetes\.io/legacy-token-invalid-since})"}).out;
  };
  {
    std::unique_ptr<KcmProcess> kcm(startSoloKcm(LegacyCleaner::kControllers, LegacyCleaner::extraFlags(),
                                                 LegacyCleaner::kLogName));
    ASSERT_TRUE(waitFor([&] { return label("unused") == today(); }, 20s)) << kcm->log();
    EXPECT_NE(kcm->log().find("Mark the auto-generated service account token as invalid"), std::string::npos);
  }
  EXPECT_EQ(label("used"), "");
  EXPECT_EQ(label("mounted"), "");
  // Invalid since two days: over the period; the next pass (a restart: passes are a day apart) deletes it.
  ASSERT_TRUE(kubectl({"label", "secret", "unused", "-n", ns(), "--overwrite",
                       "kubernetes.io/legacy-token-invalid-since=" + today(2)}).ok());
  std::unique_ptr<KcmProcess> kcm(startSoloKcm(LegacyCleaner::kControllers, LegacyCleaner::extraFlags(),
                                               LegacyCleaner::kLogName));
  EXPECT_TRUE(waitFor([&] { return !kubectl({"get", "secret", "unused", "-n", ns()}).ok(); }, 20s)) << kcm->log();
  EXPECT_NE(kcm->log().find("Delete auto-generated service account token"), std::string::npos);
  EXPECT_TRUE(kubectl({"get", "secret", "used", "-n", ns()}).ok());
  EXPECT_TRUE(kubectl({"get", "secret", "mounted", "-n", ns()}).ok());
}

}  // namespace
}  // namespace kcm::e2e
