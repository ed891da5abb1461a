#pragma once
// Random (version 4) UUIDs in the canonical 8-4-4-4-12 form, as k8s.io/apimachinery's uuid.NewUUID prints them.
#include <string>

namespace kcm {

std::string newUUID();

}  // namespace kcm
