#include "options/options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "options/flag_table.h"

namespace kcm::options {
namespace {

// Removed or hidden flags that upstream kcm once accepted and old manifests still pass.
struct LegacyFlag {
  const char* name;
  bool isBool;
  const char* aliasOf;  // the current flag that receives the value, or "" when it has no effect
  const char* warning;
};
const LegacyFlag kLegacyFlags[] = {
    {"port", false, "", "Flag --port has been deprecated, see --secure-port instead."},
    {"address", false, "", "Flag --address has been deprecated, see --bind-address instead."},
    {"experimental-cluster-signing-duration", false, "cluster-signing-duration",
     "Flag --experimental-cluster-signing-duration has been deprecated, use --cluster-signing-duration"},
    {"node-sync-period", false, "", "Flag --node-sync-period has been deprecated, This flag is currently no-op and will be deleted."},
    {"allow-untagged-cloud", true, "", "Flag --allow-untagged-cloud has been deprecated, This flag is deprecated and will be removed in a future release. A cluster-id will be required on cloud instances."},
    {"enable-taint-manager", true, "", "Flag --enable-taint-manager has been deprecated, it was removed in v1.27; the taint-eviction-controller runs by default."},
    {"pod-eviction-timeout", false, "", "Flag --pod-eviction-timeout has been deprecated, it was removed in v1.27 and has no effect."},
    {"horizontal-pod-autoscaler-use-rest-clients", true, "", "Flag --horizontal-pod-autoscaler-use-rest-clients has been deprecated, it was removed in v1.20 and has no effect."},
    {"volume-host-cidr-denylist", false, "", "Flag --volume-host-cidr-denylist has been deprecated, it was removed in v1.31 (with the in-tree volume plugins that dialled out) and has no effect."},
    {"volume-host-allow-local-loopback", true, "", "Flag --volume-host-allow-local-loopback has been deprecated, it was removed in v1.31 (with the in-tree volume plugins that dialled out) and has no effect."},
};

std::string defaultValue(const FlagSpec& f) {
  std::string s = f.defaultSuffix;
  if (s.empty()) {  // the zero value, which --help does not print
    std::string t = f.varname;
    if (t.empty()) return "false";
    if (t == "duration") return "0s";
    if (t == "int" || t == "int32" || t == "int64" || t == "uint" || t == "float32" || t == "float64" ||
        t == "Level")
      return "0";
    return "";
  }
  s = s.substr(std::string(" (default ").size());
  s.pop_back();  // ')'
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') return s.substr(1, s.size() - 2);
  return s;
}

std::string normalize(const std::string& arg) {
  // pflag reads "-v=2" as shorthand v with value 2 (CLI11 would take "=2"): rewrite it to the long flag.
  if (arg.size() >= 3 && arg[0] == '-' && arg[1] != '-' && arg[2] == '=') {
    for (const auto& f : upstreamFlags())
      if (f.shorthand[0] == arg[1] && f.shorthand[1] == '\0') return std::string("--") + f.name + arg.substr(2);
    return arg;
  }
  // pflag's WordSepNormalizeFunc: "_" in a flag name is "-".
  if (arg.rfind("--", 0) != 0) return arg;
  auto eq = arg.find('=');
  std::string name = arg.substr(0, eq), rest = eq == std::string::npos ? "" : arg.substr(eq);
  std::replace(name.begin(), name.end(), '_', '-');
  return name + rest;
}

}  // namespace

std::string FlagValues::get(const std::string& name) const {
  if (auto it = given_.find(name); it != given_.end() && !it->second.empty()) return it->second.back();
  auto d = defaults_.find(name);
  return d == defaults_.end() ? "" : d->second;
}

bool FlagValues::getBool(const std::string& name) const {
  std::string v = get(name);
  return v == "true" || v == "1" || v == "t" || v == "T" || v == "True" || v == "TRUE";
}

Result<int64_t> FlagValues::getInt(const std::string& name) const {
  std::string v = get(name);
  try {
    size_t pos = 0;
    long long x = std::stoll(v, &pos, 0);
    if (pos != v.size()) throw std::invalid_argument(v);
    return static_cast<int64_t>(x);
  } catch (...) {
    return Status(StatusCode::kInvalidArgument, "invalid argument \"" + v + "\" for \"--" + name + "\" flag: parse error");
  }
}

Result<double> FlagValues::getFloat(const std::string& name) const {
  std::string v = get(name);
  try {
    size_t pos = 0;
    double x = std::stod(v, &pos);
    if (pos != v.size()) throw std::invalid_argument(v);
    return x;
  } catch (...) {
    return Status(StatusCode::kInvalidArgument, "invalid argument \"" + v + "\" for \"--" + name + "\" flag: parse error");
  }
}

Result<std::chrono::nanoseconds> FlagValues::getDuration(const std::string& name) const {
  auto d = parseDuration(get(name));
  if (!d.ok())
    return Status(StatusCode::kInvalidArgument,
                  "invalid argument \"" + get(name) + "\" for \"--" + name + "\" flag: " + d.status().message());
  return d;
}

std::vector<std::string> FlagValues::getStrings(const std::string& name) const {
  std::vector<std::string> sources;
  if (auto it = given_.find(name); it != given_.end()) sources = it->second;
  else sources.push_back(get(name));
  std::vector<std::string> out;
  for (const auto& s : sources) {
    size_t start = 0;
    while (start <= s.size() && !s.empty()) {
      size_t c = s.find(',', start);
      std::string item = s.substr(start, c == std::string::npos ? std::string::npos : c - start);
      if (!item.empty()) out.push_back(item);
      if (c == std::string::npos) break;
      start = c + 1;
    }
  }
  return out;
}

std::vector<std::string> FlagValues::all(const std::string& name) const {
  auto it = given_.find(name);
  return it == given_.end() ? std::vector<std::string>{} : it->second;
}

std::vector<std::pair<std::string, std::string>> FlagValues::dump() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [k, v] : defaults_) out.emplace_back(k, get(k));
  return out;
}

