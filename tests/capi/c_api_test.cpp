// The C API end to end on the fourier-lra golden: results match the PyTorch golden, named
// outputs and tensor queries, the caller-provided arena, the log callback, determinism.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "longrun/safetensors.h"
#include "support/capi_test_util.h"

using namespace longrun::capi_tests;

namespace {

// Tolerance: as the whole-model goldens (tests/models): max |a - b| <= 1e-4 on O(1..5) logits.
constexpr double kMaxAbsErr = 1e-4;

std::vector<float> golden_floats(const longrun::SafetensorsFile& f, const char* name) {
  const auto* e = f.find(name);
  REQUIRE(e != nullptr);
  std::vector<float> v(e->bytes.size() / 4);
  std::memcpy(v.data(), e->bytes.data(), e->bytes.size());
  return v;
}

}  // namespace

TEST_CASE("C API: version and system info") {
  CHECK(std::string(lr_version()) == "0.1.0");
  const std::string info = lr_system_info();
  CHECK(info.find("longrun   0.1.0") != std::string::npos);
  CHECK(info.find("cpu isa") != std::string::npos);
  CHECK(info.find("backend   cuda:") != std::string::npos);  // a device or the reason there is none
  CHECK(std::string(lr_status_name(LR_OUT_OF_MEMORY)) == "out_of_memory");
  CHECK(std::string(lr_status_name(static_cast<lr_status>(99))) == "unknown_status");
}

TEST_CASE("C API: model metadata") {
  ModelPtr model = load_model(small_model_path());
  const char* arch = nullptr;
  REQUIRE(lr_model_arch(model.get(), &arch) == LR_OK);
  CHECK(std::string(arch) == "fourier-lra");
  size_t n_in = 0, n_out = 0;
  REQUIRE(lr_model_num_inputs(model.get(), &n_in) == LR_OK);
  REQUIRE(lr_model_num_outputs(model.get(), &n_out) == LR_OK);
  CHECK(n_in == 2);
  CHECK(n_out >= 1);
  const char* name = nullptr;
  REQUIRE(lr_model_input_name(model.get(), 0, &name) == LR_OK);
  CHECK(std::string(name) == "input_ids");
  CHECK(lr_model_input_name(model.get(), n_in, &name) == LR_OUT_OF_RANGE);
  CHECK(std::string(lr_last_error()).find("index 2 >= count 2") != std::string::npos);
}

TEST_CASE("C API: golden n7_pad through named inputs and outputs, with and without a caller arena") {
  auto io = longrun::SafetensorsFile::open(golden_path("fourier_lra_l0_r02.n7_pad.io.safetensors"));
  REQUIRE(io.ok());
  const auto* ids_e = (*io)->find("input/input_ids");
  const auto* mask_e = (*io)->find("input/attention_mask");
  REQUIRE((ids_e && mask_e));
  const std::vector<float> expected = golden_floats(**io, "expected/logits");

  ModelPtr model = load_model(small_model_path());
  for (const char* backend : {"reference", "cpu"}) {
    for (int external : {0, 1}) {
      CAPTURE(backend);
      CAPTURE(external);
      OptionsPtr opts = make_options(backend, 1);
      REQUIRE(lr_session_options_set_external_arena(opts.get(), external) == LR_OK);
      SessionPtr session = make_session(model.get(), opts.get());
      const int64_t dims[2] = {2, 7};
      lr_tensor *ids = nullptr, *mask = nullptr;
      REQUIRE(lr_tensor_create(LR_I64, dims, 2, ids_e->bytes.data(), LR_BORROW, &ids) == LR_OK);
      REQUIRE(lr_tensor_create(LR_I64, dims, 2, mask_e->bytes.data(), LR_COPY, &mask) == LR_OK);
      TensorPtr ids_owner(ids), mask_owner(mask);
      const char* in_names[] = {"attention_mask", "input_ids"};  // any order
      const lr_tensor* inputs[] = {mask, ids};
      size_t arena_bytes = 0;
      REQUIRE(lr_session_plan(session.get(), in_names, inputs, 2, &arena_bytes) == LR_OK);
      CHECK(arena_bytes > 0);
      void* arena = external ? std::aligned_alloc(64, (arena_bytes + 63) / 64 * 64) : nullptr;
      const char* out_names[] = {"logits", "logits"};
      lr_tensor* outs[2] = {nullptr, nullptr};
      const lr_status st = external ? lr_session_run_with_arena(session.get(), in_names, inputs, 2, out_names,
                                                                outs, 2, arena, arena_bytes)
                                    : lr_session_run(session.get(), in_names, inputs, 2, out_names, outs, 2);
      REQUIRE_MESSAGE(st == LR_OK, lr_last_error());
      TensorPtr o0(outs[0]), o1(outs[1]);
      lr_dtype dt;
      size_t rank = 0;
      int64_t odims[4] = {};
      REQUIRE(lr_tensor_dtype(outs[0], &dt) == LR_OK);
      REQUIRE(lr_tensor_rank(outs[0], &rank) == LR_OK);
      REQUIRE(lr_tensor_dims(outs[0], odims, 4) == LR_OK);
      CHECK(dt == LR_F32);
      CHECK(rank == 2);
      CHECK(odims[0] == 2);
      CHECK(odims[1] == 10);
      const void* data = nullptr;
      REQUIRE(lr_tensor_data(outs[0], &data) == LR_OK);
      const float* logits = static_cast<const float*>(data);
      REQUIRE(expected.size() == 20);
      double max_err = 0;
      for (size_t i = 0; i < expected.size(); ++i)
        max_err = std::max(max_err, std::fabs(double(logits[i]) - expected[i]));
      CHECK(max_err <= kMaxAbsErr);
      const void* data1 = nullptr;
      REQUIRE(lr_tensor_data(outs[1], &data1) == LR_OK);
      CHECK(std::memcmp(data, data1, 20 * sizeof(float)) == 0);
      if (external) {
        // Too small and misaligned arenas are refused; the session then still runs.
        CHECK(lr_session_run_with_arena(session.get(), in_names, inputs, 2, out_names, outs, 1, arena,
                                        arena_bytes - 1) == LR_INVALID_ARGUMENT);
        CHECK(std::string(lr_last_error()).find("needs " + std::to_string(arena_bytes) + " bytes") !=
              std::string::npos);
        CHECK(lr_session_run_with_arena(session.get(), in_names, inputs, 2, out_names, outs, 1,
                                        static_cast<char*>(arena) + 4, arena_bytes) == LR_INVALID_ARGUMENT);
        CHECK(lr_session_run(session.get(), in_names, inputs, 2, out_names, outs, 1) == LR_INVALID_ARGUMENT);
        lr_tensor* again = nullptr;
        REQUIRE(lr_session_run_with_arena(session.get(), in_names, inputs, 2, out_names, &again, 1, arena,
                                          arena_bytes) == LR_OK);
        TensorPtr again_owner(again);
        const void* d2 = nullptr;
        REQUIRE(lr_tensor_data(again, &d2) == LR_OK);
        CHECK(std::memcmp(data, d2, 20 * sizeof(float)) == 0);
      }
      std::free(arena);
    }
  }
}

