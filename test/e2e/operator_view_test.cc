// The operator's view of the daemon beside upstream kube-controller-manager on the same cluster: each binary in
// turn runs the seed's command line, wins its own Lease and rolls out one Deployment; then
//  - /metrics: every family upstream exposes has the same type, label keys, buckets and help in ours, apart
//    from the families listed (with the reason) in docs/operations.md "Metrics";
//  - the log lines of that run: the messages of start-up, leader election and the rollout are there in both, and
//    every message both printed carries the same keys;
//  - the Events of the rollout: same reasons, types, reporting controllers and messages once names are masked.
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

#include "base/klog_text.h"
#include "framework/framework.h"
#include "framework/kcm_process.h"

namespace kcm::e2e {
namespace {

// ------------------------------------------------------------------------------------------------ /metrics
struct Family {
  std::string type, help;
  std::set<std::string> labelKeys;  // over every series, "le" and "quantile" aside
  std::set<std::string> buckets;
};

std::map<std::string, Family> parseMetrics(const std::string& text) {
  std::map<std::string, Family> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      auto sp = line.find(' ', 7);
      out[line.substr(7, sp - 7)].help = sp == std::string::npos ? "" : line.substr(sp + 1);
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      auto sp = line.find(' ', 7);
      out[line.substr(7, sp - 7)].type = line.substr(sp + 1);
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    size_t nameEnd = line.find_first_of("{ ");
    std::string name = line.substr(0, nameEnd);
    std::string labels = nameEnd != std::string::npos && line[nameEnd] == '{'
                             ? line.substr(nameEnd + 1, line.rfind('}') - nameEnd - 1)
                             : "";
    std::string family = name;
    for (const char* suffix : {"_bucket", "_sum", "_count"})
      if (name.size() > strlen(suffix) && name.compare(name.size() - strlen(suffix), std::string::npos, suffix) == 0 &&
          !out.count(name) && out.count(name.substr(0, name.size() - strlen(suffix))))
        family = name.substr(0, name.size() - strlen(suffix));
    Family& f = out[family];
    std::regex kv(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)")re");
    for (auto it = std::sregex_iterator(labels.begin(), labels.end(), kv); it != std::sregex_iterator(); ++it) {
      std::string k = (*it)[1];
      if (k == "le") f.buckets.insert((*it)[2]);
      else if (k != "quantile") f.labelKeys.insert(k);
    }
  }
  return out;
}

std::string join(const std::set<std::string>& s) {
  std::string o;
  for (const auto& x : s) o += (o.empty() ? "" : ",") + x;
  return o;
}

// Upstream families this build does not expose, by reason (docs/operations.md "Metrics" lists the same).
bool knownAbsent(const std::string& name) {
  static const std::vector<std::pair<std::string, const char*>> prefixes = {
      {"go_", "the Go runtime's own collector: no Go runtime here"},
  };
  for (const auto& [p, why] : prefixes)
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

// Families that get a first series only when a particular event happens, which one run may see and the other
// not: compared when both have them, tolerated when one lacks them.
bool onlyAfterAnEvent(const std::string& name) {
  return name.find("_stale_sync_skips_total") != std::string::npos ||  // a sync met a lagging informer cache
         name == "rest_client_request_retries_total" ||                 // the apiserver asked to retry (429)
         name == "node_ipam_controller_cidrset_cidrs_releases_total";   // a node's CIDR was released
}

// Messages upstream logs both from a controller's constructor context (whose logger carries the controller's
// name: logger=...) and from its Run context (no logger key), which of them a run shows depending on timing: the
// resource quota controller's monitor sync and cache-sync checks run at construction and again on each discovery
// resync. For these, the logger key is left out of the comparison.
bool loggerDependsOnThePath(const std::string& message) {
  static const std::set<std::string> m = {"quota monitor not synced", "quota monitor not synced: no monitors",
                                          "quota synced monitors", "QuotaMonitor created object count evaluator"};
  return m.count(message) != 0;
}

// ------------------------------------------------------------------------------------------------ logs
struct LogLine {
  char severity;
  std::string message;
  std::set<std::string> keys;
};

// klog text lines ("I1206 02:30:00.123456   12345 file.go:12] "msg" k="v" ..."), multi-line values joined.
std::vector<LogLine> parseKlog(const std::string& log) {
  static const std::regex header(R"(^([IWEF])\d{4} \d\d:\d\d:\d\d\.\d{6}\s+\d+ [^\]]+\] )");
  std::vector<std::string> entries;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (std::regex_search(line, header)) entries.push_back(line);
    else if (!entries.empty()) entries.back() += "\n" + line;
  }
  std::vector<LogLine> out;
  for (const std::string& e : entries) {
    std::smatch m;
    std::regex_search(e, m, header);
    LogLine l{m[1].str()[0], "", {}};
    std::string rest = e.substr(m[0].length());
    if (rest.empty() || rest[0] != '"') {  // printf-style: the text is the message
      l.message = rest.substr(0, rest.find('\n'));
      out.push_back(std::move(l));
      continue;
    }
    size_t i = log::klogValueEnd(rest, 0);
    l.message = rest.substr(1, i - 2);
    while (i < rest.size()) {
      while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\n')) ++i;
      size_t eq = rest.find('=', i);
      if (eq == std::string::npos) break;
      l.keys.insert(rest.substr(i, eq - i));
      i = log::klogValueEnd(rest, eq + 1);
    }
    out.push_back(std::move(l));
  }
  return out;
}

