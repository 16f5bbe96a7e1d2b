// The bf16 GEMM kernel layer (backends/cpu/gemm_bf16*) against the scalar definition
// (ops::bf16, longrun/ops/reduced_precision.h): the AVX2 activation rounding bit for bit; the
// weight rounding from either layout and every weight dtype; the AVX2 kernel on shapes around
// the tile (6 rows) and panel (16 columns) widths, every epilogue, NaN / infinity / overflowing
// rows and a NaN weight, 1 vs 3 threads; argument errors.
//
// The accuracy bound. round(x) and round(w) have 8 significant bits, so each product p_k is
// exact in f32 and the reference's double sum is exact to far below f32 rounding; the kernel
// sums the K exact products in one f32 FMA chain, whose error is at most γ_K Σ_k |p_k|
// (γ_K = K u / (1 - K u), u = 2^-24; Higham, Accuracy and Stability, 3.1), and the reference
// itself rounds its sum once (u |ref|). Checked: |y - ref| <= (K + 1) · 2^-24 · Σ_k |p_k|.
// Measured on the shapes below: the worst |y - ref| is 2.06 · 2^-24 · Σ|p_k| (K <= 64),
// printed by the test; the bound is the rigorous one, not a fitted constant.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/gemm_bf16.h"
#include "longrun/dtype.h"
#include "longrun/thread_pool.h"
#include "unit/cpu_test_util.h"

using namespace longrun;
namespace bf = longrun::cpu::bf16;
namespace gemm = longrun::cpu::gemm;

namespace {

using namespace cpu_test;  // bits, has_avx2, pool_of, kInf, kNaN, kMax, kEpilogues

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

TEST_CASE("bf16 gemm: the AVX2 activation rounding is f32_to_bf16 bit for bit") {
  if (!has_avx2()) return;
  std::vector<float> x = {0.0f,
                          -0.0f,
                          1.0f,
                          kInf,
                          -kInf,
                          kNaN,
                          -kNaN,
                          from_bits(0x7f800001u),  // signalling NaN
                          from_bits(0xffbfffffu),
                          kMax,  // rounds to infinity
                          -kMax,
                          from_bits(0x7f7f7fffu),  // just below the halfway point to infinity
                          from_bits(0x3f808000u),  // halfway, even below: stays 0x3f80
                          from_bits(0x3f818000u),  // halfway, odd below: up to 0x3f82
                          from_bits(0x3f808001u),
                          from_bits(0x3f807fffu),
                          std::numeric_limits<float>::denorm_min(),
                          from_bits(0x00008000u),
                          from_bits(0x00018000u),
                          std::numeric_limits<float>::min()};
  std::mt19937 rng(7);
  for (int i = 0; i < 4000; ++i) x.push_back(from_bits(uint32_t(rng())));
  for (int64_t cols : {int64_t(1), int64_t(7), int64_t(8), int64_t(9), int64_t(17), int64_t(x.size())}) {
    CAPTURE(cols);
    const int64_t rows = int64_t(x.size()) / cols, ldd = (cols + 7) / 8 * 8 + 8;
    std::vector<float> d(size_t(rows * ldd), from_bits(0x7fc0deadu));
    bf::round_rows_avx2(x.data(), rows, cols, cols, d.data(), ldd);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < cols; ++k) {
        const float v = x[size_t(r * cols + k)];
        CAPTURE(bits(v));
        REQUIRE(bits(d[size_t(r * ldd + k)]) == uint32_t(f32_to_bf16(v)) << 16);
      }
      for (int64_t k = cols; k < (cols + 7) / 8 * 8; ++k) REQUIRE(bits(d[size_t(r * ldd + k)]) == 0u);
    }
  }
  CHECK(std::isinf(ops::bf16::round(kMax)));
  CHECK(std::isnan(ops::bf16::round(kNaN)));
}

