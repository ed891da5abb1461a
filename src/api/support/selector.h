#pragma once
// labels.Selector as text (k8s.io/apimachinery/pkg/labels): the string form a scale subresource carries in
// status.selector and list requests send as labelSelector=. parseSelector reads labels.Parse's grammar
// (`k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k>1`, `k<1`, comma-separated, ANDed);
// selectorFromLabelSelector is metav1.LabelSelectorAsSelector. str() prints as Selector.String(): requirements
// sorted by key, set values sorted.
#include <string>
#include <vector>

#include "api/gen/meta_v1.h"
#include "base/status.h"

namespace kcm::api {

struct SelectorRequirement {
  enum class Op { kEquals, kDoubleEquals, kNotEquals, kIn, kNotIn, kExists, kDoesNotExist, kGreaterThan, kLessThan };
  std::string key;
  Op op = Op::kExists;
  std::vector<std::string> values;  // sorted
  bool matches(const StringMap<String>& labels) const;
  std::string str() const;
};

class Selector {
 public:
  static Selector everything() { return Selector(false); }
  static Selector nothing() { return Selector(true); }
  bool matches(const StringMap<String>& labels) const;
  // Selector.String(): "" for everything and nothing.
  std::string str() const;
  bool empty() const { return !nothing_ && reqs_.empty(); }
  bool isNothing() const { return nothing_; }
  const std::vector<SelectorRequirement>& requirements() const { return reqs_; }
  void add(SelectorRequirement r);  // keeps the key order

 private:
  explicit Selector(bool nothing) : nothing_(nothing) {}
  bool nothing_ = false;
  std::vector<SelectorRequirement> reqs_;
};

// labels.Parse; errors name the offending text as upstream's parser does ("unable to parse requirement: ...").
Result<Selector> parseSelector(const std::string& text);
// metav1.LabelSelectorAsSelector: null -> nothing, empty -> everything.
Result<Selector> selectorFromLabelSelector(const meta::v1::LabelSelector* selector);

}  // namespace kcm::api
