#pragma once
// The templates behind the generated light JSON entry points (api/gen/*_json.cc): a list decoded item by item,
// and a watch event line. Heavy (simdjson): included only by generated *_json.cc files, so each is
// instantiated once per kind, in the api library.
#include <functional>
#include <string>
#include <string_view>

#include "api/gen/meta_v1_codec.h"
#include "api/support/codec.h"
#include "api/support/json_api.h"

namespace kcm::api {

// Decodes a list response, handing each item to onItem as it is decoded: no vector of items is ever built,
// so a 10k-object list costs one object at a time beyond what the caller keeps.
template <class T>
Status decodeListItemsImpl(const std::string& body, const std::function<void(T&&)>& onItem, ListInfo& info) {
  PaddedInput input(body);
  ::simdjson::ondemand::document doc;
  ::simdjson::error_code err = ::simdjson::SUCCESS;
  [&] {
    if ((err = codec::threadParser().iterate(input.view()).get(doc))) return;
    ::simdjson::ondemand::object obj;
    if ((err = doc.get_object().get(obj))) return;
    for (auto field : obj) {
      std::string_view key;
      if ((err = field.unescaped_key().get(key))) return;
      ::simdjson::ondemand::value v;
      if ((err = field.value().get(v))) return;
      if (key == "metadata") {
        meta::v1::ListMeta m;
        if ((err = decodeValue(v, m))) return;
        info.resourceVersion = std::move(m.resourceVersion);
        info.continueToken = std::move(m.continue_);
      } else if (key == "items" && !codec::isNull(v)) {
        ::simdjson::ondemand::array arr;
        if ((err = v.get_array().get(arr))) return;
        for (auto item : arr) {
          ::simdjson::ondemand::value iv;
          if ((err = item.get(iv))) return;
          T t;
          if ((err = decodeValue(iv, t))) return;
          onItem(std::move(t));
        }
      }
    }
  }();
  codec::releaseLargeParserBuffers();
  if (err) return Status(StatusCode::kInvalidArgument, std::string("decoding list: ") + ::simdjson::error_message(err));
  return Status::Ok();
}

// Decodes one watch event line. An ERROR event's object is decoded into `status`.
template <class T>
Status decodeWatchEventImpl(std::string_view line, std::string& type, T& object, meta::v1::Status& status) {
  ::simdjson::padded_string padded(line);
  ::simdjson::ondemand::document doc;
  auto bad = [](::simdjson::error_code e) {
    return Status(StatusCode::kInvalidArgument, std::string("decoding watch event: ") + ::simdjson::error_message(e));
  };
  if (auto e = codec::threadParser().iterate(padded).get(doc)) return bad(e);
  ::simdjson::ondemand::object obj;
  if (auto e = doc.get_object().get(obj)) return bad(e);
  std::string rawObject;
  for (auto field : obj) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return bad(e);
    ::simdjson::ondemand::value v;
    if (auto e = field.value().get(v)) return bad(e);
    if (key == "type") {
      if (auto e = codec::decodeValue(v, type)) return bad(e);
    } else if (key == "object") {
      if (!type.empty() && type != "ERROR") {
        if (auto e = decodeValue(v, object)) return bad(e);
      } else {  // type not seen yet (or ERROR): keep the text, decode once the type is known
        UnknownFields tmp;
        if (auto e = tmp.capture("o", v)) return bad(e);
        rawObject = tmp.fields()->front().second;
      }
    }
  }
  if (!rawObject.empty()) {
    if (type == "ERROR") return decodeJson(rawObject, status);
    return decodeJson(rawObject, object);
  }
  return Status::Ok();
}

}  // namespace kcm::api