TEST_CASE("bf16 gemm: weights round from either layout and every float dtype") {
  std::mt19937 rng(3);
  std::normal_distribution<float> g;
  const int64_t n = 5, k = 7;
  std::vector<float> nk(size_t(n * k)), kn(size_t(n * k));
  for (int64_t c = 0; c < n; ++c)
    for (int64_t j = 0; j < k; ++j) kn[size_t(j * n + c)] = nk[size_t(c * k + j)] = g(rng);
  auto a = ops::bf16::round_weight(nk.data(), DType::f32, ops::LinearWeight::nk, n, k);
  auto b = ops::bf16::round_weight(kn.data(), DType::f32, ops::LinearWeight::kn, n, k);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->w == b->w);
  for (int64_t i = 0; i < n * k; ++i) CHECK(a->w[size_t(i)] == f32_to_bf16(nk[size_t(i)]));
  // bf16 taken as it is (a NaN payload included); f16 widened exactly, then rounded.
  std::vector<uint16_t> h(size_t(n * k));
  for (size_t i = 0; i < h.size(); ++i) h[i] = uint16_t(rng());
  h[3] = 0x7f81;
  auto c = ops::bf16::round_weight(h.data(), DType::bf16, ops::LinearWeight::nk, n, k);
  REQUIRE(c.ok());
  CHECK(c->w == h);
  auto d = ops::bf16::round_weight(h.data(), DType::f16, ops::LinearWeight::nk, n, k);
  REQUIRE(d.ok());
  for (size_t i = 0; i < h.size(); ++i)
    CHECK(bits(bf16_to_f32(d->w[i])) == bits(ops::bf16::round(f16_to_f32(h[i]))));
  CHECK(ops::bf16::round_weight(h.data(), DType::i32, ops::LinearWeight::nk, n, k).status().code() ==
        StatusCode::invalid_argument);
  CHECK(ops::bf16::round_weight(h.data(), DType::f32, ops::LinearWeight::none, n, k).status().code() ==
        StatusCode::invalid_argument);
  CHECK(ops::bf16::round_weight(nullptr, DType::f32, ops::LinearWeight::nk, n, k).status().code() ==
        StatusCode::invalid_argument);
}

