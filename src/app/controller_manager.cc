#include "app/controller_manager.h"
#include "app/running_controllers.h"
#include "app/component_metrics.h"

#include <unistd.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <map>
#include <optional>
#include <mutex>
#include <tuple>
#include <cstdio>
#include <thread>

#include "base/executor.h"
#include "base/log.h"
#include "client/rest_client.h"
#include "client/write_fence.h"
#include "controllers/client_builder.h"
#include "controllers/context.h"
#include "controllers/controller.h"
#include "controllers/register.h"
#include "controllers/registry.h"
#include "healthz/server.h"
#include "informers/factory.h"
#include "leaderelection/leader_elector.h"
#include "leaderelection/leader_migration.h"
#include "options/feature_gates.h"
#include "options/options.h"
#include "options/typed_options.h"
#include "options/validation.h"
#include "version/version.h"

namespace kcm::app {
namespace {

using log::quote;

// component-base cli.Run logs errors after parsing as `"command failed" err="..."` and exits 1.
int commandFailed(const std::string& err) {
  KLOG_ERROR("\"command failed\" err=" + quote(err));
  return 1;
}

std::string aggregate(const std::vector<std::string>& errs) {
  if (errs.size() == 1) return errs[0];
  std::string s = "[";
  for (size_t i = 0; i < errs.size(); ++i) s += (i ? ", " : "") + errs[i];
  return s + "]";
}

std::stop_source gStop;
// Leader-elected upstream without ControllerManagerReleaseLeaderElectionLockOnExit installs no signal handler:
// SIGTERM kills it (status 143 to a shell). Set in that mode so we die by the signal the same way.
std::atomic<bool> gDieOnSignal{false};

// SIGTERM/SIGINT are blocked in every thread (the mask is set before the first thread starts and inherited) and
// taken by one thread with sigwait: stopping runs stop callbacks that lock, which must never happen inside a
// signal handler. A second signal exits at once with 1, as upstream's signal handler does.
void handleSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    for (int n = 0;; ++n) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (gDieOnSignal.load()) {
        std::fflush(stdout);
        std::fflush(stderr);
        std::signal(sig, SIG_DFL);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
        raise(sig);
      }
      if (n > 0) {
        std::fflush(stdout);
        std::fflush(stderr);
        std::_Exit(1);
      }
      gStop.request_stop();
    }
  }).detach();
}

// WaitForAPIServer: GET /healthz now and every second; fail after 10 s.
Status waitForAPIServer(client::RestClient& c, std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last;
  while (true) {
    client::Request req;
    req.path = "/healthz";
    req.accept = "text/plain";
    req.timeout = std::chrono::seconds(2);
    auto r = c.send(req);
    if (r.ok() && r->body == "ok") return Status::Ok();
    last = r.ok() ? "healthz returned " + r->body : r.status().message();
    KLOG_ERROR("\"Failed to check apiserver health\" err=" + quote(last));
    if (std::chrono::steady_clock::now() + std::chrono::seconds(1) > deadline) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return Status(StatusCode::kUnavailable, "failed to wait for apiserver being healthy: timed out waiting for the condition");
}

}  // namespace