// Per message, the distinct key sets it was printed with. For each message both printed, every key set of ours
// must be one of upstream's; returns what is not (empty: same shape) and counts the common messages.
using KeyShapes = std::map<std::string, std::set<std::string>>;
std::string keyShapeReport(const KeyShapes& mine, const KeyShapes& theirs, size_t& common) {
  std::string report;
  for (const auto& [msg, keySets] : mine) {
    auto it = theirs.find(msg);
    if (it == theirs.end()) continue;
    ++common;
    for (const auto& ks : keySets) {
      if (it->second.count(ks)) continue;
      std::string theirsText;
      for (const auto& t : it->second) theirsText += " {" + t + "}";
      report += "\"" + msg + "\": ours {" + ks + "}, upstream's:" + theirsText + "\n";
    }
  }
  return report;
}

// ------------------------------------------------------------------------------------------------ the runs
struct BinaryRun {
  std::string metrics, log;
  std::vector<Json> events;
};

const std::string& upstreamBinary() {
  static const std::string b = std::string(std::getenv("CONTROL_PLANE_BIN")) + "/kube-controller-manager";
  return b;
}

// The seed's command line without what upstream has removed (as bench/lib.sh), on a free port, with a Lease of
// its own.
std::vector<std::string> flagsFor(int port, const std::string& lease) {
  std::vector<std::string> args;
  for (const auto& a : seedFlagsForCluster())
    if (a.rfind("--port=", 0) != 0 && a.rfind("--experimental-cluster-signing-duration", 0) != 0 &&
        a.rfind("--feature-gates=", 0) != 0)
      args.push_back(a);
  for (std::string a : std::vector<std::string>{"--cluster-signing-duration=876000h", "--v=4", "--secure-port=" + std::to_string(port),
                        "--leader-elect-resource-name=" + lease})
    args.push_back(a);
  return args;
}

std::string scrape(int port) {
  const std::string& d = Cluster::get().dir;
  ExecResult r = exec({"curl", "-sk", "--max-time", "10", "--cert", d + "/pki/admin.crt", "--key",
                       d + "/pki/admin.key", "https://127.0.0.1:" + std::to_string(port) + "/metrics"});
  return r.out;
}

