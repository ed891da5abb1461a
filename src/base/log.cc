#include "base/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace kcm::log {
namespace {
std::atomic<int> gVerbosity{0};
}

void setVerbosity(int v) { gVerbosity = v; }
int verbosity() { return gVerbosity.load(); }

void write(char severity, const char* file, int line, const std::string& msg) {
  using namespace std::chrono;
  auto now = system_clock::now();
  std::time_t t = system_clock::to_time_t(now);
  std::tm tm{};
  localtime_r(&t, &tm);
  long us = duration_cast<microseconds>(now.time_since_epoch()).count() % 1000000;
  const char* base = file;
  for (const char* p = file; *p; ++p)
    if (*p == '/') base = p + 1;
  char head[96];
  std::snprintf(head, sizeof head, "%c%02d%02d %02d:%02d:%02d.%06ld %7ld %s:%d] ", severity, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, us, static_cast<long>(syscall(SYS_gettid)), base, line);
  std::string out = head + msg + "\n";
  std::fwrite(out.data(), 1, out.size(), stderr);
}

}  // namespace kcm::log
