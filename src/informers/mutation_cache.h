#pragma once
// MutationCache<T>: client-go's cache.NewIntegerResourceVersionMutationCache over an informer's Store. A
// controller records what it just wrote (mutation(obj)); reads then answer with whichever of the written and the
// cached copy has the larger integer resourceVersion, until the informer catches up (the written copy is then
// dropped), the entry's TTL passes, or the LRU (maxSize entries) evicts it. With includeAdds, written objects the
// informer has not seen yet are found too: by key, and by an index when the caller's index function maps them to
// the value asked for. Thread-safe; no lock is held while the Store is read.
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "informers/store.h"

namespace kcm::informers {

template <class T>
class MutationCache {
 public:
  using Ptr = std::shared_ptr<const T>;
  using IndexFunc = std::function<std::vector<std::string>(const T&)>;

  MutationCache(const Store<T>& backing, Clock::Duration ttl, bool includeAdds, size_t maxSize,
                Clock& clock = RealClock::get())
      : backing_(backing), ttl_(ttl), includeAdds_(includeAdds), maxSize_(maxSize), clock_(clock) {}

  // Remembers obj as just written (Mutation).
  void mutation(T obj) {
    auto p = std::make_shared<const T>(std::move(obj));
    const std::string key = keyOf(*p);
    std::lock_guard l(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      lru_.erase(it->second.pos);
      entries_.erase(it);
    }
    lru_.push_front(key);
    entries_[key] = Entry{p, clock_.now() + ttl_, lru_.begin()};
    while (entries_.size() > maxSize_) {
      entries_.erase(lru_.back());
      lru_.pop_back();
    }
  }

  // GetByKey: the newer of the cached and the written copy; a written copy alone only with includeAdds.
  Ptr get(const std::string& key) {
    Ptr cached = backing_.get(key);
    if (!cached) return includeAdds_ ? written(key) : nullptr;
    return newer(key, cached);
  }

  // ByIndex: the Store's objects for (indexName, value), each replaced by a newer written copy; with includeAdds,
  // then the written objects the Store does not hold whose `index` values include `value`.
  std::vector<Ptr> byIndex(const std::string& indexName, const std::string& value, const IndexFunc& index) {
    std::vector<Ptr> out;
    for (const auto& o : backing_.byIndex(indexName, value)) out.push_back(newer(keyOf(*o), o));
    if (!includeAdds_) return out;
    std::vector<std::pair<std::string, Ptr>> adds;
    {
      std::lock_guard l(mu_);
      expireLocked();
      for (const auto& [k, e] : entries_) adds.emplace_back(k, e.obj);
    }
    for (const auto& [k, o] : adds) {
      if (backing_.get(k)) continue;
      for (const auto& v : index(*o))
        if (v == value) {
          out.push_back(o);
          break;
        }
    }
    return out;
  }

 private:
  struct Entry {
    Ptr obj;
    Clock::TimePoint expires;
    std::list<std::string>::iterator pos;
  };
  static std::string keyOf(const T& o) {
    return o.metadata.namespace_.empty() ? o.metadata.name.str() : o.metadata.namespace_ + "/" + o.metadata.name;
  }
  // The resourceVersion as an integer; 0 (never newer) when it is not one.
  static int64_t version(const T& o) {
    try {
      size_t used = 0;
      const int64_t v = std::stoll(o.metadata.resourceVersion, &used);
      return used == o.metadata.resourceVersion.size() ? v : 0;
    } catch (...) {
      return 0;
    }
  }
  Ptr written(const std::string& key) {
    std::lock_guard l(mu_);
    expireLocked();
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : it->second.obj;
  }
  Ptr newer(const std::string& key, const Ptr& cached) {
    std::lock_guard l(mu_);
    expireLocked();
    auto it = entries_.find(key);
    if (it == entries_.end()) return cached;
    if (version(*cached) >= version(*it->second.obj)) {  // the informer caught up: forget the written copy
      lru_.erase(it->second.pos);
      entries_.erase(it);
      return cached;
    }
    return it->second.obj;
  }
  void expireLocked() {
    const auto now = clock_.now();
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.expires <= now) {
        lru_.erase(it->second.pos);
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }

  const Store<T>& backing_;
  const Clock::Duration ttl_;
  const bool includeAdds_;
  const size_t maxSize_;
  Clock& clock_;
  std::mutex mu_;
  std::list<std::string> lru_;  // most recently written first
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace kcm::informers
