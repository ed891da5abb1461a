// The command line: one argument per input line, through parseCommandLine (CLI11 plus the removed flags old
// manifests pass), the typed options (fromFlags) and their validation. Properties: no crash or sanitizer report;
// every rejection has a message; a command line that parses fills options that render to /configz; parsing is
// deterministic (the same arguments give the same verdict and options twice).
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "options/options.h"
#include "options/typed_options.h"
#include "options/validation.h"

namespace {

struct Verdict {
  bool ok = false;
  std::string text;  // the error, or the /configz of the options
};

Verdict run(const std::vector<std::string>& args) {
  auto cl = kcm::options::parseCommandLine(args);
  if (!cl.ok()) {
    if (cl.status().message().empty()) kcm::fuzz::fail("a command line rejected without a message");
    return {false, cl.status().message()};
  }
  kcm::options::KubeControllerManagerOptions o;
  std::vector<std::string> errors = kcm::options::fromFlags(cl->flags, o);
  for (const auto& e : kcm::options::validate(o)) errors.push_back(e);
  std::string text;
  for (const auto& e : errors) {
    if (e.empty()) kcm::fuzz::fail("an empty validation error");
    text += e + "\n";
  }
  if (!errors.empty()) return {false, text};
  return {true, kcm::options::toConfigz(o)};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kcm::fuzz::quietLogs();
  std::vector<std::string> args;
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\n') args.push_back(std::move(cur)), cur.clear();
    else cur.push_back(static_cast<char>(data[i]));
  }
  if (!cur.empty()) args.push_back(std::move(cur));
  if (args.size() > 64) return 0;
  const Verdict a = run(args), b = run(args);
  if (a.ok != b.ok || a.text != b.text) kcm::fuzz::fail("the same command line parsed differently", a.text, b.text);
  return 0;
}
