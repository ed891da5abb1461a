#pragma once
// klog-compatible text logging: `I1129 18:57:04.123456   12345 file.cc:123] "message" key="value"`.
// -v sets the verbosity; V(n) lines print when n <= verbosity. Thread-safe (one write per line).
#include <atomic>
#include <string>

namespace kcm::log {

void setVerbosity(int v);
int verbosity();
void write(char severity, const char* file, int line, const std::string& msg);

}  // namespace kcm::log

#define KLOG(sev, msg) ::kcm::log::write(sev, __FILE__, __LINE__, (msg))
#define KLOG_INFO(msg) KLOG('I', msg)
#define KLOG_WARNING(msg) KLOG('W', msg)
#define KLOG_ERROR(msg) KLOG('E', msg)
#define KLOG_V(n, msg)                                   \
  do {                                                   \
    if ((n) <= ::kcm::log::verbosity()) KLOG('I', msg);  \
  } while (0)
