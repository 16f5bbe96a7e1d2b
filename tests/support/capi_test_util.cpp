#include "support/capi_test_util.h"

#include <doctest/doctest.h>

#include <cstring>

namespace longrun::capi_tests {

std::string golden_path(const std::string& name) {
  return std::string(LONGRUN_GOLDEN_DIR) + "/models/" + name;
}

ModelPtr load_model(const std::string& path) {
  lr_model* m = nullptr;
  const lr_status st = lr_model_load(path.c_str(), &m);
  REQUIRE_MESSAGE(st == LR_OK, lr_last_error());
  return ModelPtr(m);
}

OptionsPtr make_options(const char* backend, int threads) {
  lr_session_options* o = nullptr;
  REQUIRE(lr_session_options_create(&o) == LR_OK);
  OptionsPtr p(o);
  REQUIRE(lr_session_options_set_backend(o, backend) == LR_OK);
  REQUIRE(lr_session_options_set_threads(o, threads) == LR_OK);
  return p;
}

SessionPtr make_session(const lr_model* model, const lr_session_options* options) {
  lr_session* s = nullptr;
  const lr_status st = lr_session_create(model, options, &s);
  REQUIRE_MESSAGE(st == LR_OK, lr_last_error());
  return SessionPtr(s);
}

TensorPtr ids_tensor(const std::vector<int64_t>& ids, int64_t batch, int64_t n) {
  const int64_t dims[2] = {batch, n};
  lr_tensor* t = nullptr;
  const lr_status st = lr_tensor_create(LR_I64, dims, 2, ids.data(), LR_COPY, &t);
  REQUIRE_MESSAGE(st == LR_OK, lr_last_error());
  return TensorPtr(t);
}

std::vector<int64_t> make_ids(int64_t count, uint32_t seed, int64_t vocab) {
  std::vector<int64_t> ids(static_cast<size_t>(count));
  uint32_t x = seed * 2654435761u + 12345u;
  for (auto& id : ids) {
    x = x * 1664525u + 1013904223u;
    id = int64_t((x >> 8) % uint32_t(vocab));
  }
  return ids;
}

std::vector<float> run_logits(lr_session* session, const lr_tensor* ids, lr_status* status, void* arena,
                              size_t arena_bytes) {
  const char* in_names[] = {"input_ids"};
  const char* out_names[] = {"logits"};
  lr_tensor* out = nullptr;
  *status =
      arena ? lr_session_run_with_arena(session, in_names, &ids, 1, out_names, &out, 1, arena, arena_bytes)
            : lr_session_run(session, in_names, &ids, 1, out_names, &out, 1);
  if (*status != LR_OK) return {};
  TensorPtr owned(out);
  size_t nbytes = 0;
  const void* data = nullptr;
  CHECK(lr_tensor_nbytes(out, &nbytes) == LR_OK);
  CHECK(lr_tensor_data(out, &data) == LR_OK);
  std::vector<float> v(nbytes / sizeof(float));
  if (nbytes) std::memcpy(v.data(), data, nbytes);
  return v;
}

}  // namespace longrun::capi_tests
