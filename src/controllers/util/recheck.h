#pragma once
// upstream controller.RecheckDeletionTimestamp over a live (uncached) GET of the owner: the check a
// controller-ref manager runs once before its first adoption, so that a deleted or replaced owner adopts nothing.
#include <functional>
#include <memory>
#include <string>

#include "client/typed_client.h"

namespace kcm::controllers {

template <class T>
std::function<Status()> recheckDeletionTimestamp(std::shared_ptr<client::RestClient> c, std::string kind,
                                                 std::string ns, std::string name, std::string uid) {
  return [c = std::move(c), kind = std::move(kind), ns = std::move(ns), name = std::move(name),
          uid = std::move(uid)]() -> Status {
    auto fresh = client::get<T>(*c, ns, name);
    if (!fresh.ok()) return fresh.status();
    if (fresh->metadata.uid != uid)
      return Status(StatusCode::kConflict, "original " + kind + " " + ns + "/" + name + " is gone: got uid " +
                                               fresh->metadata.uid + ", wanted " + uid);
    if (fresh->metadata.deletionTimestamp)
      return Status(StatusCode::kConflict,
                    ns + "/" + name + " has just been deleted at " + fresh->metadata.deletionTimestamp->rfc3339());
    return Status::Ok();
  };
}

}  // namespace kcm::controllers
