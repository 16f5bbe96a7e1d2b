#include "longrun/status.h"

namespace longrun {

std::string_view status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::ok: return "ok";
    case StatusCode::invalid_argument: return "invalid_argument";
    case StatusCode::out_of_range: return "out_of_range";
    case StatusCode::not_found: return "not_found";
    case StatusCode::unsupported: return "unsupported";
    case StatusCode::format_error: return "format_error";
    case StatusCode::io_error: return "io_error";
    case StatusCode::overflow: return "overflow";
    case StatusCode::out_of_memory: return "out_of_memory";
    case StatusCode::cancelled: return "cancelled";
    case StatusCode::internal: return "internal";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return std::string(status_code_name(code_)) + ": " + message_;
}

Status Status::with_context(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_);
}

}  // namespace longrun