TEST_CASE("bf16 gemm: the AVX2 kernel is within the f32 summation bound of the definition") {
  if (!has_avx2()) return;
  auto pool3 = pool_of(3);
  const int64_t sizes[] = {1, 5, 6, 7, 8, 15, 16, 17, 31, 33, 64};
  std::mt19937 rng(11);
  std::normal_distribution<float> g;
  double worst_ratio = 0;  // |y - ref| / (2^-24 Σ|p_k|)
  int cases = 0;
  for (int64_t M : sizes)
    for (int64_t N : sizes)
      for (int64_t K : sizes) {
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        const EpilogueCase& ec = kEpilogues[size_t(cases++) % std::size(kEpilogues)];
        CAPTURE(ec.name);
        const int64_t lda = K + 3, ldy = N + 2;
        std::vector<float> a(static_cast<size_t>(M * lda), kNaN), wf(static_cast<size_t>(N * K));
        std::vector<float> bias(static_cast<size_t>(N)), c(static_cast<size_t>(M * N));
        for (int64_t i = 0; i < M; ++i)
          for (int64_t k = 0; k < K; ++k) a[size_t(i * lda + k)] = g(rng);
        for (float& v : wf) v = g(rng);
        for (float& v : bias) v = g(rng);
        for (float& v : c) v = g(rng);
        // Adversarial rows: a NaN, an infinity, a finite value that rounds to infinity.
        if (M >= 3) a[size_t(1 * lda + K / 2)] = kNaN;
        if (M >= 5) a[size_t(2 * lda + K - 1)] = -kInf;
        if (M >= 6) a[size_t(4 * lda)] = kMax;
        // A NaN weight in the last column of the widest shapes.
        if (N == 33 && K >= 5) wf[size_t((N - 1) * K + 2)] = kNaN;
        auto rw = ops::bf16::round_weight(wf.data(), DType::f32, ops::LinearWeight::nk, N, K);
        REQUIRE(rw.ok());
        auto packed = bf::pack_weight_bf16x16(*rw);
        REQUIRE(packed.ok());

        // The definition: exact products summed in double, and Σ|p_k| for the bound.
        std::vector<float> ref(size_t(M * N));
        bf::gemm_bf16_reference(a.data(), lda, M, *rw, ref.data(), N);
        std::vector<double> mag(size_t(M * N), 0.0);
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j)
            for (int64_t k = 0; k < K; ++k)
              mag[size_t(i * N + j)] += std::fabs(double(ops::bf16::round(a[size_t(i * lda + k)])) *
                                                  double(bf16_to_f32(rw->w[size_t(j * K + k)])));

        // Raw product, one thread.
        std::vector<float> raw(size_t(M * ldy), -1.0f);
        REQUIRE(bf::gemm_bf16_avx2(a.data(), M, lda, *packed, raw.data(), ldy, nullptr, nullptr).ok());
        for (int64_t i = 0; i < M; ++i) {
          for (int64_t j = 0; j < N; ++j) {
            const float y = raw[size_t(i * ldy + j)], r = ref[size_t(i * N + j)];
            CAPTURE(i);
            CAPTURE(j);
            if (std::isnan(r)) {
              REQUIRE(std::isnan(y));
            } else if (std::isinf(r)) {
              REQUIRE(y == r);
            } else {
              const double s = mag[size_t(i * N + j)], err = std::fabs(double(y) - double(r));
              REQUIRE(std::isfinite(y));
              REQUIRE(err <= double(K + 1) * std::ldexp(s, -24));
              if (s > 0) worst_ratio = std::max(worst_ratio, err / std::ldexp(s, -24));
            }
          }
          for (int64_t j = N; j < ldy; ++j) REQUIRE(raw[size_t(i * ldy + j)] == -1.0f);  // untouched
        }

        // With the epilogue, on 3 threads: the raw product put through the AVX2 epilogue, bit for bit.
        const gemm::Epilogue e = ec.make(bias.data(), c.data(), N);
        std::vector<float> want = raw;
        gemm::gemm_epilogue_f32_avx2(want.data(), ldy, M, N, e);
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), pool3.get()}) {
          std::vector<float> got(size_t(M * ldy), -1.0f);
          REQUIRE(bf::gemm_bf16_avx2(a.data(), M, lda, *packed, got.data(), ldy, &e, pool).ok());
          for (size_t i = 0; i < got.size(); ++i) REQUIRE(bits(got[i]) == bits(want[i]));
        }
      }
  std::printf(
      "bf16 gemm: worst |y - ref| = %.2f · 2^-24 · Σ|x_k w_k| over %d shapes (bound (K + 1) · that)\n",
      worst_ratio, cases);
}

TEST_CASE("bf16 gemm: argument errors") {
  if (!has_avx2()) return;
  ops::bf16::RoundedWeight w;
  w.n = 3;
  w.k = 4;
  w.w.assign(11, 0);
  CHECK(bf::pack_weight_bf16x16(w).status().code() == StatusCode::invalid_argument);
  w.w.assign(12, 0);
  auto p = bf::pack_weight_bf16x16(w);
  REQUIRE(p.ok());
  std::vector<float> a(8), y(8);
  CHECK(bf::gemm_bf16_avx2(a.data(), 2, 3, *p, y.data(), 3, nullptr, nullptr).code() ==
        StatusCode::invalid_argument);  // lda < K
  bf::PackedWeightBF16 bad = *p;
  bad.data.pop_back();
  CHECK(bf::gemm_bf16_avx2(a.data(), 1, 4, bad, y.data(), 3, nullptr, nullptr).code() ==
        StatusCode::invalid_argument);
  CHECK(bf::gemm_bf16_avx2(a.data(), 0, 4, *p, y.data(), 3, nullptr, nullptr).ok());
}
