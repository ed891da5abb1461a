#include "base/lru.h"

#include <gtest/gtest.h>

namespace kcm {
namespace {

TEST(LruMap, HoldsAtMostItsCapacityAndDropsTheLeastRecent) {
  LruMap<int> m(3);
  m["a"] = 1;
  m["b"] = 2;
  m["c"] = 3;
  ASSERT_NE(m.find("a"), nullptr);  // "a" is now the most recent; "b" the least
  m["d"] = 4;
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.find("b"), nullptr);
  ASSERT_NE(m.find("a"), nullptr);
  EXPECT_EQ(*m.find("a"), 1);
  EXPECT_EQ(*m.find("c"), 3);
  EXPECT_EQ(*m.find("d"), 4);
}

TEST(LruMap, OperatorBracketOnAPresentKeyKeepsItsValueAndRefreshesIt) {
  LruMap<int> m(2);
  m["a"] = 1;
  m["b"] = 2;
  EXPECT_EQ(m["a"], 1);
  m["c"] = 3;  // drops "b", the least recent
  EXPECT_EQ(m.find("b"), nullptr);
  EXPECT_NE(m.find("a"), nullptr);
}

TEST(LruMap, EraseRemovesOnlyThatKey) {
  LruMap<std::string> m(4);
  m["a"] = "x";
  m["b"] = "y";
  m.erase("a");
  m.erase("missing");
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(m.find("a"), nullptr);
  EXPECT_EQ(*m.find("b"), "y");
}

}  // namespace
}  // namespace kcm
