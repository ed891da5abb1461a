#include "framework/kcm_process.h"

#include <gtest/gtest.h>

#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
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

// Below the kernel's ephemeral range, as hack/cluster.sh's free_ports: a port bind(0) handed out could be taken by
// an outgoing connection before the kcm binds it.
int freePort() {
  for (int attempt = 0; attempt < 200; ++attempt) {
    static std::mt19937 rng(std::random_device{}());
    const int port = 10000 + static_cast<int>(rng() % 22000);
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool free = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    if (fd >= 0) ::close(fd);
    if (free) return port;
  }
  return 0;
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
    // Dies with the test binary (a crash, a kill): no kcm of a dead test keeps acting on the cluster.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
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

bool controllerStarting(const std::string& log, const std::string& controller) {
  const std::string line = "\"Controller starting...\"" + (controller.empty() ? "" : " controller=\"" + controller + "\"");
  return log.find(line) != std::string::npos;
}

KcmProcess* startSoloKcm(const std::string& controllers, const std::vector<std::string>& extra,
                         const std::string& logName) {
  const char* dir = std::getenv("CLUSTER_DIR");
  std::vector<std::string> args = {"--kubeconfig=" + std::string(dir ? dir : "") + "/controller-manager.conf",
                                   "--use-service-account-credentials=true", "--leader-elect=false",
                                   "--secure-port=0", "--v=1", "--controllers=" + controllers};
  args.insert(args.end(), extra.begin(), extra.end());
  auto* p = new KcmProcess(args, logName);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!controllerStarting(p->log())) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "kcm did not start its controllers:\n" << p->log();
      return p;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return p;
}

}  // namespace kcm::e2e
