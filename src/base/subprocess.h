#pragma once
// Runs a child process (exec credential plugins, tests) with arguments (no shell), feeding stdin and capturing stdout/stderr.
// Thread-safe: each call owns its pipes and child.
#include <chrono>
#include <string>
#include <vector>

namespace kcm {

struct ExecResult {
  int exitCode = -1;  // -1 when the child could not be started or was killed by a signal
  std::string out;
  std::string err;
  bool ok() const { return exitCode == 0; }
};

// Kills the child (SIGKILL) when it runs longer than timeout.
ExecResult exec(const std::vector<std::string>& argv, const std::string& input = "",
                std::chrono::seconds timeout = std::chrono::seconds(120));

}  // namespace kcm
