#pragma once
// The kube-controller-manager command line: every upstream flag (flag_table.cc) registered on a CLI11 app, plus
// the removed flags old manifests still pass (--port, --experimental-cluster-signing-duration, ...) accepted
// with a deprecation warning. Values are kept as text and read through typed accessors, so one object holds
// every named flag set (generic, secure serving, authn/authz, per-controller, logs, metrics, misc, global).
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace kcm::options {

class FlagValues {
 public:
  // The value given last on the command line, or the flag's default.
  std::string get(const std::string& name) const;
  bool changed(const std::string& name) const { return given_.count(name) != 0; }
  bool getBool(const std::string& name) const;
  Result<int64_t> getInt(const std::string& name) const;
  Result<double> getFloat(const std::string& name) const;
  Result<std::chrono::nanoseconds> getDuration(const std::string& name) const;
  // Slices: every occurrence, each split on ','. Defaults "[a,b]" as upstream prints them.
  std::vector<std::string> getStrings(const std::string& name) const;
  // Every occurrence as given (repeatable flags such as --feature-gates).
  std::vector<std::string> all(const std::string& name) const;
  // name -> value for every flag, for the V(1) "FLAG: --name=value" dump (secrets are not flags).
  std::vector<std::pair<std::string, std::string>> dump() const;

  void setDefault(const std::string& name, std::string v) { defaults_[name] = std::move(v); }
  void add(const std::string& name, std::string v) { given_[name].push_back(std::move(v)); }

 private:
  std::map<std::string, std::string> defaults_;
  std::map<std::string, std::vector<std::string>> given_;
};

struct CommandLine {
  FlagValues flags;
  std::vector<std::string> warnings;  // deprecations, printed before anything else
  bool help = false;
  std::optional<std::string> version;  // --version given: "true", "raw", or a version to report
};

// Parses argv (without argv[0]). Errors carry upstream's texts: "unknown flag: --foo",
// "\"kube-controller-manager\" does not take any arguments, got [\"x\"]", invalid values naming the flag.
Result<CommandLine> parseCommandLine(const std::vector<std::string>& args);

// "Usage:\n  kube-controller-manager [flags]\n" then one "<Name> flags:" block per named flag set, as
// upstream's sectioned usage prints them.
std::string usage();
// --help: the command's description, a blank line, then usage().
std::string help();

// Go's time.ParseDuration ("876000h", "1m30s", "500ms").
Result<std::chrono::nanoseconds> parseDuration(const std::string& s);

}  // namespace kcm::options
