#include "api/support/string.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <unordered_set>
#include <utility>

namespace kcm::api {
namespace {

TEST(ApiString, IsHalfTheSizeOfStdString) { EXPECT_EQ(sizeof(String), 16u); }

TEST(ApiString, KeepsEveryLengthAroundTheInlineLimitNulTerminated) {
  for (size_t n : {0, 1, 14, 15, 16, 17, 100, 5000}) {
    std::string text(n, 'x');
    for (size_t i = 0; i < n; ++i) text[i] = static_cast<char>('a' + i % 26);
    String s(text);
    EXPECT_EQ(s.size(), n);
    EXPECT_EQ(s.view(), text);
    EXPECT_EQ(s.c_str()[n], '\0') << n;
    EXPECT_EQ(std::strlen(s.c_str()), n);
    EXPECT_EQ(s.empty(), n == 0);
  }
}

TEST(ApiString, CopiesMovesAndSelfAssignmentsKeepTheText) {
  String longer(std::string(40, 'q')), shorter("short");
  String c = longer;
  EXPECT_EQ(c, longer);
  String m = std::move(c);
  EXPECT_EQ(m, std::string(40, 'q'));
  EXPECT_TRUE(c.empty());  // NOLINT: moved-from is empty by contract
  m = shorter;
  EXPECT_EQ(m, "short");
  m = longer;
  m = m;  // NOLINT: self-assignment
  EXPECT_EQ(m, longer);
  m = std::string_view(m).substr(30);  // assigning a view of its own text
  EXPECT_EQ(m, std::string(10, 'q'));
  String n(std::string(20, 'n'));
  n = std::move(n);  // NOLINT: self-move leaves the value
  EXPECT_EQ(n.size(), 20u);
  const char* null = nullptr;
  n = null;
  EXPECT_TRUE(n.empty());
}

TEST(ApiString, ComparesWithEveryStringKindBothWays) {
  String s("web-1");
  std::string std_s = "web-1";
  EXPECT_TRUE(s == "web-1");
  EXPECT_TRUE("web-1" == s);
  EXPECT_TRUE(s == std_s);
  EXPECT_TRUE(std_s == s);
  EXPECT_TRUE(s == std::string_view("web-1"));
  EXPECT_TRUE(s != "web-2");
  EXPECT_TRUE(s < String("web-2"));
  EXPECT_TRUE(s < "web-2");
  EXPECT_TRUE(std::string("a") < s);
  EXPECT_GT(String("b").compare("a"), 0);
}

TEST(ApiString, ConcatenatesIntoStdString) {
  String ns("default"), name(std::string(20, 'p'));
  std::string key = ns + "/" + name;
  EXPECT_EQ(key, "default/" + std::string(20, 'p'));
  EXPECT_EQ(std::string("x") + ns, "xdefault");
  EXPECT_EQ(ns + std::string("y"), "defaulty");
  EXPECT_EQ(ns + '.' + ns, "default.default");
  String grown("abc");
  grown += std::string(20, 'd');
  grown.push_back('e');
  EXPECT_EQ(grown, "abc" + std::string(20, 'd') + "e");
}

TEST(ApiString, WorksAsKeyAndWithStreamsAndStdStringApis) {
  std::unordered_set<String> set{String("a"), String(std::string(30, 'b'))};
  EXPECT_EQ(set.count(String("a")), 1u);
  std::map<std::string, int> m;
  m[String("k")] = 1;
  EXPECT_EQ(m.at("k"), 1);
  std::ostringstream os;
  os << String("out");
  EXPECT_EQ(os.str(), "out");
  std::string assigned;
  assigned = String("assigned-from-api-string");
  EXPECT_EQ(assigned, "assigned-from-api-string");
  String s("kube-system/coredns");
  EXPECT_EQ(s.find('/'), 11u);
  EXPECT_EQ(s.substr(12), "coredns");
  EXPECT_TRUE(s.starts_with("kube-"));
  EXPECT_TRUE(s.ends_with("dns"));
}

TEST(ApiString, InternedValuesShareOneTextAndCopiesKeepSharingIt) {
  const std::string image = "registry.k8s.io/pause:3.10-interned-test";
  String a = String::interned(image), b = String::interned(std::string(image));
  EXPECT_TRUE(a.isInterned());
  EXPECT_EQ(a.data(), b.data());  // one text for both
  EXPECT_EQ(a, image);
  String c = a;  // a copy shares it too: no allocation
  EXPECT_EQ(c.data(), a.data());
  String d;
  d = b;
  EXPECT_EQ(d.data(), a.data());
  d = "other";  // writes replace the value and leave the pool alone
  EXPECT_EQ(a, image);
  EXPECT_EQ(d, "other");
  EXPECT_FALSE(String::interned("short").isInterned());  // fits inline anyway
  EXPECT_FALSE(String::interned(std::string(String::kInternMaxLen + 1, 'l')).isInterned());
  EXPECT_EQ(String::interned(std::string(String::kInternMaxLen + 1, 'l')).size(), String::kInternMaxLen + 1);
}

}  // namespace
}  // namespace kcm::api
