#pragma once
// The string type of the generated API structs: 16 bytes where std::string takes 32. Text of up to 15 bytes lives
// inside the object; longer text in one heap block of exactly its size (no spare capacity: API strings are
// written once by the decoder and read many times). Always NUL-terminated.
// Values that repeat across objects (label keys, images, condition types, ...) can be interned: String::interned
// points into a process-wide pool of immortal text instead of allocating, and copies share it. The pool is
// bounded (kInternMaxEntries texts of at most kInternMaxLen bytes); once full, values are allocated as usual.
// Reads like a const std::string and converts implicitly to std::string_view and std::string; any write replaces
// the whole value. Not thread-safe for writes, like std::string.
#include <compare>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace kcm::api {

class String {
 public:
  using value_type = char;
  using size_type = size_t;
  using traits_type = std::char_traits<char>;
  using iterator = const char*;
  using const_iterator = const char*;
  static constexpr size_t npos = std::string_view::npos;
  static constexpr size_t kInline = 15;

  String() noexcept { setSmall(0); }
  String(std::string_view s) { init(s.data(), s.size()); }  // NOLINT: implicit, as std::string from literals
  String(const char* s) { init(s, s ? std::strlen(s) : 0); }  // NOLINT
  String(const std::string& s) { init(s.data(), s.size()); }  // NOLINT
  String(const char* p, size_t n) { init(p, n); }
  String(const String& o) {
    if (o.isShared()) std::memcpy(raw_, o.raw_, sizeof raw_);
    else init(o.data(), o.size());
  }
  String(String&& o) noexcept {
    std::memcpy(raw_, o.raw_, sizeof raw_);
    o.setSmall(0);
  }
  ~String() { release(); }

  String& operator=(const String& o) {
    if (this == &o) return *this;
    if (!o.isShared()) return assign(o.data(), o.size());
    release();
    std::memcpy(raw_, o.raw_, sizeof raw_);
    return *this;
  }
  String& operator=(String&& o) noexcept {
    if (this != &o) {
      release();
      std::memcpy(raw_, o.raw_, sizeof raw_);
      o.setSmall(0);
    }
    return *this;
  }
  String& operator=(std::string_view s) { return assign(s.data(), s.size()); }
  String& operator=(const std::string& s) { return assign(s.data(), s.size()); }
  String& operator=(const char* s) { return assign(s, s ? std::strlen(s) : 0); }
  String& assign(const char* p, size_t n);

  // The text, from the intern pool when it is longer than kInline and not longer than kInternMaxLen (added to the
  // pool if there is room). Thread-safe.
  static String interned(std::string_view s);
  static constexpr size_t kInternMaxLen = 128;
  static constexpr size_t kInternMaxEntries = 65536;
  bool isInterned() const noexcept { return isShared(); }

  const char* data() const noexcept { return isPtr() ? heapPtr() : raw_; }
  const char* c_str() const noexcept { return data(); }
  size_t size() const noexcept { return isPtr() ? heapLen() : kInline - static_cast<unsigned char>(raw_[kInline]); }
  size_t length() const noexcept { return size(); }
  bool empty() const noexcept { return size() == 0; }
  std::string_view view() const noexcept { return {data(), size()}; }
  std::string str() const { return std::string(data(), size()); }
  operator std::string_view() const noexcept { return view(); }  // NOLINT: implicit on purpose
  operator std::string() const { return str(); }                // NOLINT

  const char* begin() const noexcept { return data(); }
  const char* end() const noexcept { return data() + size(); }
  const char* cbegin() const noexcept { return begin(); }
  const char* cend() const noexcept { return end(); }
  char operator[](size_t i) const noexcept { return data()[i]; }
  char front() const noexcept { return data()[0]; }
  char back() const noexcept { return data()[size() - 1]; }

  size_t find(std::string_view s, size_t pos = 0) const noexcept { return view().find(s, pos); }
  size_t find(char c, size_t pos = 0) const noexcept { return view().find(c, pos); }
  size_t rfind(std::string_view s, size_t pos = npos) const noexcept { return view().rfind(s, pos); }
  size_t rfind(char c, size_t pos = npos) const noexcept { return view().rfind(c, pos); }
  size_t find_first_of(std::string_view s, size_t pos = 0) const noexcept { return view().find_first_of(s, pos); }
  size_t find_last_of(std::string_view s, size_t pos = npos) const noexcept { return view().find_last_of(s, pos); }
  size_t find_first_not_of(std::string_view s, size_t pos = 0) const noexcept {
    return view().find_first_not_of(s, pos);
  }
  bool starts_with(std::string_view s) const noexcept { return view().starts_with(s); }
  bool starts_with(char c) const noexcept { return view().starts_with(c); }
  bool ends_with(std::string_view s) const noexcept { return view().ends_with(s); }
  bool ends_with(char c) const noexcept { return view().ends_with(c); }
  int compare(std::string_view s) const noexcept { return view().compare(s); }
  std::string substr(size_t pos = 0, size_t n = npos) const { return std::string(view().substr(pos, n)); }

