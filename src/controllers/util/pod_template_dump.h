#pragma once
// Internal to pod_template_hash.cc and the generated pod_template_dump_gen.cc: the writer and the building blocks
// that print our API structs as spew prints the Go structs (see pod_template_hash.h).
//
// Shapes, as spew's "%#v" writes them once the value's "(GoType)" prefix is out:
//   pointer  <nil> | the pointee (no type again)      slice  <nil> | [e1 e2]     map  <nil> | map[k1:v1 k2:v2]
// Slice elements and map values carry no type prefix; struct fields always do. Map keys in byte order.
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/gen/core_v1.h"
#include "api/gen/discovery_v1.h"
#include "api/gen/meta_v1.h"
#include "api/support/types.h"

namespace kcm::controllers::podtemplatehash {

// Feeds FNV-32a (pod-template-hash) or FNV-128a (Endpoints ordering) as it goes and, when given a string, also
// keeps the text.
class Dumper {
 public:
  enum class Hash { kFnv32a, kFnv128a };
  explicit Dumper(std::string* text = nullptr, Hash hash = Hash::kFnv32a) : text_(text), hash_(hash) {}

  void put(std::string_view s) {
    if (hash_ == Hash::kFnv32a) {
      for (unsigned char c : s) {
        sum_ ^= c;
        sum_ *= 16777619u;
      }
    } else {
      for (unsigned char c : s) {
        sum128_ ^= c;
        sum128_ *= kFnv128Prime;
      }
    }
    if (text_) text_->append(s);
  }
  void num(int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    put(std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
  }
  void unum(uint64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    put(std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
  }
  void boolean(bool b) { put(b ? "true" : "false"); }
  uint32_t sum() const { return sum_; }
  // Go's hash.Sum of fnv.New128a is these 16 bytes big-endian: comparing the numbers compares the sums' bytes.
  unsigned __int128 sum128() const { return sum128_; }

 private:
  static constexpr unsigned __int128 kFnv128Prime = (static_cast<unsigned __int128>(1) << 88) + 0x13b;
  uint32_t sum_ = 2166136261u;  // FNV-32 offset basis
  unsigned __int128 sum128_ = (static_cast<unsigned __int128>(0x6c62272e07bb0142ULL) << 64) | 0x62b821756295c58dULL;
  std::string* text_;
  Hash hash_;
};

// An unset list and an empty one print alike (<nil>): see pod_template_hash.h.
template <class V, class F>
void dumpList(Dumper& d, const std::vector<V>& v, F&& each) {
  if (v.empty()) {
    d.put("<nil>");
    return;
  }
  d.put("[");
  for (size_t i = 0; i < v.size(); ++i) {
    if (i != 0) d.put(" ");
    each(v[i]);
  }
  d.put("]");
}

// StringMap (and std::map) iterate in byte order of the keys, the order spew sorts string keys in.
template <class M, class F>
void dumpMap(Dumper& d, const M& m, F&& each) {
  if (m.empty()) {
    d.put("<nil>");
    return;
  }
  d.put("map[");
  bool first = true;
  for (const auto& [k, v] : m) {
    if (!first) d.put(" ");
    first = false;
    d.put(k);
    d.put(":");
    each(v);
  }
  d.put("]");
}

// std::optional or api::Box: Go's pointer fields.
template <class P, class F>
void dumpPtr(Dumper& d, const P& p, F&& each) {
  if (!p.has_value()) {
    d.put("<nil>");
    return;
  }
  each(*p);
}

// Go types with unexported or parsed state, printed by hand (pod_template_hash.cc).
void dumpQuantity(Dumper& d, const api::Quantity& q);            // resource.Quantity as ParseQuantity leaves it
void dumpIntOrString(Dumper& d, const api::IntOrString& v);      // intstr.IntOrString
void dumpTime(Dumper& d, const api::Time& t);                    // metav1.Time after UnmarshalJSON
void dumpFieldsV1(Dumper& d, const api::RawJson& raw);           // metav1.FieldsV1{Raw}

// Generated: "(v1.PodTemplateSpec){...}", "(v1.EndpointSubset){...}", "(v1.EndpointPort){...}".
void dumpPodTemplateSpec(Dumper& d, const api::core::v1::PodTemplateSpec& t);
void dumpEndpointSubset(Dumper& d, const api::core::v1::EndpointSubset& s);
void dumpEndpointPort(Dumper& d, const api::core::v1::EndpointPort& p);
void dumpDiscoveryEndpointPort(Dumper& d, const api::discovery::v1::EndpointPort& p);

}  // namespace kcm::controllers::podtemplatehash
