// Label selectors: the text form (labels.Parse; a scale subresource's status.selector, list requests) and
// metav1.LabelSelector as JSON (LabelSelectorAsSelector, the form Deployments, ReplicaSets, PDBs carry).
//
// Input: "t\n<selector text>" or "j\n<LabelSelector JSON>". Properties: no crash or sanitizer report; a parsed
// selector prints as text that parses to a selector printing the same (String() is a fixed point) and matching
// the same label sets; matching never crashes on labels taken from the input.
#include <string>
#include <string_view>

#include "api/gen/apps_v1_json.h"
#include "api/support/selector.h"
#include "fuzz_common.h"

namespace {

using kcm::api::Selector;

// Label sets to match against: empty, and ones built from the selector's own keys and values.
void checkFixedPoint(const Selector& s) {
  const std::string text = s.str();
  if (s.isNothing()) return;  // prints "", which parses to everything, as upstream
  auto again = kcm::api::parseSelector(text);
  if (!again.ok()) kcm::fuzz::fail("our own selector text does not parse: " + again.status().message(), text);
  if (again->str() != text) kcm::fuzz::fail("selector text is not a fixed point", text, again->str());
  std::vector<kcm::api::StringMap<kcm::api::String>> sets(1);
  for (const auto& r : s.requirements()) {
    auto& with = sets.emplace_back();
    with[r.key] = r.values.empty() ? "" : r.values.front();
    sets.back()[r.key + "x"] = "1";
  }
  for (const auto& l : sets)
    if (s.matches(l) != again->matches(l)) kcm::fuzz::fail("a reparsed selector matches differently", text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kcm::fuzz::quietLogs();
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (in.size() < 2 || in[1] != '\n') return 0;
  const std::string body(in.substr(2));
  if (in[0] == 't') {
    auto s = kcm::api::parseSelector(body);
    if (s.ok()) checkFixedPoint(*s);
    else if (s.status().message().empty()) kcm::fuzz::fail("a selector rejected without a message", body);
  } else if (in[0] == 'j') {
    // LabelSelector has no top-level codec: it arrives inside a Deployment's spec.
    kcm::api::apps::v1::Deployment d;
    if (!kcm::api::apps::v1::fromJson("{\"spec\":{\"selector\":" + body + "}}", d).ok()) return 0;
    auto s = kcm::api::selectorFromLabelSelector(d.spec.selector ? &*d.spec.selector : nullptr);
    if (s.ok()) checkFixedPoint(*s);
  }
  return 0;
}
