#include "runtime/expectations.h"

namespace kcm::runtime {

bool ControllerExpectations::satisfiedExpectations(const std::string& key) {
  std::lock_guard l(mu_);
  auto it = records_.find(key);
  if (it == records_.end()) return true;  // never set, or deleted: sync
  const Record& r = it->second;
  if (r.add <= 0 && r.del <= 0) return true;
  return clock_.now() - r.timestamp > kExpectationsTimeout;  // expired: a watch event may have been lost
}

void ControllerExpectations::setExpectations(const std::string& key, int add, int del) {
  std::lock_guard l(mu_);
  records_[key] = Record{add, del, clock_.now()};
}

void ControllerExpectations::raiseExpectations(const std::string& key, int add, int del) {
  std::lock_guard l(mu_);
  auto it = records_.find(key);
  if (it == records_.end()) return;
  it->second.add += add;
  it->second.del += del;
}

void ControllerExpectations::lowerExpectations(const std::string& key, int add, int del) {
  std::lock_guard l(mu_);
  auto it = records_.find(key);
  if (it == records_.end()) return;
  it->second.add -= add;
  it->second.del -= del;
}

void ControllerExpectations::deleteExpectations(const std::string& key) {
  std::lock_guard l(mu_);
  records_.erase(key);
}

ControllerExpectations::Counts ControllerExpectations::get(const std::string& key) {
  std::lock_guard l(mu_);
  auto it = records_.find(key);
  if (it == records_.end()) return {};
  return {it->second.add, it->second.del, true};
}

void UIDTrackingControllerExpectations::expectDeletions(const std::string& key, const std::set<std::string>& uids) {
  {
    std::lock_guard l(uidMu_);
    uids_[key] = uids;
  }
  ControllerExpectations::expectDeletions(key, static_cast<int>(uids.size()));
}

void UIDTrackingControllerExpectations::deletionObserved(const std::string& key, const std::string& uid) {
  {
    std::lock_guard l(uidMu_);
    auto it = uids_.find(key);
    if (it == uids_.end() || !it->second.erase(uid)) return;
  }
  ControllerExpectations::deletionObserved(key);
}

void UIDTrackingControllerExpectations::deleteExpectations(const std::string& key) {
  {
    std::lock_guard l(uidMu_);
    uids_.erase(key);
  }
  ControllerExpectations::deleteExpectations(key);
}

std::set<std::string> UIDTrackingControllerExpectations::getUIDs(const std::string& key) {
  std::lock_guard l(uidMu_);
  auto it = uids_.find(key);
  return it == uids_.end() ? std::set<std::string>{} : it->second;
}

}  // namespace kcm::runtime
