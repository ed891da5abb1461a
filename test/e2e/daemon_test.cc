// Our kube-controller-manager binary against the real control plane: the seed's command line, /healthz and
// /metrics, leader election between two instances, and bad input failing clearly.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "api/gen/authentication_v1_codec.h"
#include "api/gen/authentication_v1_json.h"
#include "api/gen/core_v1_codec.h"
#include "api/gen/core_v1_json.h"
#include "client/typed_client.h"
#include "controllers/client_builder.h"
#include "framework/framework.h"
#include "framework/kcm_process.h"

namespace kcm::e2e {
namespace {

using Kcm = KcmProcess;
std::vector<std::string> seedFlags() { return seedFlagsForCluster(); }

ExecResult curl(const std::vector<std::string>& extra, const std::string& url) {
  std::vector<std::string> argv = {"curl", "-sk", "--max-time", "5", "-w", "\n%{http_code}"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(url);
  return exec(argv);
}

std::string leaseHolder() {
  ExecResult r = kubectl({"get", "lease", "-n", "kube-system", "kube-controller-manager", "-o",
                          "jsonpath={.spec.holderIdentity}"});
  return r.ok() ? r.out : "";
}

class Daemon : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Leader-election tests share the kube-system Lease: clear it so each starts from no holder.
    kubectl({"delete", "lease", "-n", "kube-system", "kube-controller-manager", "--ignore-not-found"});
  }
  void TearDown() override {
    kubectl({"delete", "lease", "-n", "kube-system", "kube-controller-manager", "--ignore-not-found"});
  }
};

TEST_F(Daemon, SeedCommandLineStartsLeadsAndServesHealthz) {
  int port = freePort();
  auto args = seedFlags();
  args.push_back("--secure-port=" + std::to_string(port));
  args.push_back("--flex-volume-plugin-dir=/tmp/kcm-flex");  // a flag this build accepts but does not implement
  Kcm kcm(args, "kcm-seed");
  std::string url = "https://127.0.0.1:" + std::to_string(port);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  ASSERT_TRUE(waitFor([&] { return leaseHolder().rfind(std::string(host) + "_", 0) == 0; }, 30s))
      << "lease holder: " << leaseHolder() << "\n" << kcm.log();
  ExecResult h = curl({}, url + "/healthz");
  EXPECT_EQ(h.out, "ok\n200") << kcm.log();
  ExecResult v = curl({}, url + "/healthz?verbose");
  EXPECT_NE(v.out.find("[+]leaderElection ok"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("healthz check passed"), std::string::npos) << v.out;
  // The seed's removed flags and gates were accepted with warnings.
  std::string log = kcm.log();
  EXPECT_NE(log.find("Flag --port has been deprecated"), std::string::npos) << log;
  EXPECT_NE(log.find("Flag --experimental-cluster-signing-duration has been deprecated"), std::string::npos);
  EXPECT_NE(log.find("Feature gate TTLAfterFinished was GA and removed"), std::string::npos);
  EXPECT_NE(log.find("Feature gate EphemeralContainers was GA and removed"), std::string::npos);
  // Every controller the seed's --controllers enables is built: none is skipped as not implemented.
  EXPECT_EQ(log.find("skipping controller (not implemented)"), std::string::npos) << log.substr(0, 3000);
  // A flag this build accepts but does not implement yet gets a warning naming it; every flag of the seed's own
  // command line is implemented now (the CSR signing files since the certificates controllers), so none of them does.
  const std::string notImplemented = "Flag is accepted but not implemented by this kube-controller-manager; it has "
                                     "no effect\" flag=";
  EXPECT_NE(log.find(notImplemented + "\"--flex-volume-plugin-dir\""), std::string::npos) << log.substr(0, 3000);
  EXPECT_EQ(log.find(notImplemented + "\"--cluster-signing-cert-file\""), std::string::npos);
  EXPECT_EQ(log.find(notImplemented), log.rfind(notImplemented)) << "only the one flag";

  // /metrics: anonymous is forbidden, the admin client certificate (system:masters) is allowed.
  ExecResult anon = curl({}, url + "/metrics");
  EXPECT_EQ(anon.out.substr(anon.out.size() - 3), "403") << anon.out;
  const std::string d = Cluster::get().dir;
  ExecResult admin = curl({"--cert", d + "/pki/admin.crt", "--key", d + "/pki/admin.key"}, url + "/metrics");
  EXPECT_EQ(admin.out.substr(admin.out.size() - 3), "200") << admin.out.substr(0, 300);
  EXPECT_NE(admin.out.find("leader_election_master_status{name=\"kube-controller-manager\"} 1"), std::string::npos);
  EXPECT_NE(admin.out.find("rest_client_requests_total{code=\"200\""), std::string::npos);
  EXPECT_NE(admin.out.find("rest_client_request_duration_seconds_bucket"), std::string::npos);
  EXPECT_NE(admin.out.find("process_resident_memory_bytes"), std::string::npos);
  // Front-proxy (request header) authentication: the front-proxy client certificate vouches for the headers.
  const std::vector<std::string> proxyCert = {"--cert", d + "/pki/front-proxy-client.crt", "--key",
                                              d + "/pki/front-proxy-client.key"};
  std::vector<std::string> asMaster = proxyCert;
  asMaster.insert(asMaster.end(), {"-H", "X-Remote-User: alice", "-H", "X-Remote-Group: system:masters"});
  ExecResult proxied = curl(asMaster, url + "/metrics");
  EXPECT_EQ(proxied.out.substr(proxied.out.size() - 3), "200") << proxied.out.substr(0, 300);
  std::vector<std::string> asAlice = proxyCert;
  asAlice.insert(asAlice.end(), {"-H", "X-Remote-User: alice"});
  ExecResult alice = curl(asAlice, url + "/metrics");
  EXPECT_EQ(alice.out.substr(alice.out.size() - 3), "403") << alice.out;
  EXPECT_NE(alice.out.find(R"(User \"alice\")"), std::string::npos) << alice.out;  // in a metav1.Status
  // The same headers without the proxy's certificate are not trusted.
  ExecResult forged = curl({"-H", "X-Remote-User: alice", "-H", "X-Remote-Group: system:masters"}, url + "/metrics");
  EXPECT_EQ(forged.out.substr(forged.out.size() - 3), "403") << forged.out;
  // The garbage collector's dependency graph (DOT), behind the same authorization.
  EXPECT_TRUE(waitFor([&] {
    ExecResult g = curl({"--cert", d + "/pki/admin.crt", "--key", d + "/pki/admin.key"},
                        url + "/debug/controllers/garbagecollector/graph");
    return g.out.rfind("strict digraph full {", 0) == 0 && g.out.find("Namespace.v1.kube-system") != std::string::npos &&
           g.out.substr(g.out.size() - 3) == "200";
  }, 30s)) << kcm.log().substr(0, 2000);
  ExecResult anonGraph = curl({}, url + "/debug/controllers/garbagecollector/graph");
  EXPECT_EQ(anonGraph.out.substr(anonGraph.out.size() - 3), "403");
  ExecResult configz = curl({"--cert", d + "/pki/admin.crt", "--key", d + "/pki/admin.key"}, url + "/configz");
  // Typed, by flag set, with upstream's KubeControllerManagerConfiguration names.
  EXPECT_NE(configz.out.find("{\"componentconfig\":{\"apiVersion\":\"kubecontrollermanager.config.k8s.io/v1alpha1\","
                             "\"kind\":\"KubeControllerManagerConfiguration\""), std::string::npos)
      << configz.out.substr(0, 200);
  EXPECT_NE(configz.out.find("\"LeaderElect\":true"), std::string::npos) << configz.out.substr(0, 400);
  EXPECT_NE(configz.out.find("\"DeploymentController\":{\"ConcurrentDeploymentSyncs\":5}"), std::string::npos);

  // Bearer tokens: TokenReview authenticates, SubjectAccessReview authorizes (through the seed's
  // --authentication-kubeconfig/--authorization-kubeconfig).
  // Namespaces cannot be deleted before the namespace controller exists: use kube-system, unique names.
  const std::string ns = "kube-system", sfx = std::to_string(getpid());
  const std::string reader = "e2e-reader-" + sfx, nobody = "e2e-nobody-" + sfx;
  kubectl({"create", "serviceaccount", reader, "-n", ns});
  kubectl({"create", "serviceaccount", nobody, "-n", ns});
  kubectl({"create", "clusterrole", "kcm-e2e-metrics", "--verb=get", "--non-resource-url=/metrics"});
  kubectl({"create", "clusterrolebinding", "kcm-e2e-metrics", "--clusterrole=kcm-e2e-metrics",
           "--serviceaccount=" + ns + ":" + reader});
  ExecResult readerToken = kubectl({"create", "token", reader, "-n", ns});
  ExecResult nobodyToken = kubectl({"create", "token", nobody, "-n", ns});
  ASSERT_TRUE(readerToken.ok() && nobodyToken.ok()) << readerToken.err << nobodyToken.err;
  ExecResult withRole = curl({"-H", "Authorization: Bearer " + readerToken.out}, url + "/metrics");
  EXPECT_EQ(withRole.out.substr(withRole.out.size() - 3), "200") << withRole.out.substr(0, 300);
  ExecResult noRole = curl({"-H", "Authorization: Bearer " + nobodyToken.out}, url + "/metrics");
  EXPECT_EQ(noRole.out.substr(noRole.out.size() - 3), "403") << noRole.out;
  EXPECT_NE(noRole.out.find("system:serviceaccount:" + ns + ":" + nobody), std::string::npos) << noRole.out;
  kubectl({"delete", "clusterrolebinding", "kcm-e2e-metrics"});
  kubectl({"delete", "clusterrole", "kcm-e2e-metrics"});
  kubectl({"delete", "serviceaccount", "-n", ns, reader, nobody});
}

TEST_F(Daemon, OneOfTwoLeadsAndTheOtherTakesOverAfterKill9) {
  auto start = [&](const std::string& name) {
    auto args = seedFlags();
    args.push_back("--secure-port=" + std::to_string(freePort()));
    return std::make_unique<Kcm>(args, name);
  };
  auto a = start("kcm-a");
  auto b = start("kcm-b");
  std::string first;
  ASSERT_TRUE(waitFor([&] { return !(first = leaseHolder()).empty(); }, 30s));
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(leaseHolder(), first);  // exactly one leads, and keeps it
  bool aLeads = a->log().find("\"Successfully acquired lease\"") != std::string::npos;
  bool bLeads = b->log().find("\"Successfully acquired lease\"") != std::string::npos;
  ASSERT_NE(aLeads, bLeads) << "a:\n" << a->log() << "\nb:\n" << b->log();
  auto& leader = aLeads ? a : b;
  auto& standby = aLeads ? b : a;
  auto killed = std::chrono::steady_clock::now();
  leader->kill9();
  ASSERT_TRUE(waitFor([&] { return !leaseHolder().empty() && leaseHolder() != first; }, 30s)) << standby->log();
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  EXPECT_LT(took, 17.0) << "standby took over after " << took << " s";
  std::printf("standby took over %.1f s after the leader was killed\n", took);
  EXPECT_NE(standby->log().find("\"Successfully acquired lease\""), std::string::npos);
  // Each acquisition is reported as client-go's LeaseLock does: a Normal LeaderElection event on the Lease,
  // "<identity> became leader", from component kube-controller-manager with no host.
  const std::string second = leaseHolder();
  auto becameLeader = [&](const std::string& id) {
    Json events = kubectlJson({"get", "events", "-n", "kube-system", "--field-selector",
                               "involvedObject.kind=Lease,involvedObject.name=kube-controller-manager,reason=LeaderElection"});
    if (!events.is_object()) return false;
    for (const Json& e : events["items"])
      if (e.value("message", "") == id + " became leader" && e.value("type", "") == "Normal" &&
          e["source"].value("component", "") == "kube-controller-manager" && e["source"].value("host", "") == "" &&
          e["involvedObject"].value("apiVersion", "") == "coordination.k8s.io/v1")
        return true;
    return false;
  };
  EXPECT_TRUE(waitFor([&] { return becameLeader(first) && becameLeader(second); }, 10s));
}

struct BadInput {
  const char* name;
  std::vector<std::string> args;
  const char* message;
};

TEST_F(Daemon, BadInputFailsWithExitOneAndNamesTheCulprit) {
  const std::string d = Cluster::get().dir;
  std::string broken = d + "/broken.conf";
  std::ofstream(broken) << "apiVersion: v1\nclusters: [\n";
  const BadInput cases[] = {
      {"unknown flag", {"--no-such-flag=1"}, "Error: unknown flag: --no-such-flag"},
      {"positional argument", {"extra"}, "does not take any arguments, got [\"extra\"]"},
      {"unknown controller", {"--controllers=*,foo"}, "\\\"foo\\\" is not in the list of known controllers"},
      {"unknown feature gate", {"--feature-gates=NoSuchGate=true"}, "unrecognized feature gate: NoSuchGate"},
      {"locked gate", {"--feature-gates=TTLAfterFinished=false"}, "feature is locked to true"},
      {"malformed kubeconfig", {"--kubeconfig=" + broken}, broken.c_str()},
      {"unreadable cert file",
       {"--kubeconfig=" + d + "/admin.conf", "--tls-cert-file=/nonexistent.crt", "--tls-private-key-file=/nonexistent.key"},
       "/nonexistent.crt"},
      {"bad duration", {"--kubeconfig=" + d + "/admin.conf", "--min-resync-period=soon"}, "--min-resync-period"},
      {"bad tls version", {"--kubeconfig=" + d + "/admin.conf", "--tls-min-version=VersionTLS99"}, "--tls-min-version"},
      {"bad logging format", {"--logging-format=xml"}, "Unsupported value: \\\"xml\\\""},
      {"bad bool", {"--leader-elect=maybe"}, "invalid argument \"maybe\" for \"--leader-elect\" flag"},
      {"unknown cipher suite", {"--kubeconfig=" + d + "/admin.conf", "--tls-cipher-suites=TLS_NOPE"},
       "Cipher suite TLS_NOPE not supported or doesn't exist"},
      {"bad sni pair", {"--kubeconfig=" + d + "/admin.conf", "--tls-sni-cert-key=/nonexistent-sni.crt,/x.key"},
       "/nonexistent-sni.crt"},
      {"invalid option value", {"--kubeconfig=" + d + "/admin.conf", "--concurrent-job-syncs=0"},
       "concurrent-job-syncs must be greater than 0, but got 0"},
  };
  for (const auto& c : cases) {
    ExecResult r = exec([&] {
      std::vector<std::string> a = {kcmBinary()};
      a.insert(a.end(), c.args.begin(), c.args.end());
      return a;
    }(), "", 30s);
    EXPECT_EQ(r.exitCode, 1) << c.name << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.name << ": want [" << c.message << "] in\n"
                                                        << r.err.substr(r.err.size() > 600 ? r.err.size() - 600 : 0);
  }
}

// SIGTERM while the ReplicaSet controller is busy creating pods: the process stops its controllers within
// --controller-shutdown-timeout and exits 0 (upstream's "Requested to terminate, exiting").
TEST_F(Daemon, SigtermDuringABusyRolloutExitsZeroWithinTheShutdownTimeout) {
  const std::string d = Cluster::get().dir;
  const std::string ns = "e2e-sigterm-" + std::to_string(getpid());
  ASSERT_TRUE(kubectl({"create", "namespace", ns}).ok());
  ASSERT_TRUE(kubectl({"create", "deployment", "busy", "-n", ns, "--image=registry.k8s.io/pause:3.10",
                       "--replicas=300"}).ok());
  Kcm kcm({"--kubeconfig=" + d + "/admin.conf", "--leader-elect=false", "--secure-port=0",
           "--controllers=serviceaccount-controller,deployment-controller,replicaset-controller",
           "--controller-shutdown-timeout=3s"},
          "kcm-sigterm");
  auto podCount = [&] {
    ExecResult r = kubectl({"get", "pods", "-n", ns, "--no-headers", "-o", "name"});
    return r.ok() ? static_cast<int>(std::count(r.out.begin(), r.out.end(), '\n')) : 0;
  };
  ASSERT_TRUE(waitFor([&] { return podCount() >= 30; }, 60s)) << kcm.log();
  auto t0 = std::chrono::steady_clock::now();
  kcm.signal(SIGTERM);
  int code = kcm.waitExit(15s);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(code, 0) << kcm.log().substr(0, 4000);
  EXPECT_LT(took, 3.0 + 2.0) << kcm.log().substr(0, 4000);
  EXPECT_EQ(kcm.log().find("SUMMARY: AddressSanitizer"), std::string::npos) << kcm.log();
  kubectl({"delete", "namespace", ns, "--wait=false", "--ignore-not-found"});
}

// --tls-sni-cert-key serves the named pair to clients asking for that name, the default certificate to others;
// --tls-cipher-suites limits TLS 1.2 to the suites given.
TEST_F(Daemon, ServingHonoursSniCertificatesAndCipherSuites) {
  const std::string dir = Cluster::get().dir + "/sni-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(exec({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=sni.kcm.example", "-addext", "subjectAltName=DNS:sni.kcm.example", "-keyout",
                    dir + "/sni.key", "-out", dir + "/sni.crt"}).ok());
  int port = freePort();
  Kcm kcm({"--kubeconfig=" + Cluster::get().dir + "/admin.conf", "--leader-elect=false",
           "--controllers=ttl-controller", "--secure-port=" + std::to_string(port),
           "--tls-sni-cert-key=" + dir + "/sni.crt," + dir + "/sni.key",
           "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
          "kcm-sni");
  const std::string url = "https://127.0.0.1:" + std::to_string(port);
  ASSERT_TRUE(waitFor([&] { return curl({}, url + "/healthz").out == "ok\n200"; }, 30s)) << kcm.log();
  auto subject = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> a = {"openssl", "s_client", "-connect", "127.0.0.1:" + std::to_string(port)};
    a.insert(a.end(), extra.begin(), extra.end());
    ExecResult r = exec(a, "", 10s);
    return r.out;
  };
  EXPECT_NE(subject({"-servername", "sni.kcm.example"}).find("CN = sni.kcm.example"), std::string::npos);
  EXPECT_EQ(subject({"-servername", "other.example"}).find("CN = sni.kcm.example"), std::string::npos);
  // TLS 1.2 with a suite not in the list fails; with a listed one it succeeds.
  std::string refused = subject({"-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"});
  EXPECT_EQ(refused.find("Cipher is ECDHE-RSA-AES128-GCM-SHA256"), std::string::npos) << refused;
  std::string allowed = subject({"-tls1_2", "-cipher", "ECDHE-RSA-AES256-GCM-SHA384"});
  EXPECT_NE(allowed.find("Cipher is ECDHE-RSA-AES256-GCM-SHA384"), std::string::npos) << allowed;
  std::filesystem::remove_all(dir);
}

