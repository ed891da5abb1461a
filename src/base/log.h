#pragma once
// klog-compatible text logging: `I1129 18:57:04.123456   12345 file.cc:123] "message" key="value"`.
// -v sets the verbosity; V(n) lines print when n <= verbosity. Thread-safe (one write per line).
#include <atomic>
#include <string>

namespace kcm::log {

void setVerbosity(int v);
int verbosity();
// --logging-format=json: one JSON object per line ({"ts","caller","msg","v"} like component-base's JSON logger).
void setJsonFormat(bool json);
// --vmodule=pattern=N,...: per-file verbosity (file base name without extension, glob '*' allowed).
void setVModule(const std::string& spec);
// The verbosity in force for a source file (vmodule match, else -v).
int verbosityFor(const char* file);
// One line: klog's text header and msg, or with --logging-format=json upstream's JSON object (ts in ms, caller,
// msg, v for info lines, then msg's key="value" pairs as fields). `v`: the verbosity the line was logged at.
void write(char severity, const char* file, int line, const std::string& msg, int v = 0);
// A klog key=value value: the string in double quotes, '"' and '\\' escaped.
std::string quote(const std::string& s);

}  // namespace kcm::log

#define KLOG(sev, msg) ::kcm::log::write(sev, __FILE__, __LINE__, (msg))
#define KLOG_INFO(msg) KLOG('I', msg)
#define KLOG_WARNING(msg) KLOG('W', msg)
#define KLOG_ERROR(msg) KLOG('E', msg)
#define KLOG_V(n, msg)                                                                      \
  do {                                                                                      \
    if ((n) <= ::kcm::log::verbosityFor(__FILE__)) ::kcm::log::write('I', __FILE__, __LINE__, (msg), (n)); \
  } while (0)
