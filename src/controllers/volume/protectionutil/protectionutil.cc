#include "controllers/volume/protectionutil/protectionutil.h"

#include <algorithm>

namespace kcm::controllers::volume::protectionutil {

bool hasFinalizer(const api::meta::v1::ObjectMeta& m, std::string_view finalizer) {
  return std::find(m.finalizers.begin(), m.finalizers.end(), finalizer) != m.finalizers.end();
}

void removeFinalizer(api::meta::v1::ObjectMeta& m, std::string_view finalizer) {
  std::erase(m.finalizers, std::string(finalizer));
}

}  // namespace kcm::controllers::volume::protectionutil
