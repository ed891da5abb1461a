#pragma once
// ControllerExpectations and UIDTrackingControllerExpectations, as upstream's pkg/controller/controller_utils.go:
// a controller records how many creates/deletes it has issued for a key and holds off its next sync until the
// informer has shown them (or 5 minutes pass, in case a watch event was lost). Thread-safe.
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "base/clock.h"

namespace kcm::runtime {

inline constexpr auto kExpectationsTimeout = std::chrono::minutes(5);

class ControllerExpectations {
 public:
  explicit ControllerExpectations(Clock& clock = RealClock::get()) : clock_(clock) {}
  virtual ~ControllerExpectations() = default;
  // True when there is no record for key, the expectations are met, or they expired.
  bool satisfiedExpectations(const std::string& key);
  void setExpectations(const std::string& key, int add, int del);
  void expectCreations(const std::string& key, int adds) { setExpectations(key, adds, 0); }
  void expectDeletions(const std::string& key, int dels) { setExpectations(key, 0, dels); }
  void creationObserved(const std::string& key) { lowerExpectations(key, 1, 0); }
  void deletionObserved(const std::string& key) { lowerExpectations(key, 0, 1); }
  void raiseExpectations(const std::string& key, int add, int del);
  void lowerExpectations(const std::string& key, int add, int del);
  void deleteExpectations(const std::string& key);
  // (add, del, exists) for tests and logs.
  struct Counts {
    int add = 0, del = 0;
    bool exists = false;
  };
  Counts get(const std::string& key);

 private:
  struct Record {
    int add = 0, del = 0;
    Clock::TimePoint timestamp;
  };
  Clock& clock_;
  std::mutex mu_;
  std::unordered_map<std::string, Record> records_;
};

// Deletion expectations keyed by pod UID, so a pod deletion observed twice (update with deletionTimestamp, then
// delete) lowers the count once.
class UIDTrackingControllerExpectations : public ControllerExpectations {
 public:
  using ControllerExpectations::ControllerExpectations;
  void expectDeletions(const std::string& key, const std::set<std::string>& uids);
  void deletionObserved(const std::string& key, const std::string& uid);
  void deleteExpectations(const std::string& key);
  std::set<std::string> getUIDs(const std::string& key);

 private:
  std::mutex uidMu_;
  std::unordered_map<std::string, std::set<std::string>> uids_;
};

}  // namespace kcm::runtime
