#pragma once
// Finalizer predicates shared by the storage protection controllers (upstream pkg/controller/volume/protectionutil).
#include <string_view>

#include "api/gen/meta_v1.h"
#include "base/status.h"
#include "client/typed_client.h"

namespace kcm::controllers::volume::protectionutil {

// kubernetes.io/pvc-protection and kubernetes.io/pv-protection, as upstream's volumeutil constants.
inline constexpr std::string_view kPVCProtectionFinalizer = "kubernetes.io/pvc-protection";
inline constexpr std::string_view kPVProtectionFinalizer = "kubernetes.io/pv-protection";

bool hasFinalizer(const api::meta::v1::ObjectMeta& m, std::string_view finalizer);
// IsDeletionCandidate: being deleted and still holding the finalizer.
inline bool IsDeletionCandidate(const api::meta::v1::ObjectMeta& m, std::string_view finalizer) {
  return m.deletionTimestamp.has_value() && hasFinalizer(m, finalizer);
}
// NeedToAddFinalizer: not being deleted and lacking the finalizer.
inline bool NeedToAddFinalizer(const api::meta::v1::ObjectMeta& m, std::string_view finalizer) {
  return !m.deletionTimestamp.has_value() && !hasFinalizer(m, finalizer);
}
// removeFinalizer: every occurrence dropped, the order of the others kept.
void removeFinalizer(api::meta::v1::ObjectMeta& m, std::string_view finalizer);

// updateFinalizer: an Update of a copy of obj with the finalizer added or removed (a conflict on a stale copy is
// an error the caller requeues, as upstream). The caller includes T's JSON codec and logs as its upstream does.
template <class T>
Status updateFinalizer(client::RestClient& c, const T& obj, std::string_view finalizer, bool add) {
  T clone = obj;
  if (add) clone.metadata.finalizers.emplace_back(finalizer);
  else removeFinalizer(clone.metadata, finalizer);
  auto r = client::update<T>(c, clone);
  return r.ok() ? Status::Ok() : r.status();
}

}  // namespace kcm::controllers::volume::protectionutil
