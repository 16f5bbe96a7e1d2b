// Small helpers shared by the cpu kernel unit tests.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/gemm_weight_cache.h"
#include "longrun/session.h"
#include "longrun/thread_pool.h"

namespace longrun::cpu_test {

inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kMax = std::numeric_limits<float>::max();

// Whether this machine runs the AVX2 kernels (tests of them skip otherwise).
inline bool has_avx2() { return int(cpu::detect_isa()) >= int(cpu::Isa::avx2); }

// A float's bit pattern, to compare results bit for bit (NaNs included).
inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// A thread pool of `threads` threads; fails the test if it cannot be made.
inline std::unique_ptr<ThreadPool> pool_of(int threads) {
  auto p = make_thread_pool(threads);
  REQUIRE(p.ok());
  return std::move(*p);
}

// An epilogue the GEMM kernel tests cycle through: y = act(alpha · y + bias + beta · C).
struct EpilogueCase {
  const char* name;
  float alpha, beta;
  bool bias, c;
  Activation act;
  // The epilogue with `bias` and C (`c`, rows ldc apart) where this case has them.
  cpu::gemm::Epilogue make(const float* bias_data, const float* c_data, int64_t ldc) const {
    cpu::gemm::Epilogue e;
    e.alpha = alpha;
    e.beta = beta;
    e.act = act;
    if (bias) e.bias = bias_data;
    if (c) {
      e.c = c_data;
      e.ldc = ldc;
    }
    return e;
  }
};
inline constexpr EpilogueCase kEpilogues[] = {
    {"none", 1.0f, 0.0f, false, false, Activation::none},
    {"bias", 1.0f, 0.0f, true, false, Activation::none},
    {"bias+gelu", 1.0f, 0.0f, true, false, Activation::gelu},
    {"alpha+bias+residual", 0.5f, 1.0f, true, true, Activation::none},
    {"bias+residual+relu", 1.0f, -2.0f, true, true, Activation::relu},
    {"gelu_tanh", 1.0f, 0.0f, false, false, Activation::gelu_tanh},
};

// A linear layer's graph: y = x op(W) (+ bias) for x [1, n, in], with W [out, in] in `w` used
// transposed, or with `kn` W [in, out] used as is; without a bias where `bias` is null.
inline GraphFactory linear_factory(int64_t in, int64_t out, std::shared_ptr<const std::vector<float>> w,
                                   std::shared_ptr<const std::vector<float>> bias, bool kn = false) {
  return [in, out, w, bias, kn](std::span<const TensorDesc> descs) -> Result<Graph> {
    GraphBuilder b;
    const ValueId x = b.input("x", descs[0]);
    const ValueId wt = b.weight(
        "w", TensorDesc(DType::f32, kn ? std::vector<int64_t>{in, out} : std::vector<int64_t>{out, in}),
        w->data(), w);
    if (bias == nullptr) {
      b.output(b.matmul({x, wt}, {.trans_b = !kn}), "y");
    } else {
      const ValueId bt = b.weight("b", TensorDesc(DType::f32, {out}), bias->data(), bias);
      b.output(b.matmul({x, wt, bt}, {.trans_b = !kn, .has_bias = true}), "y");
    }
    return b.build();
  };
}

// The matmul tests' input x [rows, k]: steps of 0.3 from -1.2 to 1.2 plus hundredths.
inline std::vector<float> linear_input(int64_t rows, int64_t k) {
  std::vector<float> x(size_t(rows * k));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 9) - 4) * 0.3f + float(i % 5) * 0.01f;
  return x;
}

// Runs session s on its one input "x" = `x` as [1, rows, k] and returns its first output's
// floats; fails the test if the run fails.
inline std::vector<float> run_rows(Session& s, std::vector<float> x, int64_t k) {
  const int64_t rows = int64_t(x.size()) / k;
  NamedTensorRef in{"x", TensorView{TensorDesc(DType::f32, {1, rows, k}), x.data()}};
  auto out = s.run({&in, 1});
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  const Tensor& y = (*out)[0].tensor;
  return std::vector<float>(y.data<float>(), y.data<float>() + y.desc().numel());
}

// Session s's memory report for an input "x" of [1, rows, k]; fails the test on an error.
inline MemoryReport memory_report(Session& s, int64_t rows, int64_t k) {
  const TensorDesc d(DType::f32, {1, rows, k});
  auto r = s.memory_report({&d, 1});
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  return *r;
}

// Checks that two sessions of the linear layer `factory` (input x [1, n, in]) at `precision`
// share one packed copy of its weight (gemm_weight_cache.h) of at least min_bytes: counted in
// the first memory report only, not again for another input shape or the second session, not
// made again by use(a, b) (the caller's runs and checks), and released with the last plan.
inline void check_one_packed_copy(const GraphFactory& factory, Precision precision, int64_t in,
                                  int64_t min_bytes, const std::function<void(Session& a, Session& b)>& use) {
  const size_t before = cpu::gemm::packed_weight_entries();
  {
    const SessionOptions o{.backend = "cpu", .threads = 1, .precision = precision};
    auto a = Session::create(factory, {"x"}, o);
    auto b = Session::create(factory, {"x"}, o);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(memory_report(**a, 3, in).weight_bytes_copied >= min_bytes);
    CHECK(cpu::gemm::packed_weight_entries() == before + 1);
    // Another shape of the same session and a second session reuse the packed copy.
    CHECK(memory_report(**a, 7, in).weight_bytes_copied == 0);
    CHECK(memory_report(**b, 3, in).weight_bytes_copied == 0);
    CHECK(cpu::gemm::packed_weight_entries() == before + 1);
    use(**a, **b);
    CHECK(cpu::gemm::packed_weight_entries() == before + 1);
  }
  CHECK(cpu::gemm::packed_weight_entries() == before);  // released with the last plan
}

}  // namespace longrun::cpu_test
