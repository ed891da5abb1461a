#include "base/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "base/metrics.h"

namespace kcm::metrics {

void updateProcessMetrics() {
  auto& reg = Registry::global();
  static const double start = [] {
    std::ifstream st("/proc/self/stat");
    std::string line;
    std::getline(st, line);
    std::istringstream in(line.substr(line.rfind(')') + 2));
    std::string f;
    for (int i = 3; i <= 22 && in >> f; ++i) {
    }
    double ticks = std::stod(f) / static_cast<double>(sysconf(_SC_CLK_TCK));
    std::ifstream up("/proc/uptime");
    double uptime = 0;
    up >> uptime;
    double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    return now - uptime + ticks;
  }();
  reg.gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.").set(start);
  std::ifstream st("/proc/self/stat");
  std::string line;
  std::getline(st, line);
  std::istringstream in(line.substr(line.rfind(')') + 2));
  std::string fields[30];
  for (int i = 0; i < 30 && in >> fields[i]; ++i) {
  }
  // fields[0] is field 3 (state): utime=14, stime=15, vsize=23, rss=24.
  double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  reg.counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.")
      .set((std::stod(fields[11]) + std::stod(fields[12])) / ticks);
  reg.gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.").set(std::stod(fields[20]));
  reg.gauge("process_resident_memory_bytes", "Resident memory size in bytes.")
      .set(std::stod(fields[21]) * static_cast<double>(sysconf(_SC_PAGESIZE)));
  int fds = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++fds;
    closedir(d);
  }
  reg.gauge("process_open_fds", "Number of open file descriptors.").set(fds - 2);
  reg.gauge("process_max_fds", "Maximum number of open file descriptors.").set(static_cast<double>(sysconf(_SC_OPEN_MAX)));
  // The address-space limit (RLIMIT_AS soft); unlimited reads as 2^64, as procfs reports it to the Go client.
  rlimit as{};
  double maxVm = 18446744073709551616.0;
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) maxVm = static_cast<double>(as.rlim_cur);
  reg.gauge("process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.").set(maxVm);
  // Bytes through every interface of the process's network namespace (/proc/self/net/dev), as the Go client sums.
  double rx = 0, tx = 0;
  std::ifstream dev("/proc/self/net/dev");
  for (std::string l; std::getline(dev, l);) {
    auto colon = l.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream f(l.substr(colon + 1));
    double v[9] = {0};
    for (double& x : v) f >> x;  // receive: bytes packets errs drop fifo frame compressed multicast; transmit: bytes
    rx += v[0];
    tx += v[8];
  }
  reg.counter("process_network_receive_bytes_total", "Number of bytes received by the process over the network.")
      .set(rx);
  reg.counter("process_network_transmit_bytes_total", "Number of bytes sent by the process over the network.").set(tx);
}

}  // namespace kcm::metrics
