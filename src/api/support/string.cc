#include "api/support/string.h"

#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <ostream>
#include <shared_mutex>
#include <stdexcept>
#include <unordered_set>

namespace kcm::api {
namespace {

// Immortal texts in 64 KiB blocks, found through a set of views. Never destroyed: Strings that point here may live
// in other static objects.
class InternPool {
 public:
  const char* find(std::string_view s) {
    std::shared_lock l(mu_);
    auto it = set_.find(s);
    return it == set_.end() ? nullptr : it->data();
  }
  const char* add(std::string_view s) {
    std::unique_lock l(mu_);
    if (auto it = set_.find(s); it != set_.end()) return it->data();
    if (set_.size() >= String::kInternMaxEntries) return nullptr;
    if (blocks_.empty() || used_ + s.size() + 1 > kBlock) {
      blocks_.push_back(std::make_unique<char[]>(kBlock));
      used_ = 0;
    }
    char* d = blocks_.back().get() + used_;
    std::memcpy(d, s.data(), s.size());
    d[s.size()] = '\0';
    used_ += s.size() + 1;
    set_.insert(std::string_view(d, s.size()));
    return d;
  }

 private:
  static constexpr size_t kBlock = 64 << 10;
  std::shared_mutex mu_;
  std::unordered_set<std::string_view> set_;
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t used_ = 0;
};

InternPool& internPool() {
  static auto* pool = new InternPool;
  return *pool;
}

}  // namespace

String String::interned(std::string_view s) {
  if (s.size() <= kInline || s.size() > kInternMaxLen) return String(s);
  const char* p = internPool().find(s);
  if (!p) p = internPool().add(s);
  if (!p) return String(s);
  String out;
  out.setPtr(p, s.size(), kSharedTag);
  return out;
}

void String::setPtr(const char* p, size_t n, unsigned char tag) noexcept {
  const uint32_t len = static_cast<uint32_t>(n);
  std::memcpy(raw_, &p, sizeof p);
  std::memcpy(raw_ + sizeof p, &len, sizeof len);
  raw_[kInline] = static_cast<char>(tag);
}

void String::init(const char* p, size_t n) {
  if (n <= kInline) {
    if (n != 0) std::memcpy(raw_, p, n);
    setSmall(n);
    return;
  }
  if (n > std::numeric_limits<uint32_t>::max()) throw std::length_error("kcm::api::String: longer than 4 GiB");
  char* h = static_cast<char*>(::operator new(n + 1));
  std::memcpy(h, p, n);
  h[n] = '\0';
  setPtr(h, n, kHeapTag);
}

String& String::assign(const char* p, size_t n) {
  // p may point into this string's own text: build the new value first.
  String t;
  t.init(p, n);
  swap(t);
  return *this;
}

String& String::append(std::string_view s) {
  std::string joined;
  joined.reserve(size() + s.size());
  joined.append(view()).append(s);
  return assign(joined.data(), joined.size());
}

std::string operator+(const String& a, const String& b) { return std::string(a.view()).append(b.view()); }
std::string operator+(const String& a, std::string_view b) { return std::string(a.view()).append(b); }
std::string operator+(std::string_view a, const String& b) { return std::string(a).append(b.view()); }
std::string operator+(const String& a, const std::string& b) { return std::string(a.view()).append(b); }
std::string operator+(const std::string& a, const String& b) { return std::string(a).append(b.view()); }
std::string operator+(std::string&& a, const String& b) { return std::move(a.append(b.view())); }
std::string operator+(const String& a, const char* b) { return std::string(a.view()).append(b); }
std::string operator+(const char* a, const String& b) { return std::string(a).append(b.view()); }
std::string operator+(const String& a, char b) { return std::string(a.view()) + b; }
std::string operator+(char a, const String& b) { return std::string(1, a).append(b.view()); }
std::ostream& operator<<(std::ostream& os, const String& s) { return os << s.view(); }

std::vector<std::string> toStdStrings(const std::vector<String>& v) { return {v.begin(), v.end()}; }

}  // namespace kcm::api
