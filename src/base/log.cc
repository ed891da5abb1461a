#include "base/log.h"
#include "base/log_discard.h"
#include "base/klog_text.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace kcm::log {
namespace {
std::atomic<int> gVerbosity{0};
std::atomic<bool> gJson{false};
std::atomic<bool> gDiscard{false};
std::mutex gVModuleMu;
std::vector<std::pair<std::string, int>> gVModule;

bool globMatch(const char* p, const char* s) {
  if (!*p) return !*s;
  if (*p == '*') return globMatch(p + 1, s) || (*s && globMatch(p, s + 1));
  return *s && (*p == '?' || *p == *s) && globMatch(p + 1, s + 1);
}

std::string jsonEscape(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    if (c == '\t') {
      o += "\\t";
      continue;
    }
    if (static_cast<unsigned char>(c) < 0x20) continue;
    o += c;
  }
  return o;
}

// A klog value as JSON: quoted strings unescaped and re-escaped, numbers and booleans as they are, anything else
// (Go's printed structs, multi-line blocks) as a string.
std::string jsonValue(std::string_view v) {
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
    std::string raw;
    for (size_t i = 1; i + 1 < v.size(); ++i) {
      if (v[i] == '\\' && i + 2 < v.size()) {
        char n = v[++i];
        raw += n == 'n' ? '\n' : n == 't' ? '\t' : n;
      } else {
        raw += v[i];
      }
    }
    return "\"" + jsonEscape(raw) + "\"";
  }
  if (v == "true" || v == "false") return std::string(v);
  bool number = !v.empty();
  for (size_t i = 0; i < v.size(); ++i)
    if (!(std::isdigit(static_cast<unsigned char>(v[i])) || v[i] == '.' || (i == 0 && v[i] == '-') || v[i] == 'e' ||
          v[i] == '+'))
      number = false;
  if (number && std::isdigit(static_cast<unsigned char>(v.back()))) return std::string(v);
  if (v.size() >= 4 && v.substr(0, 2) == "<\n" && v.substr(v.size() - 2) == " >") v = v.substr(2, v.size() - 4);
  return "\"" + jsonEscape(v) + "\"";
}

// component-base's JSON line for one of our klog messages: `"message" k="v" ...` becomes msg plus one field per
// pair; a printf-style line is its msg. Info lines carry "v" (the level it was logged at); error lines do not.
std::string jsonLine(char severity, const char* caller, int line, std::string_view msg, int v) {
  using namespace std::chrono;
  char ts[64];
  std::snprintf(ts, sizeof ts, "%.3f",
                static_cast<double>(duration_cast<microseconds>(system_clock::now().time_since_epoch()).count()) / 1e3);
  std::string out = std::string("{\"ts\":") + ts + ",\"caller\":\"" + jsonEscape(caller) + ":" + std::to_string(line) +
                    "\",\"msg\":";
  std::string fields;
  if (!msg.empty() && msg.front() == '"') {
    size_t end = klogValueEnd(msg, 0);
    out += jsonValue(msg.substr(0, end));
    size_t i = end;
    while (i < msg.size()) {
      while (i < msg.size() && msg[i] == ' ') ++i;
      size_t eq = msg.find('=', i);
      if (eq == std::string_view::npos || msg.substr(i, eq - i).find(' ') != std::string_view::npos) break;
      size_t ve = klogValueEnd(msg, eq + 1);
      fields += ",\"" + jsonEscape(msg.substr(i, eq - i)) + "\":" + jsonValue(msg.substr(eq + 1, ve - eq - 1));
      i = ve;
    }
  } else {
    out += "\"" + jsonEscape(msg) + "\"";
  }
  if (severity != 'E') out += ",\"v\":" + std::to_string(v);
  return out + fields + "}\n";
}
}  // namespace

size_t klogValueEnd(std::string_view s, size_t i) {
  if (i < s.size() && s[i] == '"') {
    for (++i; i < s.size(); ++i) {
      if (s[i] == '\\') ++i;
      else if (s[i] == '"') return i + 1;
    }
    return s.size();
  }
  if (i < s.size() && s[i] == '<') {
    size_t e = s.find("\n >", i);
    return e == std::string_view::npos ? s.size() : e + 3;
  }
  int depth = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '{' || c == '[') ++depth;
    else if ((c == '}' || c == ']') && depth > 0) --depth;
    else if (c == ' ' && depth == 0) break;
  }
  return i;
}

void setVerbosity(int v) { gVerbosity = v; }
int verbosity() { return gVerbosity.load(); }
void setJsonFormat(bool json) { gJson = json; }
void setDiscard(bool discard) { gDiscard = discard; }

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

void write(char severity, const char* file, int line, const std::string& msg, int v) {
  if (gDiscard.load(std::memory_order_relaxed)) return;
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
    // Everything on stderr, as component-base's JSON logger without --log-json-split-stream.
    std::string out = jsonLine(severity, base, line, msg, v);
    std::fwrite(out.data(), 1, out.size(), stderr);
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