// A controller whose informer cannot list (its credentials lack the RBAC) turns its /healthz check unhealthy; the
// response withholds the reason, as upstream's, and the log names it. Its neighbour stays healthy.
TEST_F(Daemon, ControllerWhoseInformerCannotListIsUnhealthy) {
  const std::string d = Cluster::get().dir;
  const std::string sa = "e2e-limited-" + std::to_string(getpid());
  ASSERT_TRUE(kubectl({"create", "serviceaccount", sa, "-n", "kube-system"}).ok());
  ASSERT_TRUE(kubectl({"create", "clusterrole", sa, "--verb=get,list,watch,patch,update", "--resource=nodes"}).ok());
  ASSERT_TRUE(kubectl({"create", "clusterrolebinding", sa, "--clusterrole=" + sa,
                       "--serviceaccount=kube-system:" + sa}).ok());
  ExecResult token = kubectl({"create", "token", sa, "-n", "kube-system", "--duration=1h"});
  ASSERT_TRUE(token.ok()) << token.err;
  const std::string conf = d + "/" + sa + ".conf";
  std::filesystem::copy_file(d + "/admin.conf", conf, std::filesystem::copy_options::overwrite_existing);
  ASSERT_TRUE(exec({"kubectl", "--kubeconfig", conf, "config", "set-credentials", sa, "--token=" + token.out}).ok());
  ASSERT_TRUE(exec({"kubectl", "--kubeconfig", conf, "config", "set-context", "--current", "--user=" + sa}).ok());
  int port = freePort();
  Kcm kcm({"--kubeconfig=" + conf, "--leader-elect=false", "--secure-port=" + std::to_string(port), "--v=2",
           "--client-ca-file=" + d + "/pki/ca.crt",
           "--controllers=ttl-controller,pod-garbage-collector-controller"},
          "kcm-unhealthy");
  const std::string url = "https://127.0.0.1:" + std::to_string(port);
  ExecResult verbose;
  EXPECT_TRUE(waitFor([&] {
    verbose = curl({}, url + "/healthz?verbose");
    return verbose.out.find("[-]pod-garbage-collector-controller failed: reason withheld") != std::string::npos;
  }, 60s)) << verbose.out << "\n" << kcm.log().substr(0, 3000);
  EXPECT_NE(verbose.out.find("[+]ttl-controller ok"), std::string::npos) << verbose.out;
  EXPECT_EQ(verbose.out.substr(verbose.out.size() - 3), "500") << verbose.out;
  // As upstream, the checks are served under /healthz only: a sub-path is authorized (it is not in
  // --authorization-always-allow-paths: anonymous is forbidden with a Status) and then not found.
  EXPECT_EQ(curl({"--cert", d + "/pki/admin.crt", "--key", d + "/pki/admin.key"}, url + "/healthz/ttl-controller").out,
            "404 page not found\n\n404");
  ExecResult anonymous = curl({}, url + "/healthz/ttl-controller");
  EXPECT_NE(anonymous.out.find("\"reason\": \"Forbidden\""), std::string::npos) << anonymous.out;
  EXPECT_EQ(anonymous.out.substr(anonymous.out.size() - 3), "403");
  EXPECT_EQ(curl({}, url + "/healthz?exclude=pod-garbage-collector-controller").out, "ok\n200");
  std::string log = kcm.log();
  EXPECT_NE(log.find("[-]pod-garbage-collector-controller failed: informer for pods has not synced"),
            std::string::npos) << log.substr(0, 3000);
  EXPECT_NE(log.find("cannot list resource \"pods\""), std::string::npos) << log.substr(0, 3000);
  kubectl({"delete", "clusterrolebinding", sa});
  kubectl({"delete", "clusterrole", sa});
  kubectl({"delete", "serviceaccount", sa, "-n", "kube-system"});
  std::filesystem::remove(conf);
}

