#pragma once
// The apiserver's protobuf framing around the generated decoders, instantiated in api/gen/*_json.cc:
//  - an object or list: the 4 bytes "k8s\0", then runtime.Unknown {typeMeta = 1 {apiVersion = 1, kind = 2},
//    raw = 2 (the message), contentEncoding = 3, contentType = 4};
//  - a watch frame (one length-delimited frame of a `;stream=watch` response, the length already taken off):
//    metav1.WatchEvent {type = 1, object = 2 RawExtension {raw = 1: an enveloped object as above}}.
#include <functional>
#include <string>
#include <string_view>

#include "api/gen/meta_v1_proto.h"
#include "api/support/json_api.h"
#include "api/support/proto.h"
#include "base/status.h"

namespace kcm::api::proto {

inline Status bad(std::string_view what) {
  return Status(StatusCode::kInvalidArgument, "decoding protobuf " + std::string(what) + ": malformed message");
}

template <class T>
void setTypeMeta(T& out, const Envelope& e) {
  if constexpr (requires { out.apiVersion = String(e.apiVersion); out.kind = String(e.kind); }) {
    if (!e.apiVersion.empty()) out.apiVersion = internedText(e.apiVersion);
    if (!e.kind.empty()) out.kind = internedText(e.kind);
  }
}

template <class T>
Status decodeObject(std::string_view b, T& out) {
  Envelope e;
  if (!unwrap(b, e)) return bad("envelope");
  out = T{};
  if (!decodeProto(e.raw, out)) return bad(e.kind.empty() ? "object" : e.kind);
  setTypeMeta(out, e);
  return Status::Ok();
}

// A list {metadata = 1 ListMeta, items = 2}: each item to onItem as it is decoded (no vector of items).
template <class T>
Status decodeListItems(std::string_view b, const std::function<void(T&&)>& onItem, ListInfo& info) {
  Envelope e;
  if (!unwrap(b, e)) return bad("list envelope");
  Reader r(e.raw);
  Tag t;
  while (r.next(t)) {
    if (t.field == 1) {
      meta::v1::ListMeta m;
      if (!read(r, t, m)) return bad("list metadata");
      info.resourceVersion.assign(m.resourceVersion.view());
      info.continueToken.assign(m.continue_.view());
    } else if (t.field == 2) {
      std::string_view item;
      if (t.wire != kLen || !r.bytes(item)) return bad("list item");
      T obj;
      if (!decodeProto(item, obj)) return bad("list item");
      onItem(std::move(obj));
    } else if (!r.skip(t)) {
      return bad("list");
    }
  }
  return r.ok() ? Status::Ok() : bad("list");
}

template <class T>
Status decodeWatchEvent(std::string_view frame, std::string& type, T& object, meta::v1::Status& status) {
  std::string_view raw;
  if (!splitWatchEvent(frame, type, raw)) return bad("watch event");
  if (type == "ERROR") {
    if (isEnvelope(raw)) return decodeObject(raw, status);
    return decodeProto(raw, status) ? Status::Ok() : bad("watch event status");
  }
  if (isEnvelope(raw)) return decodeObject(raw, object);
  return decodeProto(raw, object) ? Status::Ok() : bad("watch event object");
}

}  // namespace kcm::api::proto
