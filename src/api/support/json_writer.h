#pragma once
// Compact JSON text writer into a std::string. Commas and colons are placed automatically.
// Not thread-safe; one writer per encoding.
#include <cstdint>
#include <string>
#include <string_view>

namespace kcm::api {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}
  void beginObject() { sep(); out_ += '{'; comma_ = false; }
  void endObject() { out_ += '}'; comma_ = true; }
  void beginArray() { sep(); out_ += '['; comma_ = false; }
  void endArray() { out_ += ']'; comma_ = true; }
  void key(std::string_view k) { sep(); string(k); out_ += ':'; comma_ = false; }
  void value(std::string_view s) { sep(); string(s); comma_ = true; }
  void value(const char* s) { value(std::string_view(s)); }
  void value(bool b) { sep(); out_ += b ? "true" : "false"; comma_ = true; }
  void value(int32_t v) { value(static_cast<int64_t>(v)); }
  void value(int64_t v);
  void value(double v);
  void null() { sep(); out_ += "null"; comma_ = true; }
  // Appends already-encoded JSON as one value.
  void raw(std::string_view json) { sep(); out_ += json; comma_ = true; }

 private:
  void sep() {
    if (comma_) out_ += ',';
  }
  void string(std::string_view s);
  std::string& out_;
  bool comma_ = false;
};

}  // namespace kcm::api