TEST_CASE("C API: log callback reports the backend and each new shape") {
  struct Log {
    std::vector<std::string> lines;
  } log;
  ModelPtr model = load_model(small_model_path());
  OptionsPtr opts = make_options("cpu", 1);
  REQUIRE(lr_session_options_set_log_callback(
              opts.get(),
              [](void* user, lr_log_level, const char* m) { static_cast<Log*>(user)->lines.emplace_back(m); },
              &log) == LR_OK);
  SessionPtr session = make_session(model.get(), opts.get());
  REQUIRE(log.lines.size() == 1);
  CHECK(log.lines[0].find("session on cpu") != std::string::npos);
  TensorPtr ids = ids_tensor(make_ids(9, 1), 1, 9);
  lr_status st;
  run_logits(session.get(), ids.get(), &st);
  REQUIRE(st == LR_OK);
  run_logits(session.get(), ids.get(), &st);  // cached: no new line
  REQUIRE(log.lines.size() == 2);
  CHECK(log.lines[1].find("planned a new input shape: arena ") != std::string::npos);
}

TEST_CASE("C API: precision names are checked; unimplemented precisions fail at session creation") {
  ModelPtr model = load_model(small_model_path());
  OptionsPtr opts = make_options("reference", 1);
  CHECK(lr_session_options_set_precision(opts.get(), "fp8") == LR_INVALID_ARGUMENT);
  CHECK(std::string(lr_last_error()).find("unknown precision 'fp8' (f32, bf16, int8)") != std::string::npos);
  CHECK(lr_session_options_set_precision(opts.get(), nullptr) == LR_INVALID_ARGUMENT);
  REQUIRE(lr_session_options_set_precision(opts.get(), "bf16") == LR_OK);  // the scalar emulations
  SessionPtr bf16 = make_session(model.get(), opts.get());
  REQUIRE(lr_session_options_set_precision(opts.get(), "int8") == LR_OK);
  SessionPtr int8 = make_session(model.get(), opts.get());
  REQUIRE(lr_session_options_set_precision(opts.get(), "f32") == LR_OK);
  // The cpu backend's reduced precisions need AVX2.
  OptionsPtr scalar = make_options("cpu", 1);
  REQUIRE(lr_session_options_set_isa(scalar.get(), "scalar") == LR_OK);
  REQUIRE(lr_session_options_set_precision(scalar.get(), "bf16") == LR_OK);
  lr_session* s = nullptr;
  CHECK(lr_session_create(model.get(), scalar.get(), &s) == LR_UNSUPPORTED);
  CHECK(std::string(lr_last_error()).find("precision bf16 needs the avx2 ISA level") != std::string::npos);
  CHECK(s == nullptr);
  SessionPtr ok = make_session(model.get(), opts.get());
}

TEST_CASE("C API: determinism switch pins the ISA and refuses threads = 0; repeated runs are bitwise equal") {
  ModelPtr model = load_model(small_model_path());
  OptionsPtr opts = make_options("cpu", 0);
  REQUIRE(lr_session_options_set_deterministic(opts.get(), 1) == LR_OK);
  lr_session* s = nullptr;
  CHECK(lr_session_create(model.get(), opts.get(), &s) == LR_INVALID_ARGUMENT);
  CHECK(std::string(lr_last_error()).find("threads = 0") != std::string::npos);
  REQUIRE(lr_session_options_set_threads(opts.get(), 2) == LR_OK);
  SessionPtr a = make_session(model.get(), opts.get());
  SessionPtr b = make_session(model.get(), opts.get());
  const char* desc = nullptr;
  REQUIRE(lr_session_backend(a.get(), &desc) == LR_OK);
  const std::string d(desc);
  CHECK((d.find("avx2") != std::string::npos || d.find("scalar") != std::string::npos));
  TensorPtr ids = ids_tensor(make_ids(2 * 200, 7), 2, 200);
  lr_status st;
  const std::vector<float> ra = run_logits(a.get(), ids.get(), &st);
  REQUIRE(st == LR_OK);
  for (int k = 0; k < 3; ++k) {
    const std::vector<float> rb = run_logits(b.get(), ids.get(), &st);
    REQUIRE(st == LR_OK);
    CHECK(std::memcmp(ra.data(), rb.data(), ra.size() * sizeof(float)) == 0);
  }
}
