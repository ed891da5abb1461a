#pragma once
// What the generated light JSON entry points (api/gen/*_json.h) share: the list metadata a streamed list
// decode reports, and the Status type their signatures use. Light: no simdjson.
#include <string>

#include "api/gen/meta_v1.h"
#include "base/status.h"

namespace kcm::api {

// A list response's metadata, when its items are streamed to a callback instead of collected.
struct ListInfo {
  std::string resourceVersion;
  std::string continueToken;
};

}  // namespace kcm::api
