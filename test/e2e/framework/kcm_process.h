#pragma once
// Our kube-controller-manager as a child process of a test, with its log in CLUSTER_DIR/logs/<name>.log, killed
// (SIGKILL) when destroyed; and the seed's command line (deploy/kube-controller-manager.yaml) for this cluster.
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace kcm::e2e {

std::string repoRoot();
std::string kcmBinary();
int freePort();
// deploy/kube-controller-manager.yaml's command line with /etc/kubernetes mapped to CLUSTER_DIR, then `extra`.
std::vector<std::string> seedFlagsForCluster(const std::vector<std::string>& extra = {});

class KcmProcess;
// Whether a kcm's log (at --v=1 or more) shows a controller starting: upstream's V(1) "Controller starting..."
// (neither binary logs anything per controller at --v=0); `controller` empty: any.
bool controllerStarting(const std::string& log, const std::string& controller = "");

// A kcm without leader election or serving, running only `controllers` with service-account credentials (as the
// seed's command line) at --v=1 plus `extra` flags; returned once a controller started (null after a test failure
// when none did within 30 s).
KcmProcess* startSoloKcm(const std::string& controllers, const std::vector<std::string>& extra,
                         const std::string& logName);

class KcmProcess {
 public:
  // `binary` empty: our kube-controller-manager; otherwise a program looked up on PATH (kubectl --watch, ...).
  KcmProcess(std::vector<std::string> args, const std::string& logName, const std::string& binary = "");
  ~KcmProcess() { kill9(); }
  KcmProcess(const KcmProcess&) = delete;
  KcmProcess& operator=(const KcmProcess&) = delete;
  void kill9();
  // Sends sig (SIGTERM, SIGINT) to the process.
  void signal(int sig);
  // Exit code if it exited within `timeout`, else -1.
  int waitExit(std::chrono::milliseconds timeout);
  std::string log() const;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  std::string log_;
};

}  // namespace kcm::e2e
