#include "controllers/util/taints.h"

#include <charconv>
#include <optional>

namespace kcm::controllers {

using api::core::v1::Taint;
using api::core::v1::Toleration;

bool matchTaint(const Taint& a, const Taint& b) { return a.key == b.key && a.effect == b.effect; }

bool sameTaints(const std::vector<api::core::v1::Taint>& a, const std::vector<api::core::v1::Taint>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].key != b[i].key || a[i].value != b[i].value || a[i].effect != b[i].effect ||
        a[i].timeAdded != b[i].timeAdded)
      return false;
  return true;
}

bool taintExists(const std::vector<Taint>& taints, const Taint& t) {
  for (const auto& x : taints)
    if (matchTaint(x, t)) return true;
  return false;
}

namespace {
// A decimal integer as Go's strconv.ParseInt accepts it after IsDecimalInteger: optional sign, digits, no
// leading zeros.
std::optional<int64_t> parseDecimal(const std::string& s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (i >= s.size() || (s[i] == '0' && s.size() > i + 1)) return std::nullopt;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data() + (s[0] == '+' ? 1 : 0), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}
}  // namespace

bool toleratesTaint(const Toleration& tol, const Taint& taint, bool enableComparisonOperators) {
  if (!tol.effect.empty() && tol.effect != taint.effect) return false;
  if (!tol.key.empty() && tol.key != taint.key) return false;
  if (tol.operator_ == "Exists") return true;
  if (tol.operator_.empty() || tol.operator_ == "Equal") return tol.value == taint.value;
  if ((tol.operator_ == "Lt" || tol.operator_ == "Gt") && enableComparisonOperators) {
    auto want = parseDecimal(tol.value), have = parseDecimal(taint.value);
    if (!want || !have) return false;
    return tol.operator_ == "Lt" ? *have < *want : *have > *want;
  }
  return false;
}

MatchingTolerations getMatchingTolerations(const std::vector<Taint>& taints, const std::vector<Toleration>& tolerations,
                                           bool enableComparisonOperators) {
  MatchingTolerations out;
  if (taints.empty()) return out;
  if (tolerations.empty()) {
    out.allTolerated = false;
    return out;
  }
  for (const auto& t : taints) {
    bool found = false;
    for (const auto& tol : tolerations) {
      if (toleratesTaint(tol, t, enableComparisonOperators)) {
        out.used.push_back(tol);
        found = true;
        break;
      }
    }
    if (!found) {
      out.allTolerated = false;
      out.used.clear();
      return out;
    }
  }
  return out;
}

std::chrono::seconds getMinTolerationTime(const std::vector<Toleration>& tolerations) {
  if (tolerations.empty()) return std::chrono::seconds(0);
  int64_t min = INT64_MAX;
  for (const auto& t : tolerations) {
    if (!t.tolerationSeconds) continue;
    if (*t.tolerationSeconds <= 0) return std::chrono::seconds(0);
    if (*t.tolerationSeconds < min) min = *t.tolerationSeconds;
  }
  return min == INT64_MAX ? std::chrono::seconds(-1) : std::chrono::seconds(min);
}

TaintDiff taintSetDiff(const std::vector<Taint>& want, const std::vector<Taint>& have) {
  TaintDiff d;
  for (const auto& t : want)
    if (!taintExists(have, t)) d.toAdd.push_back(t);
  for (const auto& t : have)
    if (!taintExists(want, t)) d.toRemove.push_back(t);
  return d;
}

}  // namespace kcm::controllers
