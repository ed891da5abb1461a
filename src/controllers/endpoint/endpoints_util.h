#pragma once
// Endpoints subsets as upstream pkg/api/v1/endpoints packs them: RepackSubsets merges the controller's
// one-address-one-port subsets into one subset per distinct set of (address, ready) with all the ports that share
// it (an address not ready for one of its ports is not ready there), then SortSubsets orders addresses by IP and
// target UID, and ports and subsets by the FNV-128a of their dump.ForHash text, exactly as upstream so the objects
// written compare equal to upstream's. Ports are grouped by value; upstream keys them by the Go struct, whose
// appProtocol is a pointer, which within one sync always points into the same Service port (so: by value too).
#include <vector>

#include "api/gen/core_v1.h"

namespace kcm::controllers::endpoint {

std::vector<api::core::v1::EndpointSubset> repackSubsets(const std::vector<api::core::v1::EndpointSubset>& subsets);
std::vector<api::core::v1::EndpointSubset> sortSubsets(std::vector<api::core::v1::EndpointSubset> subsets);
bool lessEndpointAddress(const api::core::v1::EndpointAddress& a, const api::core::v1::EndpointAddress& b);

// endpointSubsetsEqualIgnoreResourceVersion: semantic equality (nil and empty alike), target references compared
// without their resourceVersion.
bool subsetsEqualIgnoreResourceVersion(const std::vector<api::core::v1::EndpointSubset>& a,
                                       const std::vector<api::core::v1::EndpointSubset>& b);

}  // namespace kcm::controllers::endpoint