class OperatorView : public E2ETest {
 protected:
  // Runs `binary` until it leads, rolls out Deployment `name` (2 replicas) in the test namespace, waits for the
  // controllers to settle, and returns its /metrics, its log and the Events of the rollout.
  BinaryRun runOnce(const std::string& binary, const std::string& name) {
    BinaryRun run;
    const int port = freePort();
    const std::string lease = "kcm-operator-view-" + name;
    KcmProcess kcm(flagsFor(port, lease), "operator-view-" + name, binary);
    EXPECT_TRUE(waitFor(
        [&] {
          return !kubectl({"get", "lease", "-n", "kube-system", lease, "-o", "jsonpath={.spec.holderIdentity}"})
                      .out.empty();
        },
        60s))
        << name << " did not lead:\n" << kcm.log().substr(0, 4000);
    // A node of its own (KWOK runs it), so this binary's node IPAM allocates a CIDR and its node lifecycle
    // controller sees a node arrive, as the other's did.
    const std::string node = "operator-view-" + name;
    kubectl({"apply", "-f", "-"},
            R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + node +
                R"(","annotations":{"kwok.x-k8s.io/node":"fake"},"labels":{"kubernetes.io/hostname":")" + node +
                R"("}},"status":{"allocatable":{"cpu":"32","memory":"256Gi","pods":"250"},)" +
                R"("capacity":{"cpu":"32","memory":"256Gi","pods":"250"}}})");
    EXPECT_TRUE(waitFor(
        [&] { return !kubectl({"get", "node", node, "-o", "jsonpath={.spec.podCIDR}"}).out.empty(); }, 60s))
        << name << " gave node " << node << " no podCIDR";
    apply(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":")" + name +
          R"("},"spec":{"replicas":2,"selector":{"matchLabels":{"app":")" + name +
          R"("}},"template":{"metadata":{"labels":{"app":")" + name +
          R"("}},"spec":{"tolerations":[{"operator":"Exists"}],"containers":[{"name":"c","image":"nginx"}]}}}})");
    ExecResult rollout = kubectl({"rollout", "status", "-n", ns(), "deployment/" + name, "--timeout=120s"}, "", 130s);
    EXPECT_TRUE(rollout.ok()) << name << ": " << rollout.out << rollout.err;
    // A Service in front of it (endpoints and endpointslice controllers) and one without a selector whose
    // Endpoints are written by hand (endpointslice mirroring): both binaries publish those controllers' families.
    apply(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":")" + name + R"("},"spec":{"selector":{"app":")" +
          name + R"("},"ports":[{"port":80}]}})");
    apply(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":")" + name +
          R"(-ext"},"spec":{"ports":[{"port":80}]}})");
    apply(R"({"apiVersion":"v1","kind":"Endpoints","metadata":{"name":")" + name +
          R"(-ext"},"subsets":[{"addresses":[{"ip":"10.0.0.1"}],"ports":[{"port":80}]}]})");
    for (const std::string svc : {name, name + "-ext"})
      EXPECT_TRUE(waitFor(
          [&] {
            return !kubectl({"get", "endpointslices", "-n", ns(), "-l", "kubernetes.io/service-name=" + svc, "-o",
                             "name"})
                        .out.empty();
          },
          60s))
          << name << " wrote no EndpointSlice for " << svc;
    // Every controller past its first syncs (the garbage collector's monitors, the resource quota's discovery).
    std::this_thread::sleep_for(20s);
    run.metrics = scrape(port);
    Json ev = kubectlJson({"get", "events", "-n", ns()});
    if (!ev.is_null())
      for (const auto& e : ev["items"])
        if (e["involvedObject"].value("name", "").rfind(name, 0) == 0) run.events.push_back(e);
    kcm.signal(SIGTERM);
    kcm.waitExit(15s);
    run.log = kcm.log();
    kubectl({"delete", "lease", "-n", "kube-system", lease, "--ignore-not-found"});
    kubectl({"delete", "node", node, "--ignore-not-found", "--wait=false"});
    // Scaled to zero so the next binary's controllers find nothing of this run left to do.
    kubectl({"delete", "deployment", "-n", ns(), name, "--cascade=orphan"});
    kubectl({"delete", "rs,pods", "-n", ns(), "-l", "app=" + name, "--wait=false"});
    kubectl({"delete", "service,endpoints,endpointslices", "-n", ns(), name, name + "-ext", "--ignore-not-found"});
    kubectl({"delete", "endpointslices", "-n", ns(), "--all"});
    return run;
  }

  static BinaryRun& upstream() { return runs()["upstream"]; }
  static BinaryRun& ours() { return runs()["ours"]; }
  static std::map<std::string, BinaryRun>& runs() {
    static std::map<std::string, BinaryRun> r;
    return r;
  }
  void ensureRuns() {
    if (runs().size() == 2) return;
    // Objects of earlier suites' namespaces still being torn down would give the first binary work (and metric
    // families) the second never sees: start once the cluster holds only this test's objects.
    waitFor(
        [&] {
          return kubectl({"get", "namespaces", "--field-selector=status.phase=Terminating", "-o", "name"}).out.empty();
        },
        180s, 2s);
    runs()["upstream"] = runOnce(upstreamBinary(), "upstream");
    runs()["ours"] = runOnce(kcmBinary(), "ours");
  }
};

