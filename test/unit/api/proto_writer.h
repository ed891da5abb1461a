#pragma once
// A minimal protobuf writer for tests: builds the bytes the apiserver would send (field numbers from the pinned
// generated.proto), so decoders are checked against hand-written wire data.
#include <cstdint>
#include <string>
#include <string_view>

namespace kcm::api::prototest {

class Msg {
 public:
  Msg& varint(uint32_t field, uint64_t v) { tag(field, 0); putVarint(v); return *this; }
  Msg& str(uint32_t field, std::string_view s) { tag(field, 2); putVarint(s.size()); b_.append(s); return *this; }
  Msg& msg(uint32_t field, const Msg& m) { return str(field, m.b_); }
  // A map entry {key = 1, value = 2}.
  Msg& entry(uint32_t field, std::string_view k, std::string_view v) { return msg(field, Msg().str(1, k).str(2, v)); }
  Msg& entry(uint32_t field, std::string_view k, const Msg& v) { return msg(field, Msg().str(1, k).msg(2, v)); }
  Msg& raw(std::string_view bytes) { b_.append(bytes); return *this; }
  const std::string& bytes() const { return b_; }

  // "k8s\0" + runtime.Unknown {typeMeta {apiVersion, kind}, raw}.
  static std::string envelope(std::string_view apiVersion, std::string_view kind, const Msg& m) {
    return std::string("k8s\0", 4) + Msg().msg(1, Msg().str(1, apiVersion).str(2, kind)).str(2, m.b_).b_;
  }
  // A length-delimited frame of a protobuf watch: metav1.WatchEvent {type, object RawExtension {raw}}.
  static std::string watchFrame(std::string_view type, const std::string& enveloped, bool lengthPrefix = true) {
    std::string ev = Msg().str(1, type).msg(2, Msg().str(1, enveloped)).b_;
    if (!lengthPrefix) return ev;
    std::string out(4, '\0');
    for (int i = 0; i < 4; ++i) out[static_cast<size_t>(i)] = static_cast<char>((ev.size() >> (24 - 8 * i)) & 0xff);
    return out + ev;
  }

 private:
  void tag(uint32_t field, uint32_t wire) { putVarint((uint64_t{field} << 3) | wire); }
  void putVarint(uint64_t v) {
    while (v >= 0x80) {
      b_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    b_.push_back(static_cast<char>(v));
  }
  std::string b_;
};

}  // namespace kcm::api::prototest
