#pragma once
// Precompiled header of the api library (generated types and codecs): the standard library, simdjson and the
// codec support every generated translation unit parses. Not included by any source: CMake forces it in
// (target_precompile_headers). Parsing these took about half of each generated file's compile time.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <simdjson.h>

#include "api/gen/core_v1.h"
#include "api/gen/meta_v1_codec.h"
#include "api/support/codec.h"
#include "api/support/json_api.h"
#include "base/status.h"
