#pragma once
// Standard base64 (RFC 4648 with padding), as Go's encoding/base64.StdEncoding: []byte fields, kubeconfig
// "*-data", Basic auth. Light header; defined in codec.cc.
#include <string>
#include <string_view>

namespace kcm::api::codec {

std::string base64Encode(std::string_view in);
bool base64Decode(std::string_view in, std::string& out);

}  // namespace kcm::api::codec
