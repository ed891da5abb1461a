#include "controllers/util/pod_template_hash.h"

#include <optional>
#include <string_view>
#include <vector>

#include "controllers/util/pod_template_dump.h"

namespace kcm::controllers {

namespace podtemplatehash {
namespace {

// ---------------------------------------------------------------------------------------------------------------
// resource.Quantity as the Go struct holds it after UnmarshalJSON: the spew dump shows its unexported fields, so
// "0.5" and "500m" (equal quantities) hash differently. The rules below follow ParseQuantity in
// k8s.io/apimachinery/pkg/api/resource/quantity.go: a fast path keeping an int64 and a decimal scale (and the
// original text when it is already canonical), else an inf.Dec rounded up to nano units.

// Unsigned big integer, little-endian 32-bit limbs, no high zero limbs (zero is empty): the inf.Dec path only.
class BigNat {
 public:
  static BigNat fromDigits(std::string_view digits) {
    BigNat n;
    for (char c : digits) n.mulAdd(10, static_cast<uint32_t>(c - '0'));
    return n;
  }
  bool isZero() const { return limbs_.empty(); }
  void mulAdd(uint32_t m, uint32_t a) {
    uint64_t carry = a;
    for (auto& x : limbs_) {
      uint64_t t = static_cast<uint64_t>(x) * m + carry;
      x = static_cast<uint32_t>(t);
      carry = t >> 32;
    }
    if (carry) limbs_.push_back(static_cast<uint32_t>(carry));
    trim();
  }
  void mulPow10(int64_t k) {
    for (; k >= 9; k -= 9) mulAdd(1000000000u, 0);
    uint32_t m = 1;
    while (k-- > 0) m *= 10;
    if (m != 1) mulAdd(m, 0);
  }
  // Divides by 10^k, rounding away from zero (inf.RoundUp on a positive value).
  void divPow10Up(int64_t k) {
    bool inexact = false;
    while (k > 0 && !isZero()) {
      uint32_t dv = 1;
      for (int i = 0; i < 9 && k > 0; ++i, --k) dv *= 10;
      if (divSmall(dv) != 0) inexact = true;
    }
    if (inexact) mulAdd(1, 1);
  }
  void shiftLeft(uint32_t bits) {
    if (isZero()) return;
    for (; bits >= 16; bits -= 16) mulAdd(1u << 16, 0);
    if (bits) mulAdd(1u << bits, 0);
  }
  int compare(const BigNat& o) const {
    if (limbs_.size() != o.limbs_.size()) return limbs_.size() < o.limbs_.size() ? -1 : 1;
    for (size_t i = limbs_.size(); i-- > 0;)
      if (limbs_[i] != o.limbs_[i]) return limbs_[i] < o.limbs_[i] ? -1 : 1;
    return 0;
  }
  // big.nat's 64-bit words.
  std::vector<uint64_t> words() const {
    std::vector<uint64_t> w;
    for (size_t i = 0; i < limbs_.size(); i += 2) {
      uint64_t lo = limbs_[i], hi = i + 1 < limbs_.size() ? limbs_[i + 1] : 0;
      w.push_back(lo | (hi << 32));
    }
    return w;
  }

