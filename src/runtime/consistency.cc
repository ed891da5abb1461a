#include "runtime/consistency.h"

namespace kcm::runtime {

int compareResourceVersion(const std::string& a, const std::string& b) {
  auto digits = [](const std::string& s) {
    if (s.empty()) return std::string("0");
    for (char c : s)
      if (c < '0' || c > '9') return std::string("0");
    size_t i = s.find_first_not_of('0');
    return i == std::string::npos ? std::string("0") : s.substr(i);
  };
  std::string x = digits(a), y = digits(b);
  if (x.size() != y.size()) return x.size() < y.size() ? -1 : 1;
  return x < y ? -1 : x > y ? 1 : 0;
}

void ConsistencyStore::wroteAt(const std::string& owner, const std::string& ownerUID, const std::string& resource,
                               const std::string& rv) {
  if (resources_.empty() || rv.empty()) return;
  std::lock_guard l(mu_);
  Record& r = writes_[owner];
  if (r.uid != ownerUID) r = Record{ownerUID, {}};
  auto& v = r.versions[resource];
  if (v.empty() || compareResourceVersion(v, rv) < 0) v = rv;
}

void ConsistencyStore::clear(const std::string& owner, const std::string& ownerUID) {
  std::lock_guard l(mu_);
  auto it = writes_.find(owner);
  if (it != writes_.end() && (ownerUID.empty() || it->second.uid == ownerUID)) writes_.erase(it);
}

Status ConsistencyStore::ensureReady(const std::string& owner, std::string* lagging) {
  std::lock_guard l(mu_);
  auto it = writes_.find(owner);
  if (it == writes_.end()) return Status::Ok();
  for (const auto& [resource, wrote] : it->second.versions) {
    auto g = resources_.find(resource);
    if (g == resources_.end()) continue;
    std::string read = g->second();
    if (compareResourceVersion(read, wrote) < 0) {
      if (lagging) *lagging = resource;
      return Status(StatusCode::kUnavailable, "cache for " + resource + " is at resourceVersion " + read +
                                                  ", older than the written " + wrote);
    }
  }
  writes_.erase(it);
  return Status::Ok();
}

}  // namespace kcm::runtime
