#pragma once
// readFile: a whole file's bytes, or why not ("cannot read <path>: <errno text>", kInvalidArgument), for the
// files flags name (kubeconfigs, CA and key files).
#include <string>

#include "base/status.h"

namespace kcm {

Result<std::string> readFile(const std::string& path);

}  // namespace kcm
