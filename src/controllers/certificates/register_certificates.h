#pragma once
// Registers the init functions of the certificates family (csrsigning, csrapproving, csrcleaner, pcr cleaner, the
// kube-apiserver-serving ClusterTrustBundle publisher) and of the legacy service-account token cleaner.
#include <functional>
#include <string>

#include "controllers/registry.h"

namespace kcm::controllers {

// rootCA: the kube-apiserver CA (--root-ca-file, else the kubeconfig's), shared with the root CA publisher.
void registerCertificatesInitFuncs(const std::function<void(const std::string&, InitFunc)>& setInit,
                                   const std::function<Result<std::string>(const ControllerContext&)>& rootCA);

}  // namespace kcm::controllers