// Upstream waits for the apiserver in CreateControllerContext, i.e. inside run(): without leader election that is
// at once, and it fails after 10 s (cmd/kube-controller-manager/app/controllermanager.go). Checked beside upstream.
TEST_F(Daemon, UnreachableApiserverFailsAfterAboutTenSecondsWithoutLeaderElection) {
  int dead = freePort();
  const std::string upstream = std::string(std::getenv("CONTROL_PLANE_BIN")) + "/kube-controller-manager";
  for (const std::string& bin : {kcmBinary(), upstream}) {
    auto t0 = std::chrono::steady_clock::now();
    ExecResult r = exec({bin, "--master=https://127.0.0.1:" + std::to_string(dead), "--secure-port=0",
                         "--leader-elect=false"}, "", 60s);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.exitCode, 1) << bin << ": " << r.err;
    EXPECT_NE(r.err.find("failed to wait for apiserver being healthy"), std::string::npos) << bin << ": " << r.err;
    EXPECT_GE(took, 8.0) << bin;
    EXPECT_LE(took, 20.0) << bin;
  }
}

// With leader election the context is built only once leading: a standby whose apiserver is unreachable keeps
// trying for the lease (as upstream does) instead of exiting after 10 s.
TEST_F(Daemon, UnreachableApiserverKeepsALeaderElectingKcmTryingForTheLease) {
  int dead = freePort();
  const std::string upstream = std::string(std::getenv("CONTROL_PLANE_BIN")) + "/kube-controller-manager";
  std::vector<std::string> args = {"--master=https://127.0.0.1:" + std::to_string(dead), "--secure-port=0",
                                   "--leader-elect-retry-period=1s"};
  KcmProcess ours(args, "unreachable-ours");
  KcmProcess theirs(args, "unreachable-upstream", upstream);
  std::this_thread::sleep_for(15s);
  for (KcmProcess* p : {&ours, &theirs}) {
    EXPECT_EQ(p->waitExit(0ms), -1) << p->log().substr(0, 3000);
    EXPECT_NE(p->log().find("\"Error retrieving lease lock\""), std::string::npos) << p->log().substr(0, 3000);
    EXPECT_NE(p->log().find("lock=\"kube-system/kube-controller-manager\""), std::string::npos)
        << p->log().substr(0, 3000);
    EXPECT_EQ(p->log().find("failed to wait for apiserver being healthy"), std::string::npos) << p->log().substr(0, 3000);
    p->signal(SIGTERM);
  }
  // Without ControllerManagerReleaseLeaderElectionLockOnExit upstream installs no signal handler: SIGTERM kills it.
  EXPECT_EQ(theirs.waitExit(5s), 128 + SIGTERM);
  EXPECT_EQ(ours.waitExit(5s), 128 + SIGTERM) << ours.log().substr(0, 3000);
}

