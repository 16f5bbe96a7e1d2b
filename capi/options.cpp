// lr_session_options_*: a SessionOptions plus the C callbacks and the determinism switch.
#include <optional>
#include <string>

#include "c_api_internal.h"
#include "longrun/thread_pool.h"

using longrun::capi::fail;
using longrun::capi::guarded;

namespace {

// Runs `set` on a non-null options object inside the catch-all.
template <typename Fn>
lr_status with_options(const char* function, lr_session_options* options, Fn&& set) {
  return guarded(function, [&] {
    LR_CAPI_REQUIRE(options, function);
    return set(*options);
  });
}

}  // namespace

extern "C" {

lr_status lr_session_options_create(lr_session_options** out_options) {
  return guarded("lr_session_options_create", [&] {
    LR_CAPI_REQUIRE(out_options, "lr_session_options_create");
    *out_options = new lr_session_options();
    return LR_OK;
  });
}

void lr_session_options_free(lr_session_options* options) { delete options; }

lr_status lr_session_options_set_backend(lr_session_options* options, const char* backend) {
  return with_options("lr_session_options_set_backend", options, [&](lr_session_options& o) {
    LR_CAPI_REQUIRE(backend, "lr_session_options_set_backend");
    o.session.backend = backend;  // checked (with the list of backends) at lr_session_create
    return LR_OK;
  });
}

lr_status lr_session_options_set_threads(lr_session_options* options, int threads) {
  return with_options("lr_session_options_set_threads", options, [&](lr_session_options& o) {
    if (threads < 0 || threads > 1024)  // the thread pool's limit
      return fail(LR_INVALID_ARGUMENT,
                  "lr_session_options_set_threads: expected 0..1024, found " + std::to_string(threads));
    o.session.threads = threads;
    return LR_OK;
  });
}

lr_status lr_session_options_set_isa(lr_session_options* options, const char* isa) {
  return with_options("lr_session_options_set_isa", options, [&](lr_session_options& o) {
    LR_CAPI_REQUIRE(isa, "lr_session_options_set_isa");
    o.session.isa = isa;  // checked against this CPU at lr_session_create
    return LR_OK;
  });
}

lr_status lr_session_options_set_precision(lr_session_options* options, const char* precision) {
  return with_options("lr_session_options_set_precision", options, [&](lr_session_options& o) {
    LR_CAPI_REQUIRE(precision, "lr_session_options_set_precision");
    const std::optional<longrun::Precision> p = longrun::parse_precision(precision);
    if (!p)
      return fail(LR_INVALID_ARGUMENT, std::string("lr_session_options_set_precision: unknown precision '") +
                                           precision + "' (f32, bf16, int8)");
    o.session.precision = *p;  // checked against the backend and this CPU at lr_session_create
    return LR_OK;
  });
}

lr_status lr_session_options_set_deterministic(lr_session_options* options, int deterministic) {
  return with_options("lr_session_options_set_deterministic", options, [&](lr_session_options& o) {
    o.session.deterministic = deterministic != 0;
    return LR_OK;
  });
}

lr_status lr_session_options_set_affinity(lr_session_options* options, const int* cpus, size_t count) {
  return with_options("lr_session_options_set_affinity", options, [&](lr_session_options& o) {
    if (count > 0 && cpus == nullptr)
      return fail(LR_INVALID_ARGUMENT,
                  "lr_session_options_set_affinity: cpus is NULL with count " + std::to_string(count));
    if (count > 4096)
      return fail(LR_OUT_OF_RANGE, "lr_session_options_set_affinity: expected at most 4096 CPUs, found " +
                                       std::to_string(count));
    // Checked against the CPUs this process may use at lr_session_create (the mask may change
    // between the two calls).
    o.session.affinity.assign(cpus, cpus + count);
    return LR_OK;
  });
}

lr_status lr_session_options_set_spin_us(lr_session_options* options, uint32_t us) {
  return with_options("lr_session_options_set_spin_us", options, [&](lr_session_options& o) {
    if (us > uint32_t(longrun::kMaxSpinUs))
      return fail(LR_OUT_OF_RANGE, "lr_session_options_set_spin_us: expected 0.." +
                                       std::to_string(longrun::kMaxSpinUs) + " microseconds, found " +
                                       std::to_string(us));
    o.session.spin_us = int(us);
    return LR_OK;
  });
}

lr_status lr_session_options_set_auto_affinity(lr_session_options* options, int enabled) {
  return with_options("lr_session_options_set_auto_affinity", options, [&](lr_session_options& o) {
    o.session.auto_affinity = enabled != 0;
    return LR_OK;
  });
}

lr_status lr_session_options_set_memory_limit(lr_session_options* options, uint64_t bytes) {
  return with_options("lr_session_options_set_memory_limit", options, [&](lr_session_options& o) {
    if (bytes > uint64_t(INT64_MAX))
      return fail(LR_OUT_OF_RANGE, "lr_session_options_set_memory_limit: " + std::to_string(bytes) +
                                       " bytes exceeds INT64_MAX");
    o.session.memory_limit_bytes = int64_t(bytes);
    return LR_OK;
  });
}

lr_status lr_session_options_set_external_arena(lr_session_options* options, int external) {
  return with_options("lr_session_options_set_external_arena", options, [&](lr_session_options& o) {
    o.session.external_arena = external != 0;
    return LR_OK;
  });
}

lr_status lr_session_options_set_log_callback(lr_session_options* options, lr_log_fn fn, void* user) {
  return with_options("lr_session_options_set_log_callback", options, [&](lr_session_options& o) {
    o.log = fn;
    o.log_user = user;
    return LR_OK;
  });
}

lr_status lr_session_options_set_progress_callback(lr_session_options* options, lr_progress_fn fn,
                                                   void* user) {
  return with_options("lr_session_options_set_progress_callback", options, [&](lr_session_options& o) {
    o.progress = fn;
    o.progress_user = user;
    return LR_OK;
  });
}

}  // extern "C"
