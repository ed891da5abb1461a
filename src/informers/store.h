#pragma once
// Thread-safe cache of immutable objects keyed "namespace/name" (or "name"), with a namespace index and custom
// indexers (e.g. pods by node, objects by owner UID). Readers share; the reflector is the only writer.
// Values are std::shared_ptr<const T>: copy before you change.
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kcm::informers {

// cache.MetaNamespaceKeyFunc.
template <class T>
std::string metaNamespaceKey(const T& obj) {
  const auto& m = obj.metadata;
  return m.namespace_.empty() ? m.name.str() : m.namespace_ + "/" + m.name;
}

// cache.SplitMetaNamespaceKey: ("ns", "name") or ("", "name").
std::pair<std::string, std::string> splitMetaNamespaceKey(const std::string& key);

inline constexpr const char* kNamespaceIndex = "namespace";

template <class T>
class Store {
 public:
  using Ptr = std::shared_ptr<const T>;
  using IndexFunc = std::function<std::vector<std::string>(const T&)>;

  Store() {
    indexers_[kNamespaceIndex] = [](const T& o) { return std::vector<std::string>{o.metadata.namespace_}; };
  }
  // Indexers are added before the informer starts.
  void addIndexer(const std::string& name, IndexFunc f) {
    std::unique_lock l(mu_);
    indexers_[name] = std::move(f);
    for (const auto& [k, v] : items_) index(k, *v, true);
  }

  Ptr get(const std::string& key) const {
    std::shared_lock l(mu_);
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second;
  }
  Ptr get(const std::string& ns, const std::string& name) const { return get(ns.empty() ? name : ns + "/" + name); }
  std::vector<Ptr> list() const {
    std::shared_lock l(mu_);
    std::vector<Ptr> out;
    out.reserve(items_.size());
    for (const auto& [k, v] : items_) out.push_back(v);
    return out;
  }
  std::vector<std::string> keys() const {
    std::shared_lock l(mu_);
    std::vector<std::string> out;
    for (const auto& [k, v] : items_) out.push_back(k);
    return out;
  }
  std::vector<Ptr> byIndex(const std::string& indexName, const std::string& value) const {
    std::shared_lock l(mu_);
    std::vector<Ptr> out;
    auto idx = indices_.find(indexName);
    if (idx == indices_.end()) return out;
    auto it = idx->second.find(value);
    if (it == idx->second.end()) return out;
    for (const auto& k : it->second)
      if (auto o = items_.find(k); o != items_.end()) out.push_back(o->second);
    return out;
  }
  size_t size() const {
    std::shared_lock l(mu_);
    return items_.size();
  }

  // Writer side (the informer). Returns the previous value, if any.
  Ptr upsert(const std::string& key, Ptr obj) {
    std::unique_lock l(mu_);
    Ptr old;
    if (auto it = items_.find(key); it != items_.end()) {
      old = it->second;
      index(key, *old, false);
      it->second = obj;
    } else {
      items_.emplace(key, obj);
    }
    index(key, *obj, true);
    return old;
  }
  Ptr erase(const std::string& key) {
    std::unique_lock l(mu_);
    auto it = items_.find(key);
    if (it == items_.end()) return nullptr;
    Ptr old = it->second;
    index(key, *old, false);
    items_.erase(it);
    return old;
  }

 private:
  void index(const std::string& key, const T& obj, bool add) {
    for (const auto& [name, f] : indexers_) {
      auto& idx = indices_[name];
      for (const auto& v : f(obj)) {
        if (add) {
          idx[v].insert(key);
        } else if (auto it = idx.find(v); it != idx.end()) {
          it->second.erase(key);
          if (it->second.empty()) idx.erase(it);
        }
      }
    }
  }

  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, Ptr> items_;
  std::unordered_map<std::string, IndexFunc> indexers_;
  std::unordered_map<std::string, std::unordered_map<std::string, std::unordered_set<std::string>>> indices_;
};

}  // namespace kcm::informers
