// Internal to the C API (capi/*.cpp): the structs behind the opaque handles and the guard
// that turns every C++ outcome (Status, exception) into an lr_status plus lr_last_error().
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "longrun/longrun.h"
#include "longrun/models/model.h"
#include "longrun/session.h"
#include "longrun/status.h"
#include "longrun/tensor.h"

namespace longrun::capi {

// What identifies the model file's bytes on disk; compared before sessions use the mapping.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  int64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileIdentity&) const = default;
};
Result<FileIdentity> file_identity(const std::string& path);
// format_error when the file at `path` no longer has `loaded` identity (truncated,
// rewritten, replaced, removed): the mapping may no longer hold the validated bytes.
Status check_unchanged(const std::string& path, const FileIdentity& loaded);

}  // namespace longrun::capi

struct lr_model {
  std::shared_ptr<const longrun::Model> model;
  longrun::capi::FileIdentity identity;
  std::vector<std::string> input_names, output_names;
};

struct lr_session_options {
  longrun::SessionOptions session;  // session.log is set from `log` at lr_session_create
  lr_log_fn log = nullptr;
  void* log_user = nullptr;
  lr_progress_fn progress = nullptr;
  void* progress_user = nullptr;
};

struct lr_tensor {
  longrun::Tensor owned;  // empty when borrowed
  longrun::TensorView view;
};

struct lr_session {
  std::shared_ptr<const longrun::Model> model;
  longrun::capi::FileIdentity identity;
  lr_session_options options;
  std::string description;
  // One C++ session per set of input names the caller has run with (a C++ Session fixes its
  // inputs); at most 2^(model inputs) entries. Guarded by `mutex`; each Session serialises
  // its own runs.
  struct Variant {
    std::vector<std::string> names;  // sorted
    std::unique_ptr<longrun::Session> session;
  };
  std::vector<Variant> variants;
  std::mutex mutex;
};

namespace longrun::capi {

// Sets the calling thread's last error and returns its code.
lr_status fail(const Status& status);
lr_status fail(lr_status code, const std::string& message);
// Never throws: the message "<function>: <what><detail>" is built under a catch-all (out of
// memory leaves the last error empty), the code is returned either way.
lr_status fail_noexcept(lr_status code, const char* function, const char* what,
                        const char* detail = "") noexcept;
// Runs `body` (returning lr_status) with a catch-all: std::bad_alloc -> LR_OUT_OF_MEMORY,
// anything else -> LR_INTERNAL, each with a message naming the function.
template <typename Fn>
lr_status guarded(const char* function, Fn&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail_noexcept(LR_OUT_OF_MEMORY, function, "out of memory");
  } catch (const std::exception& e) {
    return fail_noexcept(LR_INTERNAL, function, "unexpected exception: ", e.what());
  } catch (...) {
    return fail_noexcept(LR_INTERNAL, function, "unexpected exception");
  }
}
// invalid_argument "<function>: <what> is NULL" when p is null.
#define LR_CAPI_REQUIRE(p, function)                                                                 \
  do {                                                                                               \
    if ((p) == nullptr)                                                                              \
      return ::longrun::capi::fail(LR_INVALID_ARGUMENT, std::string(function) + ": " #p " is NULL"); \
  } while (0)

}  // namespace longrun::capi
