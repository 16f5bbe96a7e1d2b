// lr_last_error / lr_status_name and the thread-local error text behind them.
#include <string>

#include "c_api_internal.h"

namespace longrun::capi {
namespace {

thread_local std::string t_last_error;

static_assert(int(LR_INTERNAL) == int(StatusCode::internal), "lr_status must mirror StatusCode");
static_assert(int(LR_CANCELLED) == int(StatusCode::cancelled), "lr_status must mirror StatusCode");

}  // namespace

lr_status fail(const Status& status) {
  // Assigning may itself throw bad_alloc; the code still goes back to the caller.
  try {
    t_last_error = status.to_string();
  } catch (...) {
    t_last_error.clear();
  }
  return status.ok() ? LR_INTERNAL : static_cast<lr_status>(int(status.code()));
}

lr_status fail(lr_status code, const std::string& message) {
  return fail(Status(static_cast<StatusCode>(int(code)), message));
}

lr_status fail_noexcept(lr_status code, const char* function, const char* what, const char* detail) noexcept {
  try {
    return fail(code, std::string(function) + ": " + what + detail);
  } catch (...) {
    t_last_error.clear();  // clearing frees nothing and cannot throw
    return code;
  }
}

}  // namespace longrun::capi

extern "C" {

const char* lr_last_error(void) { return longrun::capi::t_last_error.c_str(); }

const char* lr_status_name(lr_status status) {
  if (int(status) < 0 || int(status) > int(LR_INTERNAL)) return "unknown_status";
  // status_code_name returns views of string literals: NUL-terminated.
  return longrun::status_code_name(static_cast<longrun::StatusCode>(int(status))).data();
}

}  // extern "C"