int run(const std::vector<std::string>& args) {
  handleSignals();  // first: before any other thread exists
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // JSON logs go to stdout: a line is out before any _Exit
  if (Status s = controllers::registerControllerInitFuncs(); !s.ok()) {
    std::fprintf(stderr, "Error: %s\n", s.message().c_str());
    return 1;
  }
  auto parsed = options::parseCommandLine(args);
  if (!parsed.ok()) {
    const std::string& msg = parsed.status().message();
    if (msg.rfind("unknown flag", 0) == 0 || msg.rfind("unknown shorthand", 0) == 0)
      std::fprintf(stderr, "%s\n", options::usage().c_str());
    std::fprintf(stderr, "Error: %s\n", msg.c_str());
    return 1;
  }
  options::CommandLine& cl = *parsed;
  for (const auto& w : cl.warnings) std::fprintf(stderr, "%s\n", w.c_str());
  if (cl.help) {
    std::fputs(options::help().c_str(), stdout);
    return 0;
  }
  if (cl.version) {
    if (*cl.version == "raw") {
      std::printf("%s\n", version::rawLine().c_str());
    } else if (*cl.version != "false") {
      std::printf("%s\n", version::versionLine().c_str());
    }
    if (*cl.version != "false") return 0;
  }
  const options::FlagValues& f = cl.flags;
  // Typed options, then validation (aggregated, as upstream's Validate), then the Config.
  options::KubeControllerManagerOptions opts;
  std::vector<std::string> errs = options::fromFlags(f, opts);
  log::setVerbosity(opts.logs.v);
  log::setVModule(opts.logs.vmodule);
  if (opts.logs.loggingFormat == "json") {
    log::setJsonFormat(true);
  } else if (opts.logs.loggingFormat != "text") {
    return commandFailed("logging.format: Unsupported value: \"" + opts.logs.loggingFormat +
                         "\": supported values: \"json\", \"text\"");
  }

  // Feature gates.
  options::FeatureGates gates;
  std::vector<std::string> gateWarnings;
  for (const auto& fg : opts.generic.featureGates)
    if (Status s = gates.set(fg, gateWarnings); !s.ok()) return commandFailed(s.message());
  for (const auto& w : gateWarnings) KLOG_WARNING(w);
  app::registerComponentMetrics(gates);
  informers::setWatchListClientEnabled(gates.enabled("WatchListClient"));  // client-go's gate, kcm's flag

  for (auto& e : options::validate(opts, controllers::validateControllers(opts.generic.controllers)))
    errs.push_back(std::move(e));
  if (!errs.empty()) return commandFailed(aggregate(errs));
  for (const auto& [k, v] : f.dump()) KLOG_V(1, "FLAG: --" + k + "=" + quote(v));
  for (const char* name : options::notImplementedFlags())
    if (f.changed(name))
      KLOG_WARNING("\"Flag is accepted but not implemented by this kube-controller-manager; it has no effect\" flag=" +
                   quote(std::string("--") + name));
  KLOG_INFO("\"Starting\" version=" + quote(version::get().gitVersion));

  // Config: REST config, clients.
  auto restCfg = client::buildConfigFromFlags(opts.misc.master, opts.misc.kubeconfig);
  if (!restCfg.ok()) return commandFailed(restCfg.status().message());
  restCfg->qps = opts.generic.kubeApiQps;
  restCfg->burst = opts.generic.kubeApiBurst;
  restCfg->contentType = opts.generic.kubeApiContentType;
  restCfg->userAgent = version::userAgent("kube-controller-manager");
  auto rootClient = client::RestClient::create(*restCfg);
  if (!rootClient.ok()) return commandFailed(rootClient.status().message());
  // Leader migration (upstream's LeaderMigrationOptions.ApplyTo): the configuration is read and checked whenever
  // the flag is on; it takes effect only with leader election.
  std::optional<leaderelection::LeaderMigrator> migrator;
  if (opts.leaderMigration.enableLeaderMigration) {
    auto lm = leaderelection::LoadLeaderMigrationConfiguration(opts.leaderMigration.leaderMigrationConfig);
    if (!lm.ok()) return commandFailed(lm.status().message());
    if (opts.generic.leaderElect) migrator.emplace(*lm, "kube-controller-manager");
  }

  // Secure serving, before leader election so standbys answer health checks.
  std::unique_ptr<healthz::SecureServer> server;
  const auto& secureServing = opts.secureServing;
  const auto& authentication = opts.authentication;
  const auto& authorization = opts.authorization;
  if (secureServing.securePort > 0) {
    healthz::ServingConfig sc;
    sc.bindAddress = secureServing.bindAddress;
    sc.port = secureServing.securePort;
    sc.certFile = secureServing.tlsCertFile;
    sc.keyFile = secureServing.tlsPrivateKeyFile;
    sc.certDir = secureServing.certDir;
    sc.tlsMinVersion = secureServing.tlsMinVersion;
    sc.tlsCipherSuites = secureServing.tlsCipherSuites;
    sc.sniCertKeys = secureServing.tlsSniCertKey;
    sc.clientCAFile = authentication.clientCaFile;
    sc.alwaysAllowPaths = authorization.authorizationAlwaysAllowPaths;
    sc.requestheaderClientCAFile = authentication.requestheaderClientCaFile;
    sc.requestheaderAllowedNames = authentication.requestheaderAllowedNames;
    sc.requestheaderUsernameHeaders = authentication.requestheaderUsernameHeaders;
    sc.requestheaderGroupHeaders = authentication.requestheaderGroupHeaders;
    // Delegated authentication and authorization, as upstream's DelegatingAuthenticationOptions /
    // DelegatingAuthorizationOptions: TokenReview and SubjectAccessReview through these kubeconfigs.
    for (auto [flag, path, target] :
         {std::tuple{"authentication-kubeconfig", &authentication.authenticationKubeconfig, &sc.authnClient},
          std::tuple{"authorization-kubeconfig", &authorization.authorizationKubeconfig, &sc.authzClient}}) {
      if (path->empty()) continue;
      auto cfg = client::loadKubeconfig(*path);
      if (!cfg.ok()) return commandFailed("--" + std::string(flag) + ": " + cfg.status().message());
      cfg->qps = 200;
      cfg->burst = 400;
      cfg->userAgent = version::userAgent("kube-controller-manager", "delegated-auth");
      auto c = client::RestClient::create(*cfg);
      if (!c.ok()) return commandFailed("--" + std::string(flag) + ": " + c.status().message());
      *target = *c;
    }
    sc.authnCacheTTL = std::chrono::duration_cast<std::chrono::seconds>(authentication.authenticationTokenWebhookCacheTtl);
    sc.authzCacheTTL = std::chrono::duration_cast<std::chrono::seconds>(authorization.authorizationWebhookCacheAuthorizedTtl);
    sc.configz = "{\"componentconfig\":" + options::toConfigz(opts) + "}";
    auto s = healthz::SecureServer::create(sc);
    if (!s.ok()) return commandFailed(s.status().message());
    server = std::move(s).value();
    if (Status st = server->start(); !st.ok()) return commandFailed(st.message());
    KLOG_INFO("\"Serving securely on " + sc.bindAddress + ":" + std::to_string(sc.port) + "\"");
  }

  const std::vector<std::string> controllerList = controllers::canonicalizeControllers(opts.generic.controllers);
  // upstream's run(): CreateControllerContext (which waits for the apiserver), BuildControllers, start, and wait
  // for stop. With leader election it runs only once leading, so a standby whose apiserver is unreachable keeps
  // trying for the lease instead of exiting. An error is returned before any controller started.
  // With leader migration the main lock runs the controllers the configuration does not list (and the
  // serviceaccount-token controller, whose start makes the process ready for the migration lock), the migration
  // lock the listed ones this component may run.
  enum class RunSet { kAll, kMain, kMigrated };
  std::atomic<bool> migrationReady{false};
  // `fence`: the write fence of the lock this set runs under (null without leader election).
  auto startControllers = [&](std::stop_token stop, RunSet set,
                              std::shared_ptr<const client::WriteFence> fence) -> Status {
    // CreateControllerContext.
    controllers::ControllerContext ctx;
    ctx.options = &opts;
    ctx.featureGates = &gates;
    ctx.rootClient = *rootClient;
    ctx.stop = stop;
    if (server)
      ctx.addDebugHandler = [srv = server.get()](const std::string& path, std::function<std::string()> content) {
        srv->addDebugHandler(path, std::move(content));
      };
    // The controllers' and informers' clients share one cancellation, requested when leading stops (upstream's
    // context): requests still queued or retrying end at once instead of holding the shutdown up.
    client::RestConfig ctlCfg = *restCfg;
    ctlCfg.cancel = std::make_shared<std::stop_source>();
    // Their writes are fenced by the lease (client/write_fence.h); so are the controllers' writes made with the root
    // identity (the token controller), through a root client of their own. Minting per-controller credentials
    // (their ServiceAccounts, TokenRequests) goes through the process's root client, unfenced.
    ctlCfg.fence = std::move(fence);
    if (ctlCfg.fence) {
      auto leadingRoot = client::RestClient::create(ctlCfg);
      if (!leadingRoot.ok()) return leadingRoot.status();
      ctx.rootClient = *leadingRoot;
    }
    if (opts.generic.useServiceAccountCredentials)
      ctx.clientBuilder = std::make_unique<controllers::ServiceAccountClientBuilder>(ctlCfg, *rootClient);
    else
      ctx.clientBuilder = std::make_unique<controllers::SimpleClientBuilder>(ctlCfg);
    // Upstream's rootClientBuilder clients: "shared-informers" for the typed factory, "metadata-informers" for
    // metadata informers, each with its own rate limiter (and User-Agent suffix).
    controllers::SimpleClientBuilder rootBuilder(ctlCfg);
    auto informersClient = rootBuilder.client("shared-informers");
    auto metadataClient = rootBuilder.client("metadata-informers");
    if (!informersClient.ok() || !metadataClient.ok()) {
      Status s = informersClient.ok() ? metadataClient.status() : informersClient.status();
      KLOG_ERROR("\"Error building controller context\" err=" + quote(s.message()));
      return s;
    }
    ctx.informerFactory = std::make_unique<informers::SharedInformerFactory>(
        *informersClient, informers::resyncPeriod(std::chrono::duration_cast<Clock::Duration>(opts.generic.minResyncPeriod)), RealClock::get(),
        *metadataClient);
    ctx.informerFactory->setInformerName("kube-controller-manager");
    // If the apiserver is not up yet, wait a while before failing (apiserver and kcm often start together).
    if (Status s = waitForAPIServer(**informersClient, std::chrono::seconds(10)); !s.ok()) {
      KLOG_ERROR("\"Error building controller context\" err=" + quote(s.message()));
      return s;
    }
    ctx.discovery = std::make_shared<client::DiscoveryClient>(*rootClient);
    if (auto res = ctx.discovery->serverPreferredResources(); !res.ok())
      KLOG_ERROR("\"unable to get all supported resources from server\" err=" + quote(res.status().message()));
    // The discovery REST mapper is reset every 30 s so resources that appear later (CRDs) are found.
    Periodic mapperReset;
    mapperReset.start(RealClock::get(), std::chrono::seconds(30), stop,
                      [d = ctx.discovery, first = true]() mutable {
                        if (!first) d->invalidate();
                        first = false;
                      });

    auto health = std::make_shared<ControllerHealth>();
    std::vector<informers::InformerBase*> used;  // informers handed out during the current build
    ctx.informerFactory->setAccessObserver([&used](informers::InformerBase& i) { used.push_back(&i); });
    // BuildControllers: serviceaccount-token first (it must issue tokens before other controllers need them).
    std::vector<const controllers::ControllerDescriptor*> order;
    for (const auto& d : controllers::controllerDescriptors())
      if (d.requiresSpecialHandling) order.insert(order.begin(), &d);
      else order.push_back(&d);
    RunningControllers running;
    bool saTokenBuilt = false;
    for (const auto* d : order) {
      if (stop.stop_requested()) break;
      if (migrator && set != RunSet::kAll) {
        const auto r = migrator->FilterFunc(d->name);
        if (set == RunSet::kMain && !d->requiresSpecialHandling && r != leaderelection::FilterResult::kNonMigrated)
          continue;
        if (set == RunSet::kMigrated && (d->requiresSpecialHandling || r != leaderelection::FilterResult::kMigrated))
          continue;
      }
      // The serviceaccount-token controller is built whatever --controllers says (upstream's BuildControllers
      // starts it before the loop that checks IsControllerEnabled); only a missing key keeps it off.
      if (!d->requiresSpecialHandling && !controllers::isControllerEnabled(d->name, controllerList)) {
        KLOG_INFO("\"Warning: controller is disabled\" controller=" + quote(d->name));
        continue;
      }
      if (std::any_of(d->requiredFeatureGates.begin(), d->requiredFeatureGates.end(),
                      [&](const std::string& g) { return !gates.enabled(g); })) {
        std::string list;
        for (const auto& g : d->requiredFeatureGates) list += (list.empty() ? "" : " ") + g;
        KLOG_INFO("\"Controller is disabled by a feature gate\" controller=" + quote(d->name) +
                  " requiredFeatureGates=[" + list + "]");
        continue;
      }
      if (d->name == "serviceaccount-token-controller" &&
          opts.serviceaccountController.serviceAccountPrivateKeyFile.empty()) {
        KLOG_INFO("\"Controller is disabled because there is no private key\" logger=" + quote(d->name) +
                  " controller=" + quote(d->name));
        continue;
      }
      KLOG_INFO("\"Starting controller\" controller=" + quote(d->name));
      used.clear();
      auto built = d->init(ctx);
      if (built.status().code() == StatusCode::kCancelled) {  // the init chose not to run it (upstream: nil)
        KLOG_INFO("\"Warning: skipping controller\" controller=" + quote(d->name) +
                  " reason=" + quote(built.status().message()));
        continue;
      }
      if (!built.ok()) {  // upstream's BuildControllers fails and so does the process
        KLOG_ERROR("\"Error initializing a controller\" err=" + quote(built.status().message()) +
                   " controller=" + quote(d->name));
        KLOG_ERROR("\"Error building controllers\" err=" + quote(built.status().message()));
        std::fflush(stdout);
        std::fflush(stderr);
        std::_Exit(1);
      }
      {
        std::lock_guard l(health->mu);
        auto& mine = health->informersOf[d->name];
        for (auto* i : used)
          if (std::find(mine.begin(), mine.end(), i) == mine.end()) mine.push_back(i);
      }
      if (server)
        server->addHealthCheck(d->name, [health, name = d->name] { return controllerHealth(*health, name); });
      if (d->requiresSpecialHandling) saTokenBuilt = true;
      running.add(d->name, std::move(built).value());
    }
    ctx.informerFactory->setAccessObserver({});
    // Informers first, then every controller concurrently, each after its own jittered start interval.
    ctx.informerFactory->start(stop);
    ctx.informersStarted = true;
    {
      std::lock_guard l(health->mu);
      health->informersStartedAt = std::chrono::steady_clock::now();
    }
    if (set == RunSet::kMain) {
      // Ready for the migration lock once the serviceaccount-token controller runs (upstream wraps its
      // constructor); without that controller (no private key), once the others are built.
      running.setOnStart([&migrationReady](const std::string& name) {
        if (name == "serviceaccount-token-controller") migrationReady = true;
      });
      if (!saTokenBuilt) migrationReady = true;
    }
    running.startAll(opts.generic.controllerStartInterval, stop);
    while (!stop.stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ctlCfg.cancel->request_stop();
    {
      std::lock_guard l(health->mu);
      health->alive = false;
    }
    shutdownWithin(ctx, running, opts.generic.controllerShutdownTimeout);
    return Status::Ok();
  };

  if (!opts.generic.leaderElect) {
    if (Status s = startControllers(gStop.get_token(), RunSet::kAll, nullptr); !s.ok()) return commandFailed(s.message());
    return 0;
  }

  auto leClient = client::RestClient::create([&] {
    auto c = *restCfg;
    c.userAgent = version::userAgent("kube-controller-manager", "leader-election");
    c.timeoutSeconds = static_cast<int>(
        std::chrono::duration_cast<std::chrono::seconds>(opts.generic.leaderElectRenewDeadline).count());
    return c;
  }());
  if (!leClient.ok()) return commandFailed(leClient.status().message());
  leaderelection::Config lc;
  lc.lockNamespace = opts.generic.leaderElectResourceNamespace;
  lc.lockName = opts.generic.leaderElectResourceName;
  lc.identity = leaderelection::defaultIdentity();
  lc.leaseDuration = std::chrono::duration_cast<Clock::Duration>(opts.generic.leaderElectLeaseDuration);
  lc.renewDeadline = std::chrono::duration_cast<Clock::Duration>(opts.generic.leaderElectRenewDeadline);
  lc.retryPeriod = std::chrono::duration_cast<Clock::Duration>(opts.generic.leaderElectRetryPeriod);
  lc.fence = std::make_shared<client::WriteFence>();
  // Upstream cancels the leader-election context when OnStartedLeading returns, so a run that failed (or ended)
  // stops leading: OnStoppedLeading then exits.
  std::stop_source electionStop;
  std::stop_callback linkSignals(gStop.get_token(), [&electionStop] { electionStop.request_stop(); });
  std::mutex runErrMu;
  Status runErr;
  lc.onStartedLeading = [&](std::stop_token stop) {
    if (migrator) KLOG_INFO("\"leader migration: starting main controllers.\"");
    Status s = startControllers(stop, migrator ? RunSet::kMain : RunSet::kAll, lc.fence);
    if (!s.ok()) {
      std::lock_guard l(runErrMu);
      runErr = s;
    }
    electionStop.request_stop();
  };
  // Upstream exits 1 whenever leading stops and dies by a SIGTERM, unless ControllerManagerReleaseLeaderElectionLockOnExit
  // is on: then a SIGTERM stops the controllers, the Lease is handed back, and the process exits 0.
  const bool releaseOnExit = gates.enabled("ControllerManagerReleaseLeaderElectionLockOnExit");
  lc.releaseOnCancel = releaseOnExit;
  gDieOnSignal = !releaseOnExit;
  lc.onStoppedLeading = [releaseOnExit] {
    KLOG_ERROR("\"leaderelection lost/stopped\"");
    if (releaseOnExit) return;
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(1);
  };
  lc.onNewLeader = [id = lc.identity](const std::string& holder) {
    if (holder != id) KLOG_INFO("\"New leader elected\" identity=" + quote(holder));
  };
  // The process's own broadcaster (upstream's c.EventRecorder: root client, source kube-controller-manager, no
  // host) reports the LeaderElection events on the Lease.
  client::EventBroadcaster processEvents(*rootClient, "");
  auto processRecorder = processEvents.newRecorder("kube-controller-manager");
  lc.recordEvent = [processRecorder](const client::ObjectReference& lease, const std::string& message) {
    processRecorder->event(lease, client::kEventTypeNormal, "LeaderElection", message);
  };
  KLOG_INFO("\"Leader election identity\" identity=" + quote(lc.identity));
  if (migrator) KLOG_INFO("\"starting leader migration\"");
  leaderelection::LeaderElector elector(*leClient, lc);
  // The migration lock: same namespace, identity and timings, the configuration's leaderName.
  std::unique_ptr<leaderelection::LeaderElector> migrationElector;
  if (migrator && migrator->config().resourceLock == leaderelection::kResourceLockLeases) {
    leaderelection::Config mc = lc;
    mc.lockName = migrator->config().leaderName;
    mc.fence = std::make_shared<client::WriteFence>();
    mc.onStartedLeading = [&, fence = mc.fence](std::stop_token stop) {  // mc ends with this block
      KLOG_INFO("\"leader migration: starting migrated controllers.\"");
      Status s = startControllers(stop, RunSet::kMigrated, fence);
      if (!s.ok()) {
        std::lock_guard l(runErrMu);
        runErr = s;
      }
      electionStop.request_stop();
    };
    mc.onStoppedLeading = [releaseOnExit] {
      KLOG_ERROR("\"migration leaderelection lost/stopped\"");
      if (releaseOnExit) return;
      std::fflush(stdout);
      std::fflush(stderr);
      std::_Exit(1);
    };
    migrationElector = std::make_unique<leaderelection::LeaderElector>(*leClient, mc);
  }
  if (server) server->addHealthCheck("leaderElection", [&elector, m = migrationElector.get()] {
    return elector.healthy() && (!m || m->healthy())
               ? Status::Ok()
               : Status(StatusCode::kUnavailable, "failed election to renew leadership on lease");
  });
  // The migration lock is tried only once the main lock is held and the serviceaccount-token controller runs,
  // so one instance never holds the migration lock while another holds the main one.
  std::jthread migration;
  if (migrator)
    migration = std::jthread([&] {
      const std::stop_token stop = electionStop.get_token();
      while (!migrationReady && !stop.stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (stop.stop_requested()) return;
      if (!migrationElector) {  // client-go's NewFromKubeconfig refuses the endpoints lock
        KLOG_ERROR("\"Error creating lock\" err=\"endpoints lock is removed, migrate to leases\"");
        std::fflush(stdout);
        std::fflush(stderr);
        std::_Exit(1);
      }
      migrationElector->run(stop);
    });
  elector.run(electionStop.get_token());
  electionStop.request_stop();
  if (migration.joinable()) migration.join();
  if (server) server->stop();
  std::lock_guard l(runErrMu);
  if (!runErr.ok()) return commandFailed(runErr.message());
  return 0;
}

}  // namespace kcm::app
