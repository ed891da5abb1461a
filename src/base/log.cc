#include "base/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>
#include <vector>

namespace kcm::log {
namespace {
std::atomic<int> gVerbosity{0};
std::atomic<bool> gJson{false};
std::mutex gVModuleMu;
std::vector<std::pair<std::string, int>> gVModule;

bool globMatch(const char* p, const char* s) {
  if (!*p) return !*s;
  if (*p == '*') return globMatch(p + 1, s) || (*s && globMatch(p, s + 1));
  return *s && (*p == '?' || *p == *s) && globMatch(p + 1, s + 1);
}

std::string jsonEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}
}  // namespace

void setVerbosity(int v) { gVerbosity = v; }
int verbosity() { return gVerbosity.load(); }
void setJsonFormat(bool json) { gJson = json; }

void setVModule(const std::string& spec) {
  std::lock_guard l(gVModuleMu);
  gVModule.clear();
  size_t start = 0;
  while (start < spec.size()) {
    size_t c = spec.find(',', start);
    std::string item = spec.substr(start, c == std::string::npos ? std::string::npos : c - start);
    if (auto eq = item.find('='); eq != std::string::npos)
      gVModule.emplace_back(item.substr(0, eq), std::atoi(item.c_str() + eq + 1));
    if (c == std::string::npos) break;
    start = c + 1;
  }
}

int verbosityFor(const char* file) {
  std::lock_guard l(gVModuleMu);
  if (gVModule.empty()) return gVerbosity.load();
  std::string base = file;
  if (auto p = base.rfind('/'); p != std::string::npos) base = base.substr(p + 1);
  if (auto d = base.find('.'); d != std::string::npos) base.resize(d);
  for (const auto& [pattern, v] : gVModule)
    if (globMatch(pattern.c_str(), base.c_str())) return v;
  return gVerbosity.load();
}

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
  if (gJson.load()) {
    char ts[64];
    std::snprintf(ts, sizeof ts, "%.6f", duration<double>(now.time_since_epoch()).count());
    std::string out = std::string("{\"ts\":") + ts + ",\"caller\":\"" + base + ":" + std::to_string(line) +
                      "\",\"msg\":\"" + jsonEscape(msg) + "\"" +
                      (severity == 'E' ? ",\"err\":true" : ",\"v\":0") + "}\n";
    std::fwrite(out.data(), 1, out.size(), severity == 'E' ? stderr : stdout);
    return;
  }
  char head[96];
  std::snprintf(head, sizeof head, "%c%02d%02d %02d:%02d:%02d.%06ld %7ld %s:%d] ", severity, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, us, static_cast<long>(syscall(SYS_gettid)), base, line);
  std::string out = head + msg + "\n";
  std::fwrite(out.data(), 1, out.size(), stderr);
}

std::string quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}

}  // namespace kcm::log
