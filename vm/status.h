// What the VM's checks return, and the string helpers its messages use.
//
// The VM avoids Abseil on purpose: it is loaded by every process that imports a
// .ppy module, and Abseil's shared libraries cost milliseconds to map and
// relocate. The compiler, loaded only to build, uses Abseil freely.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace ppy {

class Status {
 public:
  Status() = default;
  static Status Error(std::string message) {
    Status status;
    status.ok_ = false;
    status.message_ = std::move(message);
    return status;
  }
  bool ok() const { return ok_; }
  const std::string& message() const { return message_; }

 private:
  bool ok_ = true;
  std::string message_;
};

inline std::ostream& operator<<(std::ostream& out, const Status& status) {
  return out << (status.ok() ? std::string("OK") : status.message());
}

// A value, or the Status that says why there is none.
template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit, like absl::StatusOr
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT
  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

namespace cat_detail {
inline void Append(std::string& out, std::string_view piece) { out.append(piece); }
inline void Append(std::string& out, const char* piece) { out.append(piece); }
inline void Append(std::string& out, const std::string& piece) { out.append(piece); }
inline void Append(std::string& out, char piece) { out.push_back(piece); }
template <typename Number, typename = std::enable_if_t<std::is_arithmetic_v<Number>>>
void Append(std::string& out, Number number) {
  out.append(std::to_string(number));
}
}  // namespace cat_detail

// Concatenates strings and integers: Cat("register ", 3, " is out of range").
template <typename... Pieces>
std::string Cat(const Pieces&... pieces) {
  std::string out;
  (cat_detail::Append(out, pieces), ...);
  return out;
}

// The pieces joined with `separator`.
template <typename Container>
std::string Join(const Container& pieces, std::string_view separator) {
  std::string out;
  bool first = true;
  for (const auto& piece : pieces) {
    if (!first) out.append(separator);
    out.append(piece);
    first = false;
  }
  return out;
}

// printf-style formatting into a std::string.
[[gnu::format(printf, 1, 2)]] inline std::string Format(const char* format, ...) {
  va_list args;
  va_start(args, format);
  char buffer[512];
  int size = std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  if (size < static_cast<int>(sizeof buffer)) return std::string(buffer, size < 0 ? 0 : size);
  std::string out(size, '\0');
  va_start(args, format);
  std::vsnprintf(out.data(), size + 1, format, args);
  va_end(args);
  return out;
}

}  // namespace ppy