TEST_F(Daemon, HelpMatchesUpstreamByteForByte) {
  ExecResult ours = exec({kcmBinary(), "--help"});
  ASSERT_EQ(ours.exitCode, 0);
  ExecResult theirs = exec({std::string(std::getenv("CONTROL_PLANE_BIN")) + "/kube-controller-manager", "--help"});
  EXPECT_EQ(ours.out, theirs.out);
  EXPECT_NE(ours.out.find("\nGeneric flags:\n"), std::string::npos);
  EXPECT_NE(ours.out.find("\nDeployment-controller flags:\n"), std::string::npos);
  ExecResult v = exec({kcmBinary(), "--version"});
  ExecResult uv = exec({std::string(std::getenv("CONTROL_PLANE_BIN")) + "/kube-controller-manager", "--version"});
  EXPECT_EQ(v.out, uv.out);
  // --version=raw: upstream's fields in upstream's order, our build as one more field at the end.
  auto fieldNames = [](const std::string& raw) {
    std::string names;
    std::regex field(R"re((\w+):")re");
    for (auto it = std::sregex_iterator(raw.begin(), raw.end(), field); it != std::sregex_iterator(); ++it)
      names += (*it)[1].str() + ",";
    return names;
  };
  ExecResult raw = exec({kcmBinary(), "--version=raw"});
  ExecResult uraw = exec({std::string(std::getenv("CONTROL_PLANE_BIN")) + "/kube-controller-manager", "--version=raw"});
  EXPECT_EQ(fieldNames(raw.out), fieldNames(uraw.out) + "Build,") << raw.out << uraw.out;
}

}  // namespace
}  // namespace kcm::e2e