namespace {
// The time package's quote(): ASCII kept ('"' and '\\' escaped), every other byte as \xHH.
std::string timeQuote(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c >= 0x80 || c < ' ') {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else {
      if (c == '"' || c == '\\') out += '\\';
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}
}  // namespace

// Go's time.ParseDuration, step for step: integers in uint64 (overflow is an invalid duration), the fraction
// scaled through float64 as Go does, so that every duration parses to the same nanosecond as upstream's.
Result<std::chrono::nanoseconds> parseDuration(const std::string& in) {
  const auto invalid = [&] { return Status(StatusCode::kInvalidArgument, "time: invalid duration " + timeQuote(in)); };
  constexpr uint64_t kLimit = uint64_t{1} << 63;
  std::string_view s = in;
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return std::chrono::nanoseconds(0);
  if (s.empty()) return invalid();
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  uint64_t d = 0;
  while (!s.empty()) {
    if (!(s[0] == '.' || digit(s[0]))) return invalid();
    uint64_t v = 0;  // leadingInt
    size_t i = 0;
    for (; i < s.size() && digit(s[i]); ++i) {
      if (v > kLimit / 10) return invalid();
      v = v * 10 + static_cast<uint64_t>(s[i] - '0');
      if (v > kLimit) return invalid();
    }
    const bool pre = i > 0;
    s.remove_prefix(i);
    uint64_t f = 0;
    double scale = 1;
    bool post = false;
    if (!s.empty() && s[0] == '.') {  // leadingFraction: digits past int64 precision only count
      s.remove_prefix(1);
      bool overflow = false;
      for (i = 0; i < s.size() && digit(s[i]); ++i) {
        if (overflow) continue;
        if (f > (kLimit - 1) / 10) {
          overflow = true;
          continue;
        }
        const uint64_t y = f * 10 + static_cast<uint64_t>(s[i] - '0');
        if (y > kLimit) {
          overflow = true;
          continue;
        }
        f = y;
        scale *= 10;
      }
      post = i > 0;
      s.remove_prefix(i);
    }
    if (!pre && !post) return invalid();
    for (i = 0; i < s.size() && s[i] != '.' && !digit(s[i]); ++i) {
    }
    if (i == 0) return Status(StatusCode::kInvalidArgument, "time: missing unit in duration " + timeQuote(in));
    const std::string_view u = s.substr(0, i);
    s.remove_prefix(i);
    uint64_t unit;
    if (u == "ns") unit = 1;
    else if (u == "us" || u == "\xc2\xb5s" || u == "\xce\xbcs") unit = 1000;
    else if (u == "ms") unit = 1000000;
    else if (u == "s") unit = 1000000000;
    else if (u == "m") unit = 60000000000;
    else if (u == "h") unit = 3600000000000;
    else
      return Status(StatusCode::kInvalidArgument,
                    "time: unknown unit " + timeQuote(u) + " in duration " + timeQuote(in));
    if (v > kLimit / unit) return invalid();
    v *= unit;
    if (f > 0) {
      v += static_cast<uint64_t>(static_cast<double>(f) * (static_cast<double>(unit) / scale));
      if (v > kLimit) return invalid();
    }
    d += v;
    if (d > kLimit) return invalid();
  }
  if (neg) return std::chrono::nanoseconds(static_cast<int64_t>(0 - d));  // -2^63 included
  if (d > kLimit - 1) return invalid();
  return std::chrono::nanoseconds(static_cast<int64_t>(d));
}

std::string usage() {
  std::string out = "Usage:\n  kube-controller-manager [flags]\n";
  const auto& flags = upstreamFlags();
  for (size_t i = 0; i < flags.size();) {
    std::string set = flags[i].set;
    size_t j = i;
    while (j < flags.size() && set == flags[j].set) ++j;
    // pflag's FlagUsagesWrapped: the usage column is the longest "  -x, --name type" + 2 (Println's spaces).
    std::vector<std::string> left;
    size_t maxlen = 0;
    for (size_t k = i; k < j; ++k) {
      const FlagSpec& f = flags[k];
      std::string l = f.shorthand[0] ? std::string("  -") + f.shorthand + ", --" + f.name : std::string("      --") + f.name;
      if (f.varname[0]) l += std::string(" ") + f.varname;
      maxlen = std::max(maxlen, l.size());
      left.push_back(l);
    }
    out += "\n" + set + " flags:\n\n";
    for (size_t k = i; k < j; ++k) {
      const FlagSpec& f = flags[k];
      std::string usageText = std::string(f.usage) + f.defaultSuffix;
      std::string indent = "\n" + std::string(maxlen + 3, ' ');
      std::string wrapped;
      for (char c : usageText) {
        if (c == '\n') wrapped += indent;
        else wrapped += c;
      }
      out += left[k - i] + std::string(maxlen - left[k - i].size() + 3, ' ') + wrapped + "\n";
    }
    i = j;
  }
  return out;
}

std::string help() { return std::string(commandDescription()) + "\n\n" + usage(); }

Result<CommandLine> parseCommandLine(const std::vector<std::string>& rawArgs) {
  CommandLine cl;
  CLI::App app{"kube-controller-manager"};
  app.set_help_flag();
  app.allow_extras(true);
  app.allow_windows_style_options(false);
  std::set<std::string> bools;
  for (const auto& f : upstreamFlags()) {
    std::string name = f.name;
    if (name == "help") continue;
    cl.flags.setDefault(name, defaultValue(f));
    std::string spec = f.shorthand[0] ? std::string("-") + f.shorthand + ",--" + name : "--" + name;
    bool isBool = f.varname[0] == '\0' || name == "version";
    if (isBool) bools.insert(name);
    auto* opt = app.add_option_function<std::vector<std::string>>(
        spec, [&cl, name, isBool](const std::vector<std::string>& vs) {
          if (vs.empty() && isBool) cl.flags.add(name, "true");
          for (const auto& v : vs) cl.flags.add(name, v);
        });
    opt->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    if (isBool) opt->expected(0, 1);
    else opt->expected(1);
  }
  for (const auto& l : kLegacyFlags) {
    std::string name = l.name, alias = l.aliasOf, warning = l.warning;
    auto* opt = app.add_option_function<std::vector<std::string>>(
        "--" + name, [&cl, alias, warning, isBool = l.isBool](const std::vector<std::string>& vs) {
          cl.warnings.push_back(warning);
          if (!alias.empty())
            for (const auto& v : vs) cl.flags.add(alias, v);
          (void)isBool;
        });
    opt->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    if (l.isBool) opt->expected(0, 1);
    else opt->expected(1);
  }
  std::vector<std::string> args;
  bool helpGiven = false;
  for (const auto& a : rawArgs) {
    std::string n = normalize(a);
    if (n == "-h" || n == "--help" || n == "--help=true") {
      helpGiven = true;
      continue;
    }
    // A bare boolean flag is pflag's "--name=true"; spelled out, CLI11 cannot mistake what follows for its value.
    if (n.rfind("--", 0) == 0 && n.find('=') == std::string::npos && n != "--version" && bools.count(n.substr(2)))
      n += "=true";
    args.push_back(n);
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    return Status(StatusCode::kInvalidArgument, msg);
  }
  for (const auto& extra : app.remaining()) {
    if (!extra.empty() && extra[0] == '-' && extra != "-") {
      std::string flag = extra.substr(0, extra.find('='));
      return Status(StatusCode::kInvalidArgument,
                    flag.rfind("--", 0) == 0 ? "unknown flag: " + flag
                                              : "unknown shorthand flag: '" + flag.substr(1, 1) + "' in " + flag);
    }
    std::vector<std::string> positional;
    for (const auto& r : app.remaining())
      if (r.empty() || r[0] != '-') positional.push_back("\"" + r + "\"");
    std::string list;
    for (size_t i = 0; i < positional.size(); ++i) list += (i ? " " : "") + positional[i];
    return Status(StatusCode::kInvalidArgument,
                  "\"kube-controller-manager\" does not take any arguments, got [" + list + "]");
  }
  for (const auto& b : bools) {
    std::string v = cl.flags.get(b);
    if (b == "version") continue;
    if (v != "true" && v != "false" && v != "1" && v != "0" && v != "t" && v != "f" && v != "T" && v != "F" &&
        v != "True" && v != "False" && v != "TRUE" && v != "FALSE")
      return Status(StatusCode::kInvalidArgument, "invalid argument \"" + v + "\" for \"--" + b +
                                                      "\" flag: strconv.ParseBool: parsing \"" + v + "\": invalid syntax");
  }
  cl.help = helpGiven;
  if (cl.flags.changed("version")) cl.version = cl.flags.get("version");
  return cl;
}

}  // namespace kcm::options
