#include "base/process_metrics.h"

#include <dirent.h>
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
}

}  // namespace kcm::metrics
