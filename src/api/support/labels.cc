#include "api/support/labels.h"

#include <algorithm>

namespace kcm::api {

Result<bool> labelSelectorMatches(const meta::v1::LabelSelector& selector, const StringMap<String>& labels) {
  for (const auto& [k, v] : selector.matchLabels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  for (const auto& e : selector.matchExpressions) {
    auto it = labels.find(e.key);
    bool has = it != labels.end();
    bool in = has && std::find(e.values.begin(), e.values.end(), it->second) != e.values.end();
    if (e.operator_ == "In" || e.operator_ == "NotIn") {
      if (e.values.empty())
        return Status(StatusCode::kInvalidArgument, "for 'in', 'notin' operators, values set can't be empty");
      if (e.operator_ == "In" ? !in : in) return false;
    } else if (e.operator_ == "Exists" || e.operator_ == "DoesNotExist") {
      if (!e.values.empty())
        return Status(StatusCode::kInvalidArgument, "values set must be empty for exists and does not exist");
      if (e.operator_ == "Exists" ? !has : has) return false;
    } else {
      return Status(StatusCode::kInvalidArgument, "\"" + e.operator_ + "\" is not a valid label selector operator");
    }
  }
  return true;
}

}  // namespace kcm::api
