// Quantities (resource.Quantity: requests, limits, quota hard/used, "50%"-style IntOrString) and durations
// (Go's time.ParseDuration: every duration flag).
//
// Input: "q\n<quantity>", "p\n<int-or-percent>" or "d\n<duration>". Properties: no crash, no sanitizer report
// (UBSan makes every signed overflow in the arithmetic fatal); the canonical text of an exact quantity parses
// back to the same value and the same text, and sums below the cap are exact; Go-formatted durations parse back
// to the same length.
#include <string>
#include <string_view>

#include "api/support/types.h"
#include "fuzz_common.h"
#include "options/options.h"
#include "options/typed_options.h"
#include "quota/resources.h"

namespace {

kcm::quota::Amount amount(const char* text) {
  kcm::quota::Amount a;
  kcm::quota::Amount::parse(text, a);
  return a;
}

kcm::quota::Amount negated(const kcm::quota::Amount& a) {
  kcm::quota::Amount n;
  n.sub(a);
  return n;
}

void quantity(const std::string& text) {
  if (auto q = kcm::api::Quantity::parse(text)) {
    (void)q->value(), (void)q->milliValue(), (void)q->isZero();
    (void)q->compare(kcm::api::Quantity::fromInt(1));
  }
  kcm::quota::Amount a;
  if (!kcm::quota::Amount::parse(text, a)) return;
  const std::string canonical = a.canonical();
  kcm::quota::Amount b;
  if (!kcm::quota::Amount::parse(canonical, b)) kcm::fuzz::fail("our canonical quantity does not parse", text, canonical);
  // From 1000E on, Go's canonical DecimalSI text has no suffix for the exponent and drops it ("5e23" prints as
  // "500"); we print what Go prints, so the value survives only below that.
  static const kcm::quota::Amount kSuffixRange = amount("1e21"), kNegSuffixRange = negated(kSuffixRange);
  if (a.cmp(kSuffixRange) < 0 && a.cmp(kNegSuffixRange) > 0 && b.cmp(a) != 0)
    kcm::fuzz::fail("the canonical text has another value", text, canonical);
  if (b.canonical() != canonical) kcm::fuzz::fail("canonical text is not a fixed point", canonical, b.canonical());
  // Exact arithmetic, below the cap (2^120 nanos, about 1.3e27) where sums saturate.
  static const kcm::quota::Amount kBound = amount("1e26"), kNegBound = negated(kBound);
  if (a.cmp(kBound) < 0 && a.cmp(kNegBound) > 0) {
    kcm::quota::Amount sum = a;
    sum.add(b);
    sum.sub(b);
    if (sum.cmp(a) != 0) kcm::fuzz::fail("a + b - b != a", text, sum.canonical());
  }
  (void)a.milliValue(), (void)a.toQuantity();
}

void percent(const std::string& text) {
  for (int total : {0, 1, 7, 100, 1 << 30}) {
    (void)kcm::api::getScaledValueFromIntOrPercent(kcm::api::IntOrString::fromString(text), total, true);
    (void)kcm::api::getScaledValueFromIntOrPercent(kcm::api::IntOrString::fromString(text), total, false);
  }
}

void duration(const std::string& text) {
  auto d = kcm::options::parseDuration(text);
  if (!d.ok()) {
    if (d.status().message().empty()) kcm::fuzz::fail("a duration rejected without a message", text);
    return;
  }
  const std::string go = kcm::options::formatDuration(*d);
  auto again = kcm::options::parseDuration(go);
  if (!again.ok()) kcm::fuzz::fail("our Go-style duration text does not parse: " + again.status().message(), text, go);
  if (*again != *d) kcm::fuzz::fail("a formatted duration parses to another length", text, go);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kcm::fuzz::quietLogs();
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (in.size() < 2 || in[1] != '\n' || in.size() > 4096) return 0;
  const std::string body(in.substr(2));
  switch (in[0]) {
    case 'q': quantity(body); break;
    case 'p': percent(body); break;
    case 'd': duration(body); break;
    default: break;
  }
  return 0;
}
