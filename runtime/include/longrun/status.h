// Status and Result<T>: how every fallible call in longrun reports failure.
//
// A Status carries a code and a message that names what was wrong and where (file, tensor,
// field, expected vs found). Nothing in longrun aborts on user data; assertions guard only
// internal invariants.
#pragma once

#include <cassert>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace longrun {

enum class StatusCode : int {
  ok = 0,
  invalid_argument,  // the caller passed something malformed (shape, dtype, name, option)
  out_of_range,      // an index or size outside what is allowed
  not_found,         // a named thing (file, tensor, backend) does not exist
  unsupported,       // valid request that this build/backend/device cannot do
  format_error,      // a file's bytes are not what its format promises
  io_error,          // the operating system refused (open, read, mmap, rename)
  overflow,          // size arithmetic would overflow
  out_of_memory,     // an allocation failed or a memory limit was hit
  cancelled,         // a run was cancelled through its hooks
  internal,          // a bug in longrun: please report
};

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }

  bool ok() const { return code_ == StatusCode::ok; }
  explicit operator bool() const { return ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "invalid_argument: tensor 'x': expected rank 2, found 3"
  std::string to_string() const;

  // Prefixes the message with context ("while loading 'model.safetensors': ...").
  Status with_context(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {StatusCode::invalid_argument, std::move(m)}; }
inline Status out_of_range(std::string m) { return {StatusCode::out_of_range, std::move(m)}; }
inline Status not_found(std::string m) { return {StatusCode::not_found, std::move(m)}; }
inline Status unsupported(std::string m) { return {StatusCode::unsupported, std::move(m)}; }
inline Status format_error(std::string m) { return {StatusCode::format_error, std::move(m)}; }
inline Status io_error(std::string m) { return {StatusCode::io_error, std::move(m)}; }
inline Status overflow_error(std::string m) { return {StatusCode::overflow, std::move(m)}; }
inline Status out_of_memory(std::string m) { return {StatusCode::out_of_memory, std::move(m)}; }
inline Status cancelled(std::string m) { return {StatusCode::cancelled, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::internal, std::move(m)}; }

// Result<T>: a T or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "Result constructed from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & {
    assert(ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace longrun

#define LR_CONCAT_INNER_(a, b) a##b
#define LR_CONCAT_(a, b) LR_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function if it is not ok.
#define LR_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::longrun::Status lr_status_ = (expr);   \
    if (!lr_status_.ok()) return lr_status_; \
  } while (0)

// `LR_ASSIGN_OR_RETURN(auto x, f());` declares x from a Result or returns its Status.
#define LR_ASSIGN_OR_RETURN(lhs, expr) LR_ASSIGN_OR_RETURN_IMPL_(LR_CONCAT_(lr_result_, __LINE__), lhs, expr)
#define LR_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
