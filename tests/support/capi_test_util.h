// Helpers of the C API tests: RAII owners for the C handles, golden paths, and running the
// fourier-lra golden model on token ids through the C API.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "longrun/longrun.h"

namespace longrun::capi_tests {

struct ModelDeleter {
  void operator()(lr_model* m) const { lr_model_free(m); }
};
struct SessionDeleter {
  void operator()(lr_session* s) const { lr_session_free(s); }
};
struct OptionsDeleter {
  void operator()(lr_session_options* o) const { lr_session_options_free(o); }
};
struct TensorDeleter {
  void operator()(lr_tensor* t) const { lr_tensor_free(t); }
};
using ModelPtr = std::unique_ptr<lr_model, ModelDeleter>;
using SessionPtr = std::unique_ptr<lr_session, SessionDeleter>;
using OptionsPtr = std::unique_ptr<lr_session_options, OptionsDeleter>;
using TensorPtr = std::unique_ptr<lr_tensor, TensorDeleter>;

// tests/golden/models/<name>
std::string golden_path(const std::string& name);
// The small fourier-lra golden (2 layers, d = 64, vocab 32, max_seq_len 300).
inline std::string small_model_path() { return golden_path("fourier_lra_l0_r02.safetensors"); }

ModelPtr load_model(const std::string& path);  // CHECKs success
OptionsPtr make_options(const char* backend = "cpu", int threads = 1);
SessionPtr make_session(const lr_model* model, const lr_session_options* options);  // CHECKs success

// A [batch, n] i64 tensor (copied).
TensorPtr ids_tensor(const std::vector<int64_t>& ids, int64_t batch, int64_t n);
// Deterministic pseudo-random ids in [0, vocab) for run `seed`.
std::vector<int64_t> make_ids(int64_t count, uint32_t seed, int64_t vocab = 32);

// Runs input_ids only and returns the "logits" floats; status in *status (LR_OK on success).
std::vector<float> run_logits(lr_session* session, const lr_tensor* ids, lr_status* status,
                              void* arena = nullptr, size_t arena_bytes = 0);

}  // namespace longrun::capi_tests
