#include "api/support/labels.h"

#include <gtest/gtest.h>

namespace kcm::api {
namespace {

TEST(LabelSelector, MatchLabelsAndExpressionsAreAnded) {
  meta::v1::LabelSelector s;
  s.matchLabels["app"] = "web";
  auto& e = s.matchExpressions.emplace_back();
  e.key = "tier";
  e.operator_ = "In";
  e.values = {"front", "edge"};
  StringMap<String> l{{"app", "web"}, {"tier", "edge"}};
  EXPECT_TRUE(*labelSelectorMatches(s, l));
  l["tier"] = "db";
  EXPECT_FALSE(*labelSelectorMatches(s, l));
  s.matchExpressions[0].operator_ = "NotIn";
  EXPECT_TRUE(*labelSelectorMatches(s, l));
  s.matchExpressions[0] = {};
  s.matchExpressions[0].key = "gone";
  s.matchExpressions[0].operator_ = "DoesNotExist";
  EXPECT_TRUE(*labelSelectorMatches(s, l));
  s.matchExpressions[0].operator_ = "Exists";
  EXPECT_FALSE(*labelSelectorMatches(s, l));
  EXPECT_TRUE(*labelSelectorMatches(meta::v1::LabelSelector{}, l));  // empty selects everything
}

TEST(LabelSelector, InvalidSelectorsAreErrors) {
  meta::v1::LabelSelector s;
  auto& e = s.matchExpressions.emplace_back();
  e.key = "k";
  e.operator_ = "In";
  EXPECT_FALSE(labelSelectorMatches(s, {}).ok());
  e.operator_ = "Near";
  e.values = {"x"};
  EXPECT_FALSE(labelSelectorMatches(s, {}).ok());
  e.operator_ = "Exists";
  EXPECT_FALSE(labelSelectorMatches(s, {}).ok());
}

}  // namespace
}  // namespace kcm::api
