// The cpu backend's matmul at bf16 precision (backends/cpu/matmul_bf16.cpp): linear layers'
// packed bf16 weights shared through the weight cache by every plan and session, the result
// against the format's definition within the f32 summation bound (cpu_gemm_bf16_test.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/gemm_weight_cache.h"
#include "longrun/ops/reduced_precision.h"
#include "longrun/session.h"
#include "unit/cpu_test_util.h"

using namespace longrun;

namespace {

using cpu_test::has_avx2;

constexpr int64_t kIn = 40, kOut = 24;

// y = x W^T + bias for x [1, n, kIn] and W [kOut, kIn] in `w`.
GraphFactory linear_factory(std::shared_ptr<const std::vector<float>> w,
                            std::shared_ptr<const std::vector<float>> bias) {
  return cpu_test::linear_factory(kIn, kOut, std::move(w), std::move(bias));
}

std::vector<float> input(int64_t n) { return cpu_test::linear_input(n, kIn); }
std::vector<float> run(Session& s, int64_t n) { return cpu_test::run_rows(s, input(n), kIn); }

// Checks y against the definition: Σ_k round(x) · round(w) (exact products, summed in
// double) + bias, within the f32 summation and epilogue rounding (K + 2) · 2^-24 · Σ|terms|.
void check_definition(const std::vector<float>& y, int64_t n, const std::vector<float>& w,
                      const std::vector<float>& bias) {
  const std::vector<float> x = input(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < kOut; ++j) {
      double sum = bias[size_t(j)], mag = std::fabs(bias[size_t(j)]);
      for (int64_t k = 0; k < kIn; ++k) {
        const double p = double(ops::bf16::round(x[size_t(i * kIn + k)])) *
                         double(ops::bf16::round(w[size_t(j * kIn + k)]));
        sum += p;
        mag += std::fabs(p);
      }
      CHECK(std::fabs(double(y[size_t(i * kOut + j)]) - sum) <= double(kIn + 2) * std::ldexp(1.0, -24) * mag);
    }
}

}  // namespace

TEST_CASE("cpu bf16 matmul: plans and sessions share one packed bf16 copy of a weight") {
  if (!has_avx2()) return;
  auto w = std::make_shared<std::vector<float>>(size_t(kOut * kIn));
  auto bias = std::make_shared<std::vector<float>>(size_t(kOut));
  for (size_t i = 0; i < w->size(); ++i) (*w)[i] = float(int(i * 7 % 23) - 11) / 8.0f + float(i % 3) * 1e-3f;
  for (size_t i = 0; i < bias->size(); ++i) (*bias)[i] = float(i) * 0.125f - 1.0f;
  // The packed bf16 panels of [kOut, kIn].
  cpu_test::check_one_packed_copy(
      linear_factory(w, bias), Precision::bf16, kIn, kOut * kIn * int64_t(sizeof(uint16_t)),
      [&](Session& a, Session& b) {
        for (int64_t n : {3, 7}) {
          CAPTURE(n);
          const std::vector<float> ya = run(a, n), yb = run(b, n);
          CHECK(std::memcmp(ya.data(), yb.data(), ya.size() * sizeof(float)) == 0);
          check_definition(ya, n, *w, *bias);
        }
        // Not the f32 product: the bf16 route ran.
        auto f32 = Session::create(linear_factory(w, bias), {"x"}, {.backend = "cpu", .threads = 1});
        REQUIRE(f32.ok());
        CHECK(std::memcmp(run(a, 3).data(), run(**f32, 3).data(), size_t(3 * kOut) * sizeof(float)) != 0);
      });
}

TEST_CASE("cpu bf16 matmul: a memory limit counts the packed bf16 copy once") {
  if (!has_avx2()) return;
  auto w = std::make_shared<std::vector<float>>(size_t(kOut * kIn), 0.5f);
  auto bias = std::make_shared<std::vector<float>>(size_t(kOut), 0.0f);
  // Room for less than the packed copy: refused, and nothing is left behind.
  auto s = Session::create(
      linear_factory(w, bias), {"x"},
      {.backend = "cpu", .threads = 1, .precision = Precision::bf16, .memory_limit_bytes = kOut * kIn});
  REQUIRE(s.ok());
  std::vector<float> x(size_t(2 * kIn), 1.0f);
  NamedTensorRef in{"x", TensorView{TensorDesc(DType::f32, {1, 2, kIn}), x.data()}};
  auto out = (*s)->run({&in, 1});
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().code() == StatusCode::out_of_memory);
  CHECK((*s)->cached_plans() == 0);
}
