#pragma once
// Label selector matching as metav1.LabelSelectorAsSelector + labels.Selector.Matches: matchLabels and
// matchExpressions (In, NotIn, Exists, DoesNotExist) are ANDed; an empty selector matches everything.
#include <string>

#include "api/gen/meta_v1.h"
#include "base/status.h"

namespace kcm::api {

// Errors (unknown operator, In/NotIn without values, Exists with values) as upstream's validation words them.
Result<bool> labelSelectorMatches(const meta::v1::LabelSelector& selector, const StringMap<String>& labels);

}  // namespace kcm::api
