// Bad input at the C API: each gives a clear lr_status and message, never a crash, and the
// session stays usable afterwards. Also run under ASan+UBSan (tools/dev/test.sh).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "support/capi_test_util.h"

using namespace longrun::capi_tests;

namespace {

bool error_mentions(const std::string& what) {
  const std::string e = lr_last_error();
  if (e.find(what) == std::string::npos) {
    MESSAGE("lr_last_error(): " << e << " (expected to mention '" << what << "')");
    return false;
  }
  return true;
}

// Runs one input tensor as input_ids; returns the status.
lr_status run_ids(lr_session* s, lr_dtype dtype, std::vector<int64_t> dims, const void* data) {
  lr_tensor* t = nullptr;
  lr_status st = lr_tensor_create(dtype, dims.data(), dims.size(), data, LR_BORROW, &t);
  if (st != LR_OK) return st;
  TensorPtr owner(t);
  const char* in[] = {"input_ids"};
  const char* out_names[] = {"logits"};
  lr_tensor* out = nullptr;
  st = lr_session_run(s, in, &t, 1, out_names, &out, 1);
  lr_tensor_free(out);
  return st;
}

}  // namespace

TEST_CASE("C API errors: null pointers everywhere") {
  lr_model* m = nullptr;
  CHECK(lr_model_load(nullptr, &m) == LR_INVALID_ARGUMENT);
  CHECK(error_mentions("lr_model_load: path is NULL"));
  CHECK(lr_model_load(small_model_path().c_str(), nullptr) == LR_INVALID_ARGUMENT);
  CHECK(lr_model_arch(nullptr, nullptr) == LR_INVALID_ARGUMENT);
  size_t n = 0;
  CHECK(lr_model_num_inputs(nullptr, &n) == LR_INVALID_ARGUMENT);
  const char* name = nullptr;
  CHECK(lr_model_output_name(nullptr, 0, &name) == LR_INVALID_ARGUMENT);
  CHECK(lr_session_options_create(nullptr) == LR_INVALID_ARGUMENT);
  CHECK(lr_session_options_set_backend(nullptr, "cpu") == LR_INVALID_ARGUMENT);
  lr_session* s = nullptr;
  CHECK(lr_session_create(nullptr, nullptr, &s) == LR_INVALID_ARGUMENT);
  CHECK(error_mentions("lr_session_create: model is NULL"));
  CHECK(lr_session_run(nullptr, nullptr, nullptr, 0, nullptr, nullptr, 0) == LR_INVALID_ARGUMENT);
  CHECK(lr_session_plan(nullptr, nullptr, nullptr, 0, &n) == LR_INVALID_ARGUMENT);
  CHECK(lr_tensor_create(LR_F32, nullptr, 1, nullptr, LR_COPY, nullptr) == LR_INVALID_ARGUMENT);
  lr_tensor* t = nullptr;
  const int64_t dims[1] = {4};
  CHECK(lr_tensor_create(LR_F32, nullptr, 1, nullptr, LR_COPY, &t) == LR_INVALID_ARGUMENT);
  CHECK(error_mentions("dims is NULL"));
  CHECK(lr_tensor_create(LR_F32, dims, 1, nullptr, LR_COPY, &t) == LR_INVALID_ARGUMENT);
  CHECK(error_mentions("data is NULL for f32[4] (16 bytes)"));
  CHECK(lr_tensor_data(nullptr, nullptr) == LR_INVALID_ARGUMENT);
  lr_model_free(nullptr);
  lr_session_free(nullptr);
  lr_tensor_free(nullptr);
  lr_session_options_free(nullptr);

  ModelPtr model = load_model(small_model_path());
  SessionPtr session = make_session(model.get(), nullptr);
  TensorPtr ids = ids_tensor(make_ids(5, 3), 1, 5);
  const char* in[] = {"input_ids"};
  const lr_tensor* inputs[] = {ids.get()};
  const char* outs[] = {"logits"};
  lr_tensor* out = nullptr;
  CHECK(lr_session_run(session.get(), nullptr, inputs, 1, outs, &out, 1) == LR_INVALID_ARGUMENT);
  CHECK(error_mentions("input_names is NULL"));
  const char* null_name[] = {nullptr};
  CHECK(lr_session_run(session.get(), null_name, inputs, 1, outs, &out, 1) == LR_INVALID_ARGUMENT);
  CHECK(error_mentions("input_names[0] is NULL"));
  const lr_tensor* null_input[] = {nullptr};
  CHECK(lr_session_run(session.get(), in, null_input, 1, outs, &out, 1) == LR_INVALID_ARGUMENT);
  CHECK(error_mentions("inputs[0] ('input_ids') is NULL"));
  CHECK(lr_session_run(session.get(), in, inputs, 1, nullptr, &out, 1) == LR_INVALID_ARGUMENT);
  CHECK(lr_session_run(session.get(), in, inputs, 0, outs, &out, 1) == LR_INVALID_ARGUMENT);
  CHECK(error_mentions("no inputs given"));
  CHECK(out == nullptr);
  lr_status st;
  CHECK(run_logits(session.get(), ids.get(), &st).size() == 10);
  CHECK(st == LR_OK);
}

