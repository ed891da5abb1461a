#include "base/file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kcm {

Result<std::string> readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status(StatusCode::kInvalidArgument, "cannot read " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace kcm
