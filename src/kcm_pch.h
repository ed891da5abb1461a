#pragma once
// Precompiled header of the client, runtime and controller libraries and the binary: the standard library and
// the project headers nearly every translation unit includes (types, client, informers, controller base).
// Not included by any source: CMake forces it in (target_precompile_headers). Parsing these took about half of
// each controller's compile time. Keep it to headers that change rarely: a change here rebuilds every target
// that uses it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "api/gen/core_v1.h"
#include "api/gen/core_v1_json.h"
#include "api/gen/meta_v1.h"
#include "api/support/json_api.h"
#include "api/support/types.h"
#include "base/clock.h"
#include "base/executor.h"
#include "base/log.h"
#include "base/status.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "client/typed_client.h"
#include "informers/factory.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"