 private:
  uint32_t divSmall(uint32_t dv) {
    uint64_t r = 0;
    for (size_t i = limbs_.size(); i-- > 0;) {
      uint64_t cur = (r << 32) | limbs_[i];
      limbs_[i] = static_cast<uint32_t>(cur / dv);
      r = cur % dv;
    }
    trim();
    return static_cast<uint32_t>(r);
  }
  void trim() {
    while (!limbs_.empty() && limbs_.back() == 0) limbs_.pop_back();
  }
  std::vector<uint32_t> limbs_;
};

struct GoQuantity {
  int64_t value = 0;  // i.value
  int32_t scale = 0;  // i.scale
  bool hasDec = false;
  bool decNeg = false;
  std::vector<uint64_t> decWords;  // d.Dec.unscaled.abs
  int32_t decScale = 0;            // d.Dec.scale
  std::string s;                   // the canonical text, when the input already was
  std::string format;
};

bool isDigit(char c) { return c >= '0' && c <= '9'; }

bool parseGoInt64(std::string_view s, int64_t& out) {  // strconv.ParseInt(s, 10, 64)
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return false;
  unsigned __int128 v = 0;
  for (char c : s) {
    if (!isDigit(c)) return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
    if (v > static_cast<unsigned __int128>(INT64_MAX) + 1) return false;
  }
  if (!neg && v > static_cast<unsigned __int128>(INT64_MAX)) return false;
  out = neg ? static_cast<int64_t>(-static_cast<__int128>(v)) : static_cast<int64_t>(v);
  return true;
}

// quantitySuffixer.interpret: base, exponent and format of a suffix.
bool interpretSuffix(std::string_view suf, int& base, int32_t& exponent, std::string& format) {
  static const std::pair<std::string_view, int> kDecimal[] = {{"", 0},  {"n", -9}, {"u", -6}, {"m", -3},
                                                              {"k", 3}, {"M", 6},  {"G", 9},  {"T", 12},
                                                              {"P", 15}, {"E", 18}};
  static const std::pair<std::string_view, int> kBinary[] = {{"Ki", 10}, {"Mi", 20}, {"Gi", 30},
                                                             {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  for (auto& [k, e] : kDecimal)
    if (suf == k) {
      base = 10, exponent = e, format = "DecimalSI";
      return true;
    }
  for (auto& [k, e] : kBinary)
    if (suf == k) {
      base = 2, exponent = e, format = "BinarySI";
      return true;
    }
  if (suf.size() > 1 && (suf[0] == 'e' || suf[0] == 'E')) {
    int64_t e;
    if (!parseGoInt64(suf.substr(1), e)) return false;
    base = 10, exponent = static_cast<int32_t>(e), format = "DecimalExponent";
    return true;
  }
  return false;
}

std::string_view trimSpace(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// ParseQuantity(TrimSpace(text)). nullopt where Go rejects the text (its JSON decode would fail).
std::optional<GoQuantity> parseGoQuantity(std::string_view text) {
  const std::string_view str = trimSpace(text);
  if (str.empty()) return std::nullopt;
  GoQuantity q;
  if (str == "0") {
    q.format = "DecimalSI";
    q.s = "0";
    return q;
  }

  // parseQuantityString: sign, numerator (leading zeros dropped), denominator, suffix.
  bool positive = true;
  std::string_view value, num, denom, suffix;
  size_t pos = 0;
  const size_t end = str.size();
  if (str[0] == '-' || str[0] == '+') {
    positive = str[0] != '-';
    ++pos;
  }
  while (pos < end && str[pos] == '0') ++pos;
  if (pos >= end) {
    num = value = "0";
  } else {
    size_t i = pos;
    while (i < end && isDigit(str[i])) ++i;
    num = str.substr(pos, i - pos);
    if (i >= end) {
      value = str;
    } else {
      pos = i;
      if (num.empty()) num = "0";
      bool done = false;
      if (str[pos] == '.') {
        ++pos;
        size_t j = pos;
        while (j < end && isDigit(str[j])) ++j;
        denom = str.substr(pos, j - pos);
        if (j >= end) {
          value = str;
          done = true;
        }
        pos = j;
      }
      if (!done) {
        value = str.substr(0, pos);
        const size_t suffixStart = pos;
        size_t k = pos;
        while (k < end && std::string_view("eEinumkKMGTP").find(str[k]) != std::string_view::npos) ++k;
        if (k < end && (str[k] == '-' || str[k] == '+')) ++k;
        while (k < end && isDigit(str[k])) ++k;
        if (k < end) return std::nullopt;
        suffix = str.substr(suffixStart);
      }
    }
  }

  int base = 10;
  int32_t exponent = 0;
  if (!interpretSuffix(suffix, base, exponent, q.format)) return std::nullopt;

  // Fast path: an int64 with a decimal scale, when the digits fit.
  int32_t precision = 0, scale = 0;
  int64_t mantissa = 1;
  if (q.format == "BinarySI") {
    if (exponent >= 0 && denom.empty()) {
      mantissa = int64_t{1} << exponent;
      precision = 15 - static_cast<int32_t>(num.size()) - exponent * 3 / 10 - 1;
    } else {
      precision = -1;
    }
  } else {
    scale = exponent;
    precision = 18 - static_cast<int32_t>(num.size() + denom.size());
  }
  if (precision >= 0) {
    scale -= static_cast<int32_t>(denom.size());
    if (scale >= -9) {
      const std::string shifted = std::string(num) + std::string(denom);
      int64_t v;
      if (!parseGoInt64(shifted, v)) return std::nullopt;
      const __int128 product = static_cast<__int128>(v) * mantissa;
      if (product <= INT64_MAX) {
        q.value = positive ? static_cast<int64_t>(product) : -static_cast<int64_t>(product);
        q.scale = scale;
        const bool canonical = q.format == "BinarySI"
                                   ? exponent % 10 == 0 && (v & 0x07) != 0
                                   : scale % 3 == 0 && !shifted.ends_with("000") && shifted[0] != '0';
        if (canonical) q.s = std::string(str);
        return q;
      }
    }
  }

  // inf.Dec path: the exact value, then rounded up to nano units and capped like ParseQuantity does.
  std::string digits;
  for (char c : value)
    if (isDigit(c)) digits += c;
  if (digits.empty()) return std::nullopt;
  const size_t dot = value.find('.');
  const int64_t fracDigits = dot == std::string_view::npos ? 0 : static_cast<int64_t>(value.size() - dot - 1);
  // A value this far from 1 never reaches us from the apiserver; refuse rather than build a huge number.
  if (exponent > 4000 || exponent < -4000 || digits.size() > 4000) return std::nullopt;
  BigNat unscaled = BigNat::fromDigits(digits);
  int64_t decScale = fracDigits;
  if (base == 10) {
    decScale -= exponent;
  } else {
    unscaled.shiftLeft(static_cast<uint32_t>(exponent));
  }
  if (!unscaled.isZero()) {
    if (decScale <= 9)
      unscaled.mulPow10(9 - decScale);
    else
      unscaled.divPow10Up(decScale - 9);
    decScale = 9;
    if (q.format == "BinarySI") {
      BigNat maxAllowed = BigNat::fromDigits("9223372036854775807");
      BigNat maxScaled = maxAllowed;
      maxScaled.mulPow10(9);
      BigNat one = BigNat::fromDigits("1");
      one.mulPow10(9);
      if (unscaled.compare(maxScaled) > 0) {
        unscaled = maxAllowed;
        decScale = 0;
      } else if (unscaled.compare(one) < 0) {
        q.format = "DecimalSI";  // a fraction of a unit reads better in decimal
      }
    }
  }
  q.hasDec = true;
  q.decNeg = !positive && !unscaled.isZero();
  q.decWords = unscaled.words();
  q.decScale = static_cast<int32_t>(decScale);
  return q;
}

}  // namespace

void dumpQuantity(Dumper& d, const api::Quantity& quantity) {
  // An unset Quantity (never decoded) is Go's zero value.
  GoQuantity q;
  if (!quantity.str().empty()) {
    if (auto parsed = parseGoQuantity(quantity.str())) q = std::move(*parsed);
  }
  d.put("{i:(resource.int64Amount){value:(int64)");
  d.num(q.value);
  d.put(" scale:(resource.Scale)");
  d.num(q.scale);
  d.put("} d:(resource.infDecAmount){Dec:(*inf.Dec)");
  if (!q.hasDec) {
    d.put("<nil>");
  } else {
    d.put("{unscaled:(big.Int){neg:(bool)");
    d.boolean(q.decNeg);
    d.put(" abs:(big.nat)");
    if (q.decWords.empty()) {
      d.put("<nil>");
    } else {
      d.put("[");
      for (size_t i = 0; i < q.decWords.size(); ++i) {
        if (i != 0) d.put(" ");
        d.unum(q.decWords[i]);
      }
      d.put("]");
    }
    d.put("} scale:(inf.Scale)");
    d.num(q.decScale);
    d.put("}");
  }
  d.put("} s:(string)");
  d.put(q.s);
  d.put(" Format:(resource.Format)");
  d.put(q.format);
  d.put("}");
}

void dumpIntOrString(Dumper& d, const api::IntOrString& v) {
  d.put("{Type:(intstr.Type)");
  d.num(v.isString ? 1 : 0);
  d.put(" IntVal:(int32)");
  d.num(v.isString ? 0 : v.intVal);
  d.put(" StrVal:(string)");
  d.put(v.isString ? std::string_view(v.strVal) : std::string_view());
  d.put("}");
}

void dumpTime(Dumper& d, const api::Time& t) {
  // time.Time{wall, ext, loc}. A parsed time has no monotonic reading: wall holds the nanoseconds (ours are
  // whole seconds), ext the seconds since year 1. metav1.Time.UnmarshalJSON converts to time.Local, whose
  // contents depend on upstream's time zone; this is the UTC fallback Go uses with TZ=UTC or no /etc/localtime.
  constexpr int64_t kUnixToInternal = 62135596800;  // seconds from 0001-01-01 to 1970-01-01
  d.put("{Time:(time.Time){wall:(uint64)0 ext:(int64)");
  if (t.isZero()) {
    d.put("0 loc:(*time.Location)<nil>}}");
    return;
  }
  d.num(t.unixSeconds + kUnixToInternal);
  d.put(" loc:(*time.Location){name:(string)UTC zone:([]time.zone)<nil> tx:([]time.zoneTrans)<nil> "
        "extend:(string) cacheStart:(int64)0 cacheEnd:(int64)0 cacheZone:(*time.zone)<nil>}}}");
}

void dumpFieldsV1(Dumper& d, const api::RawJson& raw) {
  d.put("{Raw:([]uint8)");
  std::string_view text = trimSpace(raw.json);
  if (text.empty()) {
    d.put("<nil>");
  } else {
    d.put("[");
    for (size_t i = 0; i < text.size(); ++i) {
      if (i != 0) d.put(" ");
      d.unum(static_cast<unsigned char>(text[i]));
    }
    d.put("]");
  }
  d.put("}");
}

}  // namespace podtemplatehash

std::string computeHash(const api::core::v1::PodTemplateSpec& t, std::optional<int32_t> collisionCount) {
  podtemplatehash::Dumper d;
  podtemplatehash::dumpPodTemplateSpec(d, t);
  if (collisionCount) {
    // Eight bytes: the count as a little-endian uint32, then four zeros.
    const auto c = static_cast<uint32_t>(*collisionCount);
    char bytes[8] = {};
    for (int i = 0; i < 4; ++i) bytes[i] = static_cast<char>((c >> (8 * i)) & 0xff);
    d.put(std::string_view(bytes, sizeof bytes));
  }
  // rand.SafeEncodeString of the decimal sum: each digit maps into an alphabet without vowels.
  static constexpr std::string_view kAlphanums = "bcdfghjklmnpqrstvwxz2456789";
  std::string out = std::to_string(d.sum());
  for (char& ch : out) ch = kAlphanums[static_cast<unsigned char>(ch) % kAlphanums.size()];
  return out;
}

std::string podTemplateDumpForHash(const api::core::v1::PodTemplateSpec& t) {
  std::string text;
  podtemplatehash::Dumper d(&text);
  podtemplatehash::dumpPodTemplateSpec(d, t);
  return text;
}

}  // namespace kcm::controllers
