// The cpu backend's matmul at int8 precision (backends/cpu/matmul_s8.cpp): linear layers'
// packed s8 weights shared through the weight cache by every plan and session, the result
// against the scalar definition of the format.
#include <doctest/doctest.h>

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

using cpu_test::bits;
using cpu_test::has_avx2;
using cpu_test::pool_of;

constexpr int64_t kIn = 40, kOut = 24;

// y = x W^T + bias for x [1, n, kIn] and W [kOut, kIn] in `w`, or with `kn`, y = x W + bias
// for W [kIn, kOut].
GraphFactory linear_factory(std::shared_ptr<const std::vector<float>> w,
                            std::shared_ptr<const std::vector<float>> bias, bool kn = false) {
  return cpu_test::linear_factory(kIn, kOut, std::move(w), std::move(bias), kn);
}

std::vector<float> input(int64_t n) { return cpu_test::linear_input(n, kIn); }
std::vector<float> run(Session& s, int64_t n) { return cpu_test::run_rows(s, input(n), kIn); }
MemoryReport report(Session& s, int64_t n) { return cpu_test::memory_report(s, n, kIn); }

// The format's scalar definition: quantize, the exact int32 product, dequantize, + bias.
std::vector<float> reference(const std::vector<float>& x, int64_t n, const ops::s8::QuantizedWeight& qw,
                             const std::vector<float>& bias) {
  std::vector<int8_t> qa(size_t(n * kIn));
  std::vector<float> sa(static_cast<size_t>(n)), y(size_t(n * kOut));
  ops::s8::quantize_rows_reference(x.data(), n, kIn, kIn, qa.data(), kIn, sa.data());
  ops::s8::gemm_s8_reference(qa.data(), kIn, sa.data(), n, qw, y.data(), kOut);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < kOut; ++j) y[size_t(i * kOut + j)] += bias[size_t(j)];
  return y;
}

}  // namespace

TEST_CASE("cpu int8 matmul: plans and sessions share one packed s8 copy of a weight") {
  if (!has_avx2()) return;
  auto w = std::make_shared<std::vector<float>>(size_t(kOut * kIn));
  auto bias = std::make_shared<std::vector<float>>(size_t(kOut));
  for (size_t i = 0; i < w->size(); ++i) (*w)[i] = float(int(i * 7 % 23) - 11) / 8.0f;
  for (size_t i = 0; i < bias->size(); ++i) (*bias)[i] = float(i) * 0.125f - 1.0f;
  auto qw = ops::s8::quantize_weight(w->data(), DType::f32, ops::LinearWeight::nk, kOut, kIn);
  REQUIRE(qw.ok());
  // The packed int16 panels of [kOut, kIn] and their scales.
  cpu_test::check_one_packed_copy(
      linear_factory(w, bias), Precision::int8, kIn, kOut * kIn * int64_t(sizeof(int16_t)),
      [&](Session& a, Session& b) {
        for (int64_t n : {3, 7}) {
          CAPTURE(n);
          const std::vector<float> ya = run(a, n), yb = run(b, n), want = reference(input(n), n, *qw, *bias);
          CHECK(std::memcmp(ya.data(), want.data(), ya.size() * sizeof(float)) == 0);
          CHECK(std::memcmp(yb.data(), want.data(), yb.size() * sizeof(float)) == 0);
        }
      });
}

TEST_CASE("cpu int8 matmul: a [K, N] weight runs int8, quantized per column") {
  if (!has_avx2()) return;
  auto w = std::make_shared<std::vector<float>>(size_t(kIn * kOut));  // [kIn, kOut]
  auto bias = std::make_shared<std::vector<float>>(size_t(kOut), 0.5f);
  for (size_t i = 0; i < w->size(); ++i) (*w)[i] = float(int(i * 5 % 19) - 9) / 4.0f + float(i % kOut) * 0.1f;
  auto qw = ops::s8::quantize_weight(w->data(), DType::f32, ops::LinearWeight::kn, kOut, kIn);
  REQUIRE(qw.ok());
  const size_t before = cpu::gemm::packed_weight_entries();
  auto s = Session::create(linear_factory(w, bias, true), {"x"},
                           {.backend = "cpu", .threads = 2, .precision = Precision::int8});
  REQUIRE(s.ok());
  CHECK(report(**s, 5).weight_bytes_copied >= kOut * kIn * int64_t(sizeof(int16_t)));
  CHECK(cpu::gemm::packed_weight_entries() == before + 1);
  const std::vector<float> y = run(**s, 5), want = reference(input(5), 5, *qw, *bias);
  CHECK(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)) == 0);
  // Not the f32 product: the int8 route ran.
  auto f32 = Session::create(linear_factory(w, bias, true), {"x"}, {.backend = "cpu", .threads = 2});
  REQUIRE(f32.ok());
  CHECK(std::memcmp(y.data(), run(**f32, 5).data(), y.size() * sizeof(float)) != 0);
}

TEST_CASE("cpu int8 matmul: a reshaped 3-D weight is a linear layer's weight") {
  if (!has_avx2()) return;
  // A DenseGeneral-style kernel [kIn, 4, kOut / 4] viewed as [kIn, kOut]: the same bytes as
  // the [K, N] weight of the case above, so the same result.
  auto w = std::make_shared<std::vector<float>>(size_t(kIn * kOut));
  for (size_t i = 0; i < w->size(); ++i) (*w)[i] = float(int(i * 5 % 19) - 9) / 4.0f + float(i % kOut) * 0.1f;
  auto qw = ops::s8::quantize_weight(w->data(), DType::f32, ops::LinearWeight::kn, kOut, kIn);
  REQUIRE(qw.ok());
  const std::vector<float> zero(size_t(kOut), 0.0f);
  GraphFactory factory = [w](std::span<const TensorDesc> descs) -> Result<Graph> {
    GraphBuilder b;
    const ValueId x = b.input("x", descs[0]);
    const ValueId k = b.weight("kernel", TensorDesc(DType::f32, {kIn, 4, kOut / 4}), w->data(), w);
    ReshapeAttrs view;
    view.rank = 2;
    view.dims[0] = kIn;
    view.dims[1] = kOut;
    b.output(b.matmul({x, b.reshape({k}, view)}), "y");
    return b.build();
  };
  const size_t before = cpu::gemm::packed_weight_entries();
  auto s = Session::create(factory, {"x"}, {.backend = "cpu", .threads = 1, .precision = Precision::int8});
  REQUIRE(s.ok());
  CHECK(report(**s, 5).weight_bytes_copied >= kOut * kIn * int64_t(sizeof(int16_t)));
  CHECK(cpu::gemm::packed_weight_entries() == before + 1);
  const std::vector<float> y = run(**s, 5), want = reference(input(5), 5, *qw, zero);
  CHECK(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)) == 0);
}