  void clear() noexcept {
    release();
    setSmall(0);
  }
  String& append(std::string_view s);
  String& operator+=(std::string_view s) { return append(s); }
  String& operator+=(char c) { return append(std::string_view(&c, 1)); }
  void push_back(char c) { append(std::string_view(&c, 1)); }
  void swap(String& o) noexcept {
    char t[sizeof raw_];
    std::memcpy(t, raw_, sizeof raw_);
    std::memcpy(raw_, o.raw_, sizeof raw_);
    std::memcpy(o.raw_, t, sizeof raw_);
  }

  friend bool operator==(const String& a, const String& b) noexcept { return a.view() == b.view(); }
  friend bool operator==(const String& a, std::string_view b) noexcept { return a.view() == b; }
  friend bool operator==(const String& a, const std::string& b) noexcept { return a.view() == std::string_view(b); }
  friend bool operator==(const String& a, const char* b) noexcept { return a.view() == std::string_view(b); }
  friend std::strong_ordering operator<=>(const String& a, const String& b) noexcept { return a.view() <=> b.view(); }
  friend std::strong_ordering operator<=>(const String& a, std::string_view b) noexcept { return a.view() <=> b; }
  friend std::strong_ordering operator<=>(const String& a, const std::string& b) noexcept {
    return a.view() <=> std::string_view(b);
  }
  friend std::strong_ordering operator<=>(const String& a, const char* b) noexcept {
    return a.view() <=> std::string_view(b);
  }

 private:
  // raw_[kInline]: 0..15 = kInline - inline length; kHeapTag: owned heap text; kSharedTag: pool text (not freed).
  static constexpr unsigned char kHeapTag = 0x80;
  static constexpr unsigned char kSharedTag = 0x81;
  unsigned char tag() const noexcept { return static_cast<unsigned char>(raw_[kInline]); }
  bool isHeap() const noexcept { return tag() == kHeapTag; }
  bool isShared() const noexcept { return tag() == kSharedTag; }
  bool isPtr() const noexcept { return tag() >= kHeapTag; }
  const char* heapPtr() const noexcept {
    const char* p;
    std::memcpy(&p, raw_, sizeof p);
    return p;
  }
  size_t heapLen() const noexcept {
    uint32_t n;
    std::memcpy(&n, raw_ + sizeof(char*), sizeof n);
    return n;
  }
  void setSmall(size_t n) noexcept {
    raw_[n] = '\0';
    raw_[kInline] = static_cast<char>(kInline - n);  // 0 when full: then it is also the terminator
  }
  void init(const char* p, size_t n);
  void setPtr(const char* p, size_t n, unsigned char tag) noexcept;
  void release() noexcept {
    if (isHeap()) ::operator delete(const_cast<char*>(heapPtr()));
  }

  char raw_[16];
};

// Concatenation yields a std::string, as the code that builds keys and messages expects.
std::string operator+(const String& a, const String& b);
std::string operator+(const String& a, std::string_view b);
std::string operator+(std::string_view a, const String& b);
std::string operator+(const String& a, const std::string& b);
std::string operator+(const std::string& a, const String& b);
std::string operator+(std::string&& a, const String& b);
std::string operator+(const String& a, const char* b);
std::string operator+(const char* a, const String& b);
std::string operator+(const String& a, char b);
std::string operator+(char a, const String& b);
std::ostream& operator<<(std::ostream& os, const String& s);

// For the code paths that keep std::string lists (sets of usages, sorted keys).
std::vector<std::string> toStdStrings(const std::vector<String>& v);
inline bool operator==(const std::vector<String>& a, const std::vector<std::string>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

}  // namespace kcm::api

template <>
struct std::hash<kcm::api::String> {
  size_t operator()(const kcm::api::String& s) const noexcept { return std::hash<std::string_view>()(s.view()); }
};