namespace kcm::e2e {
namespace {

// Last in this suite: it takes the apiserver away for a few seconds.
TEST_F(Daemon, LeaderExitsOneWhenTheApiserverGoesAway) {
  auto args = seedFlags();
  args.push_back("--secure-port=0");
  Kcm kcm(args, "kcm-apiserver-outage");
  ASSERT_TRUE(waitFor([&] { return kcm.log().find("\"Successfully acquired lease\"") != std::string::npos; }, 30s))
      << kcm.log();
  // Start-up done (every controller started, informers synced): an apiserver that vanishes during start-up
  // fails a controller's init instead ("error starting controllers", exit 1 too), which is another case.
  // The garbage collector logs this once its monitors synced, or after 30 s without them (upstream's wording).
  ASSERT_TRUE(waitFor([&] { return kcm.log().find("\"Proceeding to collect garbage\"") != std::string::npos; }, 45s))
      << kcm.log();
  std::string clusterName = Cluster::get().dir.substr(Cluster::get().dir.rfind('/') + 1);
  const std::string script = repoRoot() + "/hack/cluster.sh";
  ASSERT_TRUE(exec({"bash", script, "stop", clusterName, "kube-apiserver"}, "", 60s).ok());
  auto stopped = std::chrono::steady_clock::now();
  int code = kcm.waitExit(20s);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();
  ExecResult restart = exec({"bash", script, "start", clusterName, "kube-apiserver"}, "", 240s);
  ASSERT_TRUE(restart.ok()) << restart.err;
  EXPECT_EQ(code, 1) << kcm.log();
  EXPECT_LT(took, 12.0);
  EXPECT_NE(kcm.log().find("leaderelection lost"), std::string::npos);
}

}  // namespace
}  // namespace kcm::e2e

