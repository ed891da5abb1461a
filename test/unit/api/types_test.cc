#include "api/support/types.h"

#include <gtest/gtest.h>

namespace kcm::api {
namespace {

struct QuantityCase {
  const char* text;
  int64_t value;
  int64_t milli;
};

TEST(Quantity, ParsesLikeApimachinery) {
  const QuantityCase cases[] = {
      {"0", 0, 0},           {"1", 1, 1000},           {"100m", 1, 100},           {"1500m", 2, 1500},
      {"0.5", 1, 500},       {"1Ki", 1024, 1024000},   {"1Mi", 1 << 20, 1000LL << 20}, {"1Gi", 1LL << 30, 1000LL << 30},
      {"1k", 1000, 1000000}, {"1M", 1000000, 1000000000}, {"1e3", 1000, 1000000},    {"1E3", 1000, 1000000},
      {"5n", 1, 1},          {"1u", 1, 1},             {"-100m", 0, -100},         {"+2", 2, 2000},
      {".5", 1, 500},        {"1.5Gi", 1610612736, 1610612736000},              {"2e-3", 1, 2},
  };
  for (const auto& c : cases) {
    auto q = Quantity::parse(c.text);
    ASSERT_TRUE(q.has_value()) << c.text;
    EXPECT_EQ(q->value(), c.value) << c.text;
    EXPECT_EQ(q->milliValue(), c.milli) << c.text;
    EXPECT_EQ(q->str(), c.text);
  }
}

TEST(Quantity, RejectsWhatGoRejects) {
  for (const char* bad : {"", "abc", "1Kb", "1.2.3", "1 Gi", "Gi", "1e", "--1", "1iB", "."})
    EXPECT_FALSE(Quantity::parse(bad).has_value()) << bad;
}

TEST(Quantity, ComparesByValue) {
  EXPECT_EQ(Quantity::parse("1")->compare(*Quantity::parse("1000m")), 0);
  EXPECT_LT(Quantity::parse("999m")->compare(*Quantity::parse("1")), 0);
  EXPECT_GT(Quantity::parse("1Ki")->compare(*Quantity::parse("1k")), 0);
  EXPECT_EQ(Quantity::fromMilli(1500).str(), "1500m");
  EXPECT_EQ(Quantity::fromMilli(2000).str(), "2");
}

TEST(Quantity, SaturatesInsteadOfOverflowing) {
  EXPECT_EQ(Quantity::parse("100E")->value(), INT64_MAX);
  EXPECT_EQ(Quantity::parse("-100E")->value(), INT64_MIN);
}

TEST(IntOrString, ScaledValueFromIntOrPercent) {
  EXPECT_EQ(getScaledValueFromIntOrPercent(IntOrString::fromInt(3), 10, true), 3);
  EXPECT_EQ(getScaledValueFromIntOrPercent(IntOrString::fromString("25%"), 10, true), 3);
  EXPECT_EQ(getScaledValueFromIntOrPercent(IntOrString::fromString("25%"), 10, false), 2);
  EXPECT_EQ(getScaledValueFromIntOrPercent(IntOrString::fromString("0%"), 10, true), 0);
  EXPECT_EQ(getScaledValueFromIntOrPercent(IntOrString::fromString("100%"), 7, false), 7);
  EXPECT_FALSE(getScaledValueFromIntOrPercent(IntOrString::fromString("25"), 10, true).has_value());
  EXPECT_FALSE(getScaledValueFromIntOrPercent(IntOrString::fromString("x%"), 10, true).has_value());
}

TEST(Time, ParsesRfc3339AndFormatsUtc) {
  auto t = Time::parse("2026-11-29T17:58:16Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->unixSeconds, 1795975096);
  EXPECT_EQ(t->rfc3339(), "2026-11-29T17:58:16Z");
  auto off = Time::parse("2026-11-29T19:58:16.999+02:00");
  ASSERT_TRUE(off);
  EXPECT_EQ(off->rfc3339(), "2026-11-29T17:58:16Z");  // fraction dropped, UTC like metav1.Time
  EXPECT_EQ(Time::parse("1970-01-01T00:00:00Z")->unixSeconds, 0);
  EXPECT_EQ(Time::parse("1969-12-31T23:59:59Z")->rfc3339(), "1969-12-31T23:59:59Z");
  for (const char* bad : {"", "2026-11-29", "2026-11-29T17:58:16", "2026-13-01T00:00:00Z", "2026-11-29T17:58:16Zx"})
    EXPECT_FALSE(Time::parse(bad).has_value()) << bad;
}

TEST(MicroTime, KeepsMicroseconds) {
  auto t = MicroTime::parse("2026-11-29T17:58:16.123456Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->rfc3339Micro(), "2026-11-29T17:58:16.123456Z");
  EXPECT_EQ(MicroTime::parse("2026-11-29T17:58:16Z")->rfc3339Micro(), "2026-11-29T17:58:16.000000Z");
  EXPECT_EQ(MicroTime::fromUnixMicros(-1).rfc3339Micro(), "1969-12-31T23:59:59.999999Z");
}

}  // namespace
}  // namespace kcm::api
