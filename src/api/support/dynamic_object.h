#pragma once
// DynamicObject: an object of a resource known only at run time (found by discovery, CRDs included):
// apiVersion, kind and a typed ObjectMeta; every other member (spec, status, data, ...) is kept verbatim as
// raw JSON in unknownFields and re-encoded unchanged. It is PartialObjectMetadata's shape, so the same codec
// serves both, and a DynamicObject list is a PartialObjectMetadataList.
#include <optional>
#include <string>
#include <string_view>

#include "api/gen/meta_v1.h"

namespace kcm::api {

using DynamicObject = meta::v1::PartialObjectMetadata;
using DynamicObjectList = meta::v1::PartialObjectMetadataList;

// The raw JSON of a top-level member other than apiVersion/kind/metadata ("spec", "status"), if present.
inline std::optional<std::string_view> dynamicField(const DynamicObject& o, std::string_view key) {
  if (const auto* f = o.unknownFields.fields())
    for (const auto& [k, v] : *f)
      if (k == key) return std::string_view(v);
  return std::nullopt;
}

}  // namespace kcm::api
