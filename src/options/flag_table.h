#pragma once
// Upstream kube-controller-manager's flags at the pinned release, by named flag set, in --help order.
// Generated data (hack/update-flags.sh); the command registers and prints its flags from it.
#include <vector>

namespace kcm::options {

struct FlagSpec {
  const char* set;        // "Generic", "Secure serving", "Deployment-controller", ...
  const char* name;       // without dashes
  const char* shorthand;  // "v" for -v, else ""
  const char* varname;    // the value name --help shows; "" for booleans. Gives the type.
  const char* usage;      // help text, may span lines
  const char* defaultSuffix;  // " (default 5)", or "" when the default is the zero value
};

const char* commandDescription();
const std::vector<FlagSpec>& upstreamFlags();

}  // namespace kcm::options
