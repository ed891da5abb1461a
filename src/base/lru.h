#pragma once
// LruMap<V>: a string-keyed map holding at most `capacity` entries; a lookup or insert makes the entry the most
// recent, and inserting past the capacity drops the least recent (what client-go's golang-lru caches do for the
// event correlator). A key is stored once, in its list node; the index refers to it. Not thread-safe: the owner
// locks.
#include <cstddef>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace kcm {

template <class V>
class LruMap {
 public:
  explicit LruMap(size_t capacity) : capacity_(capacity) {}

  // The entry for key, made the most recent; nullptr when absent.
  V* find(std::string_view key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }

  // The entry for key, made the most recent; a value-initialised one is added when absent.
  V& operator[](const std::string& key) {
    if (V* v = find(key)) return *v;
    order_.emplace_front(key, V{});
    index_.emplace(std::string_view(order_.front().first), order_.begin());
    if (order_.size() > capacity_) {
      index_.erase(std::string_view(order_.back().first));
      order_.pop_back();
    }
    return order_.front().second;
  }

  void erase(std::string_view key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    auto pos = it->second;
    index_.erase(it);
    order_.erase(pos);
  }

  size_t size() const { return index_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  std::list<std::pair<std::string, V>> order_;  // most recent first
  std::unordered_map<std::string_view, typename std::list<std::pair<std::string, V>>::iterator> index_;
};

}  // namespace kcm
