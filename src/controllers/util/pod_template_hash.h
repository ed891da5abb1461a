#pragma once
// The pod-template-hash: upstream's controller.ComputeHash (pkg/controller/controller_utils.go), which names a
// Deployment's ReplicaSets and labels their pods, reproduced exactly so that we pick the names upstream picks.
//
// Upstream hashes the Go struct, not the JSON: FNV-32a over k8s.io/utils/dump.ForHash of the PodTemplateSpec
// (spew's "%#v" with sorted map keys), then, when a collision count is set, 8 bytes holding it as a little-endian
// uint32, and encodes the decimal of the sum with rand.SafeEncodeString. We print our decoded struct as that dump
// (pod_template_dump_gen.cc, generated from the Go types by hack/podtemplatehash) without building the text.
//
// Faithful for templates as the apiserver serves them. Known limits, all outside what the apiserver sends:
//  - an empty list or map prints as nil (our structs do not keep "[]" apart from absent; the apiserver never
//    sends empty lists or maps, and upstream, reading protobuf, sees nil too);
//  - a non-zero metav1.Time (e.g. a template's creationTimestamp) prints with the location upstream has when its
//    local time zone is UTC without zone data (TZ=UTC or no /etc/localtime); other zones change upstream's hash.
//
// Thread-safety: pure functions.
#include <cstdint>
#include <optional>
#include <string>

#include "api/gen/core_v1.h"

namespace kcm::controllers {

// controller.ComputeHash(template, collisionCount).
std::string computeHash(const api::core::v1::PodTemplateSpec& t, std::optional<int32_t> collisionCount);

// The text upstream feeds to FNV-32a for t (without the collision count): for tests and debugging.
std::string podTemplateDumpForHash(const api::core::v1::PodTemplateSpec& t);

}  // namespace kcm::controllers
