#include "framework/kcm_process.h"

#include <gtest/gtest.h>

#include <thread>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "framework/framework.h"

namespace kcm::e2e {

std::string repoRoot() {
  const char* r = std::getenv("KCM_REPO_ROOT");
  return r ? r : ".";
}

// KCM_BINARY: another build of ours (hack/test-asan.sh runs the suite against the sanitizer build).
std::string kcmBinary() {
  const char* b = std::getenv("KCM_BINARY");
  return b && *b ? b : repoRoot() + "/_output/bin/kube-controller-manager";
}

int freePort() {
  ExecResult r = exec({"python3", "-c", "import socket;s=socket.socket();s.bind(('127.0.0.1',0));print(s.getsockname()[1])"});
  return std::atoi(r.out.c_str());
}

std::vector<std::string> seedFlagsForCluster(const std::vector<std::string>& extra) {
  std::ifstream f(repoRoot() + "/deploy/kube-controller-manager.yaml");
  std::vector<std::string> out;
  std::string line;
  bool in = false;
  while (std::getline(f, line)) {
    if (line == "  - command:") {
      in = true;
      continue;
    }
    if (!in) continue;
    if (line.rfind("    - ", 0) != 0) break;
    std::string arg = line.substr(6);
    if (arg == "kube-controller-manager") continue;
    for (size_t p; (p = arg.find("/etc/kubernetes")) != std::string::npos;) arg.replace(p, 15, Cluster::get().dir);
    out.push_back(arg);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

KcmProcess::KcmProcess(std::vector<std::string> args, const std::string& logName, const std::string& binary) {
  log_ = Cluster::get().dir + "/logs/" + logName + ".log";
  std::ofstream(log_, std::ios::trunc).flush();  // never read a previous run's log
  pid_ = fork();
  if (pid_ == 0) {
    setsid();
    FILE* lf = std::fopen(log_.c_str(), "a");
    dup2(fileno(lf), 1);
    dup2(fileno(lf), 2);
    std::vector<char*> argv;
    std::string bin = binary.empty() ? kcmBinary() : binary;
    argv.push_back(bin.data());
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp(bin.c_str(), argv.data());
    _exit(127);
  }
}

void KcmProcess::kill9() {
  if (pid_ > 0 && !exited_) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    exited_ = true;
  }
}

void KcmProcess::signal(int sig) {
  if (pid_ > 0 && !exited_) ::kill(pid_, sig);
}

int KcmProcess::waitExit(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      exited_ = true;
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

std::string KcmProcess::log() const {
  std::ifstream f(log_);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace kcm::e2e

namespace kcm::e2e {

KcmProcess* startSoloKcm(const std::string& controllers, const std::vector<std::string>& extra,
                         const std::string& logName) {
  const char* dir = std::getenv("CLUSTER_DIR");
  std::vector<std::string> args = {"--kubeconfig=" + std::string(dir ? dir : "") + "/controller-manager.conf",
                                   "--use-service-account-credentials=true", "--leader-elect=false",
                                   "--secure-port=0", "--controllers=" + controllers};
  args.insert(args.end(), extra.begin(), extra.end());
  auto* p = new KcmProcess(args, logName);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (p->log().find("Started controller") == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "kcm did not start its controllers:\n" << p->log();
      return p;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return p;
}

}  // namespace kcm::e2e