TEST_CASE("C API errors: wrong dtype, rank, vocabulary, length; unknown names; bad options") {
  ModelPtr model = load_model(small_model_path());
  SessionPtr session = make_session(model.get(), nullptr);
  const std::vector<float> floats(8, 1.0f);
  CHECK(run_ids(session.get(), LR_F32, {1, 8}, floats.data()) == LR_INVALID_ARGUMENT);
  CHECK(error_mentions("input_ids"));
  CHECK(error_mentions("f32"));
  // LR_I8 is a dtype code like the others (its tensor reports LR_I8); no model input is i8.
  const std::vector<int8_t> bytes(8, 1);
  {
    const int64_t dims[2] = {1, 8};
    lr_tensor* t = nullptr;
    REQUIRE(lr_tensor_create(LR_I8, dims, 2, bytes.data(), LR_COPY, &t) == LR_OK);
    TensorPtr owner(t);
    lr_dtype dt = LR_F32;
    size_t nbytes = 0;
    CHECK(lr_tensor_dtype(t, &dt) == LR_OK);
    CHECK(dt == LR_I8);
    CHECK(lr_tensor_nbytes(t, &nbytes) == LR_OK);
    CHECK(nbytes == 8);
    lr_tensor* u = nullptr;
    CHECK(lr_tensor_create(static_cast<lr_dtype>(int(LR_I8) + 1), dims, 2, bytes.data(), LR_COPY, &u) ==
          LR_INVALID_ARGUMENT);
    CHECK(error_mentions("unknown dtype code 7 (LR_F32 .. LR_I8)"));
    CHECK(u == nullptr);
  }
  CHECK(run_ids(session.get(), LR_I8, {1, 8}, bytes.data()) == LR_INVALID_ARGUMENT);
  CHECK(error_mentions("input_ids"));
  CHECK(error_mentions("i8"));

  const std::vector<int64_t> ids = make_ids(8, 5);
  CHECK(run_ids(session.get(), LR_I64, {8}, ids.data()) == LR_INVALID_ARGUMENT);
  CHECK(error_mentions("input_ids"));
  CHECK(run_ids(session.get(), LR_I64, {1, 1, 8}, ids.data()) == LR_INVALID_ARGUMENT);
  CHECK(error_mentions("input_ids"));

  std::vector<int64_t> oov = ids;
  oov[3] = 32;  // vocab_size is 32
  CHECK(run_ids(session.get(), LR_I64, {1, 8}, oov.data()) == LR_OUT_OF_RANGE);
  CHECK(error_mentions("embedding"));
  oov[3] = -1;
  CHECK(run_ids(session.get(), LR_I64, {1, 8}, oov.data()) == LR_OUT_OF_RANGE);

  CHECK(run_ids(session.get(), LR_I64, {1, 0}, nullptr) != LR_OK);  // empty sequence
  CHECK(error_mentions("input_ids"));
  CHECK(run_ids(session.get(), LR_I64, {0, 8}, nullptr) != LR_OK);  // empty batch
  CHECK(error_mentions("input_ids"));
  const std::vector<int64_t> too_long = make_ids(301, 9);  // max_seq_len is 300
  CHECK(run_ids(session.get(), LR_I64, {1, 301}, too_long.data()) == LR_OUT_OF_RANGE);
  CHECK(error_mentions("300"));

  const int64_t d2[2] = {1, 8};
  lr_tensor* t = nullptr;
  CHECK(lr_tensor_create(static_cast<lr_dtype>(17), d2, 2, ids.data(), LR_COPY, &t) == LR_INVALID_ARGUMENT);
  CHECK(error_mentions("unknown dtype code 17"));
  CHECK(lr_tensor_create(LR_I64, d2, 2, ids.data(), static_cast<lr_ownership>(5), &t) == LR_INVALID_ARGUMENT);
  const int64_t neg[2] = {1, -3};
  CHECK(lr_tensor_create(LR_I64, neg, 2, ids.data(), LR_COPY, &t) == LR_INVALID_ARGUMENT);
  const int64_t big[7] = {1, 1, 1, 1, 1, 1, 1};
  CHECK(lr_tensor_create(LR_I64, big, 7, ids.data(), LR_COPY, &t) == LR_INVALID_ARGUMENT);
  CHECK(error_mentions("rank 7 exceeds 6"));
  const int64_t huge[2] = {int64_t(1) << 40, int64_t(1) << 40};
  CHECK(lr_tensor_create(LR_I64, huge, 2, ids.data(), LR_BORROW, &t) != LR_OK);

  TensorPtr good = ids_tensor(ids, 1, 8);
  const lr_tensor* inputs[] = {good.get(), good.get()};
  const char* unknown[] = {"input_idz"};
  const char* outs[] = {"logits"};
  lr_tensor* out = nullptr;
  CHECK(lr_session_run(session.get(), unknown, inputs, 1, outs, &out, 1) == LR_NOT_FOUND);
  CHECK(
      error_mentions("unknown input 'input_idz' (this fourier-lra model takes: input_ids, attention_mask)"));
  const char* twice[] = {"input_ids", "input_ids"};
  CHECK(lr_session_run(session.get(), twice, inputs, 2, outs, &out, 1) == LR_INVALID_ARGUMENT);
  CHECK(error_mentions("given twice"));
  const char* in[] = {"input_ids"};
  const char* bad_out[] = {"logitz"};
  CHECK(lr_session_run(session.get(), in, inputs, 1, bad_out, &out, 1) == LR_NOT_FOUND);
  CHECK(error_mentions("unknown output 'logitz'"));
  const char* only_mask[] = {"attention_mask"};
  CHECK(lr_session_run(session.get(), only_mask, inputs, 1, outs, &out, 1) != LR_OK);
  CHECK(error_mentions("input_ids"));
  CHECK(out == nullptr);

  OptionsPtr opts = make_options("cpu", 1);
  CHECK(lr_session_options_set_threads(opts.get(), -1) == LR_INVALID_ARGUMENT);
  CHECK(error_mentions("expected 0..1024, found -1"));
  CHECK(lr_session_options_set_threads(opts.get(), 1025) == LR_INVALID_ARGUMENT);
  CHECK(lr_session_options_set_memory_limit(opts.get(), ~uint64_t(0)) == LR_OUT_OF_RANGE);
  REQUIRE(lr_session_options_set_backend(opts.get(), "gpu9000") == LR_OK);
  lr_session* s = nullptr;
  CHECK(lr_session_create(model.get(), opts.get(), &s) == LR_NOT_FOUND);
  CHECK(error_mentions("unknown backend 'gpu9000'"));
  REQUIRE(lr_session_options_set_backend(opts.get(), "cpu") == LR_OK);
  REQUIRE(lr_session_options_set_isa(opts.get(), "sse9") == LR_OK);
  CHECK(lr_session_create(model.get(), opts.get(), &s) == LR_INVALID_ARGUMENT);
  CHECK(error_mentions("unknown ISA 'sse9'"));
  CHECK(s == nullptr);

  // After all of that the session still gives the right answer.
  lr_status st;
  CHECK(run_logits(session.get(), good.get(), &st).size() == 10);
  CHECK(st == LR_OK);
}

TEST_CASE("C API errors: files") {
  lr_model* m = nullptr;
  CHECK(lr_model_load("/nonexistent/model.safetensors", &m) == LR_IO_ERROR);
  CHECK(error_mentions("/nonexistent/model.safetensors"));
  CHECK(lr_model_load(golden_path("fourier_lra_l0_r02.n7_pad.io.safetensors").c_str(), &m) ==
        LR_FORMAT_ERROR);
  CHECK(m == nullptr);
}