namespace kcm::e2e {
namespace {

TEST(ClientBuilder, ServiceAccountCredentialsActAsTheControllersServiceAccount) {
  auto cfg = client::loadKubeconfig(Cluster::get().kubeconfig);
  ASSERT_TRUE(cfg.ok());
  auto root = client::RestClient::create(*cfg);
  ASSERT_TRUE(root.ok());
  kubectl({"delete", "serviceaccount", "-n", "kube-system", "e2e-probe-controller", "--ignore-not-found"});
  controllers::ServiceAccountClientBuilder builder(*cfg, *root);
  auto c = builder.client("e2e-probe-controller");
  ASSERT_TRUE(c.ok()) << c.status().toString();
  // The ServiceAccount was created, and requests carry its token.
  EXPECT_TRUE(kubectl({"get", "serviceaccount", "-n", "kube-system", "e2e-probe-controller"}).ok());
  api::authentication::v1::SelfSubjectReview ssr;
  ssr.apiVersion = "authentication.k8s.io/v1";
  ssr.kind = "SelfSubjectReview";
  auto who = client::create(**c, "", ssr);
  ASSERT_TRUE(who.ok()) << who.status().toString();
  EXPECT_EQ(who->status.userInfo.username, "system:serviceaccount:kube-system:e2e-probe-controller");
  EXPECT_NE((*c)->config().userAgent.find("/e2e-probe-controller"), std::string::npos);
  // Without RBAC the service account cannot list pods cluster-wide: its own identity is in force.
  auto pods = client::listPage<api::core::v1::Pod>(**c, "", {});
  EXPECT_EQ(pods.status().code(), StatusCode::kForbidden) << pods.status().toString();
  controllers::SimpleClientBuilder simple(*cfg);
  auto sc = simple.client("deployment-controller");
  ASSERT_TRUE(sc.ok());
  EXPECT_TRUE(client::listPage<api::core::v1::Pod>(**sc, "", {}).ok());
  kubectl({"delete", "serviceaccount", "-n", "kube-system", "e2e-probe-controller"});
}

}  // namespace
}  // namespace kcm::e2e