TEST_F(OperatorView, MetricsMatchUpstreamByNameTypeLabelKeysBucketsAndHelp) {
  ensureRuns();
  auto theirs = parseMetrics(upstream().metrics), mine = parseMetrics(ours().metrics);
  ASSERT_GT(theirs.size(), 100u) << upstream().metrics.substr(0, 2000);
  ASSERT_GT(mine.size(), 60u) << ours().metrics.substr(0, 2000);
  std::vector<std::string> missing, extra, differ;
  size_t same = 0;
  for (const auto& [name, f] : theirs) {
    auto it = mine.find(name);
    if (it == mine.end()) {
      if (!knownAbsent(name) && !onlyAfterAnEvent(name)) missing.push_back(name);
      continue;
    }
    const Family& o = it->second;
    std::string d;
    if (o.type != f.type) d += " type " + o.type + " vs " + f.type + ";";
    if (o.labelKeys != f.labelKeys) d += " labels {" + join(o.labelKeys) + "} vs {" + join(f.labelKeys) + "};";
    if (!o.buckets.empty() && !f.buckets.empty() && o.buckets != f.buckets)
      d += " buckets " + join(o.buckets) + " vs " + join(f.buckets) + ";";
    if (o.help != f.help) d += " help \"" + o.help + "\" vs \"" + f.help + "\";";
    if (d.empty()) ++same;
    else differ.push_back(name + ":" + d);
  }
  for (const auto& [name, f] : mine)
    if (!theirs.count(name) && !onlyAfterAnEvent(name)) extra.push_back(name);
  std::string report;
  for (auto* list : {&missing, &extra, &differ})
    for (const auto& x : *list)
      report += (list == &missing ? "missing: " : list == &extra ? "only ours: " : "differs (ours vs upstream): ") + x +
                "\n";
  std::printf("metrics: upstream %zu families, ours %zu; %zu identical, %zu missing, %zu only ours, %zu differ\n",
              theirs.size(), mine.size(), same, missing.size(), extra.size(), differ.size());
  EXPECT_TRUE(missing.empty() && extra.empty() && differ.empty()) << report;
}

