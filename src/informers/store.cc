#include "informers/store.h"

namespace kcm::informers {

std::pair<std::string, std::string> splitMetaNamespaceKey(const std::string& key) {
  auto p = key.find('/');
  if (p == std::string::npos) return {"", key};
  return {key.substr(0, p), key.substr(p + 1)};
}

}  // namespace kcm::informers