TEST_F(OperatorView, LogLinesOfStartupElectionAndRolloutHaveUpstreamsShape) {
  ensureRuns();
  auto theirs = parseKlog(upstream().log), mine = parseKlog(ours().log);
  ASSERT_GT(theirs.size(), 50u) << upstream().log.substr(0, 3000);
  ASSERT_GT(mine.size(), 50u) << ours().log.substr(0, 3000);
  // Per message, the distinct sets of keys it was printed with ("Starting" carries version= at start-up and
  // controller= for each controller).
  KeyShapes theirKeys, myKeys;
  auto shape = [](const LogLine& l) {
    std::set<std::string> keys = l.keys;
    if (loggerDependsOnThePath(l.message)) keys.erase("logger");
    return join(keys);
  };
  for (const auto& l : theirs) theirKeys[l.message].insert(shape(l));
  for (const auto& l : mine) myKeys[l.message].insert(shape(l));
  // The scenario's landmarks: start-up, the election, the informers, the rollout (deployment and replica set
  // controllers at -v=4).
  for (const char* m : {"Starting", "Attempting to acquire leader lease...", "Successfully acquired lease",
                        "Starting controller", "Waiting for caches to sync", "Caches are synced",
                        "Started syncing deployment", "Finished syncing deployment"}) {
    EXPECT_TRUE(theirKeys.count(m)) << "upstream did not log \"" << m << "\"";
    EXPECT_TRUE(myKeys.count(m)) << "ours did not log \"" << m << "\"";
  }
  // A message both printed: each way ours printed it is one of upstream's.
  size_t common = 0;
  const std::string report = keyShapeReport(myKeys, theirKeys, common);
  std::printf("logs: upstream %zu lines (%zu messages), ours %zu lines (%zu messages), %zu messages in both\n",
              theirs.size(), theirKeys.size(), mine.size(), myKeys.size(), common);
  EXPECT_GE(common, 20u);
  EXPECT_TRUE(report.empty()) << report;
  // Every line of ours is klog's structured form or a printf-style line as upstream's (no bare stderr text).
  size_t structured = 0;
  for (const auto& l : mine) structured += l.keys.empty() ? 0 : 1;
  EXPECT_GT(structured, mine.size() / 4);
}

// --logging-format=json: per message, the keys of ours are among upstream's (ts, caller, msg, v, the pairs).
TEST_F(OperatorView, JsonLogLinesHaveUpstreamsKeys) {
  auto runJson = [&](const std::string& binary, const std::string& name) {
    const std::string& d = Cluster::get().dir;
    KcmProcess kcm({"--kubeconfig=" + d + "/admin.conf", "--leader-elect=false", "--secure-port=0",
                    "--controllers=deployment,replicaset", "--logging-format=json", "--v=4"},
                   "operator-view-json-" + name, binary);
    KeyShapes keys;
    waitFor(
        [&] {
          return kcm.log().find("\"Caches are synced\"") != std::string::npos;
        },
        30s);
    std::this_thread::sleep_for(3s);
    kcm.signal(SIGTERM);
    kcm.waitExit(10s);
    std::istringstream in(kcm.log());
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] != '{') continue;
      Json j = Json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) continue;
      std::set<std::string> k;
      for (auto it = j.begin(); it != j.end(); ++it) k.insert(it.key());
      keys[j.value("msg", "")].insert(join(k));
    }
    return keys;
  };
  auto theirs = runJson(upstreamBinary(), "upstream"), mine = runJson(kcmBinary(), "ours");
  ASSERT_TRUE(theirs.count("Starting")) << "upstream printed no JSON \"Starting\" line";
  ASSERT_TRUE(mine.count("Starting")) << "ours printed no JSON \"Starting\" line";
  size_t common = 0;
  const std::string report = keyShapeReport(mine, theirs, common);
  std::printf("json logs: %zu messages upstream, %zu ours, %zu in both\n", theirs.size(), mine.size(), common);
  EXPECT_GE(common, 5u);
  EXPECT_TRUE(report.empty()) << report;
}

TEST_F(OperatorView, RolloutEventsMatchUpstreamApartFromNames) {
  ensureRuns();
  auto shape = [](const BinaryRun& r, const std::string& name) {
    std::vector<std::string> out;
    std::regex generated(name + R"((-[a-z0-9]{5,10})?(-[a-z0-9]{5})?)");
    for (const auto& e : r.events) {
      std::string component = e.value("source", Json::object()).value("component", "");
      if (component != "deployment-controller" && component != "replicaset-controller") continue;
      std::string msg = std::regex_replace(e.value("message", ""), generated, "NAME");
      out.push_back(e["involvedObject"].value("kind", "") + " " + e.value("type", "") + " " + e.value("reason", "") +
                 " " + component + " " + e.value("reportingComponent", "") + " " + msg);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  auto theirs = shape(upstream(), "upstream"), mine = shape(ours(), "ours");
  EXPECT_GE(theirs.size(), 3u);
  EXPECT_EQ(mine, theirs);
}

}  // namespace
}  // namespace kcm::e2e
