// The int8 GEMM kernel layer (backends/cpu/gemm_s8*): the row quantization (round half to
// even, clamping, zero / non-finite / denormal rows), the AVX2 kernel bit for bit against the
// scalar reference (with the AVX2 matmul epilogue applied after it) on shapes around the tile
// and panel widths with adversarial rows and columns, 1 vs 2 vs 3 threads, argument errors,
// the accuracy of the format against the f32 product on Gaussian data, the caller's scratch,
// and the AVX2 weight packing byte for byte against the scalar quantize-then-pack.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/gemm_s8.h"
#include "longrun/dtype.h"
#include "longrun/thread_pool.h"
#include "unit/cpu_test_util.h"

using namespace longrun;
namespace s8 = longrun::cpu::s8;
namespace gemm = longrun::cpu::gemm;

namespace {

using namespace cpu_test;  // bits, has_avx2, pool_of, kInf, kNaN, kMax, kEpilogues
constexpr float kDenormMin = std::numeric_limits<float>::denorm_min();

// Quantizes `rows` rows of x with both quantizers and checks they agree bit for bit (scales
// by their bits, so NaN scales compare too); returns the reference's q and scales.
void quantize_both(const std::vector<float>& x, int64_t rows, int64_t cols, std::vector<int8_t>* q,
                   std::vector<float>* scale) {
  q->assign(size_t(rows * cols), 0);
  scale->assign(size_t(rows), 0.0f);
  s8::quantize_rows_reference(x.data(), rows, cols, cols, q->data(), cols, scale->data());
  if (!has_avx2()) return;
  const int64_t ldq = (cols + 7) / 8 * 8 + 8;
  std::vector<int16_t> q16(size_t(rows * ldq), int16_t(0x5a5a));
  std::vector<float> s16(static_cast<size_t>(rows));
  s8::quantize_rows_avx2(x.data(), rows, cols, cols, q16.data(), ldq, s16.data());
  for (int64_t r = 0; r < rows; ++r) {
    CAPTURE(r);
    CHECK(bits(s16[size_t(r)]) == bits((*scale)[size_t(r)]));
    for (int64_t k = 0; k < cols; ++k) CHECK(q16[size_t(r * ldq + k)] == (*q)[size_t(r * cols + k)]);
    for (int64_t k = cols; k < (cols + 7) / 8 * 8; ++k) CHECK(q16[size_t(r * ldq + k)] == 0);  // padding
    for (int64_t k = (cols + 7) / 8 * 8; k < ldq; ++k) CHECK(q16[size_t(r * ldq + k)] == int16_t(0x5a5a));
  }
}

// The kinds of adversarial rows (of A, or of W: output channels).
// non_finite last: activations only (a weight holding one is an error).
enum class RowKind { gaussian, zero, one_huge, extremes, denormal, all_equal, tiny_max, non_finite, kCount };

void fill_row(RowKind kind, float* x, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_int_distribution<int64_t> pos(0, cols - 1);
  switch (kind) {
    case RowKind::gaussian:
      for (int64_t k = 0; k < cols; ++k) x[k] = g(rng);
      break;
    case RowKind::zero:
      for (int64_t k = 0; k < cols; ++k) x[k] = 0.0f;
      break;
    case RowKind::one_huge:  // every other value quantizes to 0 or ±1
      for (int64_t k = 0; k < cols; ++k) x[k] = g(rng);
      x[pos(rng)] = -1e6f;
      break;
    case RowKind::extremes:  // ±FLT_MAX and values across the range
      for (int64_t k = 0; k < cols; ++k)
        x[k] = (k % 3 == 0 ? kMax : g(rng) * 1e37f) * (k % 2 == 0 ? 1.0f : -1.0f);
      break;
    case RowKind::denormal:  // a denormal scale
      for (int64_t k = 0; k < cols; ++k) x[k] = g(rng) * 1e-40f;
      break;
    case RowKind::all_equal:
      for (int64_t k = 0; k < cols; ++k) x[k] = -0.37f;
      break;
    case RowKind::tiny_max:  // max / 127 underflows to 0: quantized as a zero row
      for (int64_t k = 0; k < cols; ++k) x[k] = k % 2 == 0 ? kDenormMin : -kDenormMin;
      break;
    case RowKind::non_finite:  // scale NaN: a NaN output row
      for (int64_t k = 0; k < cols; ++k) x[k] = g(rng);
      x[pos(rng)] = cols % 2 == 0 ? kNaN : -kInf;
      break;
    case RowKind::kCount: break;
  }
}

// A[rows, cols]: Gaussian rows, with every 5th row (from `phase`) an adversarial kind;
// non-finite rows only with `non_finite` (activations).
std::vector<float> matrix(int64_t rows, int64_t cols, int phase, std::mt19937& rng, bool non_finite = false) {
  std::vector<float> x(size_t(rows * cols));
  int special = phase;
  const int kinds = int(RowKind::kCount) - (non_finite ? 1 : 2);  // excluding gaussian
  for (int64_t r = 0; r < rows; ++r) {
    RowKind kind = RowKind::gaussian;
    if ((r + phase) % 5 == 0) kind = RowKind(1 + special++ % kinds);
    fill_row(kind, x.data() + r * cols, cols, rng);
  }
  return x;
}

constexpr uint32_t kGuardBits = 0x7fc0dead;
constexpr int64_t kYPad = 3;  // guard columns right of each output row

// The AVX2 kernel's output (rows N + kYPad apart; the guard columns and a guard row after
// the output are checked untouched) for A against the packed weight.
std::vector<float> run_avx2(const std::vector<float>& a, int64_t m, const s8::PackedWeightS8& w,
                            const gemm::Epilogue* e, ThreadPool* pool) {
  const int64_t ldy = w.n + kYPad;
  std::vector<float> y(size_t((m + 1) * ldy));
  for (float& v : y) std::memcpy(&v, &kGuardBits, 4);
  REQUIRE(s8::gemm_s8_avx2(a.data(), m, w.k, w, y.data(), ldy, e, pool).ok());
  for (int64_t i = 0; i <= m; ++i)
    for (int64_t j = i < m ? w.n : 0; j < ldy; ++j) REQUIRE(bits(y[size_t(i * ldy + j)]) == kGuardBits);
  std::vector<float> out(size_t(m * w.n));
  for (int64_t i = 0; i < m; ++i) std::memcpy(out.data() + i * w.n, y.data() + i * ldy, size_t(w.n) * 4);
  return out;
}

// The reference: quantize A, the scalar product, then the AVX2 epilogue over all of Y.
std::vector<float> run_reference(const std::vector<float>& a, int64_t m, const s8::QuantizedWeight& w,
                                 const gemm::Epilogue* e) {
  std::vector<int8_t> qa(size_t(m * w.k));
  std::vector<float> sa(static_cast<size_t>(m));
  s8::quantize_rows_reference(a.data(), m, w.k, w.k, qa.data(), w.k, sa.data());
  std::vector<float> y(size_t(m * w.n));
  s8::gemm_s8_reference(qa.data(), w.k, sa.data(), m, w, y.data(), w.n);
  if (e != nullptr && m > 0 && w.n > 0) gemm::gemm_epilogue_f32_avx2(y.data(), w.n, m, w.n, *e);
  return y;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// The first element where a and b differ in bits, for the failure message.
std::string first_difference(const std::vector<float>& a, const std::vector<float>& b, int64_t n) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (bits(a[i]) != bits(b[i]))
      return "y[" + std::to_string(int64_t(i) / n) + ", " + std::to_string(int64_t(i) % n) +
             "]: " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
  return a.size() == b.size() ? "none" : "sizes differ";
}

constexpr int64_t kSizes[] = {1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 64, 65, 255, 257};

}  // namespace

TEST_CASE("cpu int8: round half to even") {
  CHECK(s8::round_half_even(0.5f) == 0.0f);
  CHECK(s8::round_half_even(1.5f) == 2.0f);
  CHECK(s8::round_half_even(2.5f) == 2.0f);
  CHECK(s8::round_half_even(-0.5f) == 0.0f);
  CHECK(s8::round_half_even(-1.5f) == -2.0f);
  CHECK(s8::round_half_even(-2.5f) == -2.0f);
  CHECK(s8::round_half_even(126.5f) == 126.0f);
  CHECK(s8::round_half_even(-125.5f) == -126.0f);
  CHECK(s8::round_half_even(std::nextafter(0.5f, 1.0f)) == 1.0f);
  CHECK(s8::round_half_even(std::nextafter(2.5f, 0.0f)) == 2.0f);
  CHECK(s8::round_half_even(std::nextafter(-2.5f, -3.0f)) == -3.0f);
  CHECK(s8::round_half_even(3.0f) == 3.0f);
}

TEST_CASE("cpu int8: row quantization (half-way values, clamping, zero / non-finite / denormal rows)") {
  // scale 1: x / scale is x itself, so the .5 values round to even.
  const std::vector<float> halves{127.0f, 63.5f, -63.5f, 0.5f, 1.5f, -126.5f, 2.5f, -0.5f, 64.5f};
  std::vector<int8_t> q;
  std::vector<float> scale;
  quantize_both(halves, 1, int64_t(halves.size()), &q, &scale);
  CHECK(scale[0] == 1.0f);
  CHECK(q == std::vector<int8_t>{127, 64, -64, 0, 2, -126, 2, 0, 64});

  // Maxima whose x / scale lands just above 127 clamp to ±127; nothing leaves [-127, 127].
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(1e-30f, 1e30f);
  std::vector<float> pm;
  const int64_t rows = 4096;
  for (int64_t r = 0; r < rows; ++r) {
    const float v = r < 8 ? float(r + 1) * 0.1f : u(rng);
    pm.insert(pm.end(), {v, -v, v * 0.5f});
  }
  quantize_both(pm, rows, 3, &q, &scale);
  for (int64_t r = 0; r < rows; ++r) {
    CAPTURE(pm[size_t(3 * r)]);
    CHECK(q[size_t(3 * r)] == 127);
    CHECK(q[size_t(3 * r + 1)] == -127);
    CHECK(std::abs(int(q[size_t(3 * r + 2)])) <= 64);
  }

  // A zero row, an infinity, a NaN, a maximum that underflows when divided by 127, and a
  // denormal maximum that does not.
  const int64_t cols = 11;
  std::vector<float> special(size_t(5 * cols), 0.0f);
  special[size_t(1 * cols + 3)] = -kInf;
  special[size_t(2 * cols + 10)] = kNaN;
  special[size_t(3 * cols + 0)] = 60 * kDenormMin;
  special[size_t(3 * cols + 1)] = -kDenormMin;
  for (int64_t k = 0; k < cols; ++k) special[size_t(4 * cols + k)] = float(k) * 1e-39f;
  quantize_both(special, 5, cols, &q, &scale);
  CHECK(scale[0] == 0.0f);
  CHECK(std::isnan(scale[1]));
  CHECK(std::isnan(scale[2]));
  CHECK(scale[3] == 0.0f);  // 60 denorm_min / 127 rounds to 0
  CHECK(scale[4] > 0.0f);
  CHECK(q[size_t(4 * cols + 10)] == 127);
  for (int r = 0; r < 4; ++r)
    for (int64_t k = 0; k < cols; ++k) CHECK(q[size_t(r * cols + k)] == 0);

  // Adversarial rows of every length around the vector width.
  for (int64_t len : kSizes) {
    CAPTURE(len);
    const std::vector<float> x = matrix(16, len, int(len % 5), rng);
    quantize_both(x, 16, len, &q, &scale);
  }
}

TEST_CASE("cpu int8: weight quantization and argument errors") {
  const std::vector<float> w{1.0f, 2.0f, kInf, 4.0f};
  auto bad = ops::s8::quantize_weight(w.data(), DType::f32, ops::LinearWeight::nk, 2, 2);
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("[1, 0]") != std::string::npos);
  auto too_long = ops::s8::quantize_weight(w.data(), DType::f32, ops::LinearWeight::nk, 0, s8::kMaxK + 1);
  REQUIRE(!too_long.ok());
  CHECK(too_long.status().message().find("exceeds") != std::string::npos);
  CHECK(s8::kMaxK == 133144);

  auto ok = ops::s8::quantize_weight(w.data(), DType::f32, ops::LinearWeight::nk, 1, 2);
  REQUIRE(ok.ok());
  auto packed_ok = s8::pack_weight_s8x16(*ok);
  REQUIRE(packed_ok.ok());
  s8::PackedWeightS8 p = *packed_ok;
  std::vector<float> a{1.0f, 1.0f}, y(4);
  if (has_avx2()) {
    CHECK(!s8::gemm_s8_avx2(a.data(), 1, 1, p, y.data(), 1, nullptr, nullptr).ok());  // lda < K
    s8::PackedWeightS8 broken = p;
    broken.data.pop_back();
    CHECK(!s8::gemm_s8_avx2(a.data(), 1, 2, broken, y.data(), 1, nullptr, nullptr).ok());
    CHECK(s8::gemm_s8_avx2(a.data(), 1, 2, p, y.data(), 1, nullptr, nullptr).ok());
    // A's row [1, 1] quantizes to [127, 127] with scale 1/127.
    CHECK(ok->q[1] == 127);
    CHECK(y[0] == float(127 * (ok->q[0] + ok->q[1])) * ((1.0f / 127.0f) * ok->scale[0]));
    // C's row stride shorter than N.
    std::vector<float> c(4, 0.0f);
    gemm::Epilogue e{1.0f, 1.0f, nullptr, c.data(), 0, Activation::none};
    CHECK(!s8::gemm_s8_avx2(a.data(), 1, 2, p, y.data(), 1, &e, nullptr).ok());
  }
  s8::QuantizedWeight torn = *ok;
  torn.q.pop_back();
  CHECK(!s8::pack_weight_s8x16(torn).ok());

  // K = 0: every sum is empty, so y is the epilogue of 0 (here the bias).
  auto empty = ops::s8::quantize_weight(w.data(), DType::f32, ops::LinearWeight::nk, 3, 0);
  REQUIRE(empty.ok());
  auto packed_empty = s8::pack_weight_s8x16(*empty);
  REQUIRE(packed_empty.ok());
  const std::vector<float> bias{1.0f, -2.0f, 3.0f};
  if (has_avx2()) {
    std::vector<float> y0(6, kNaN);
    gemm::Epilogue e{1.0f, 0.0f, bias.data(), nullptr, 0, Activation::none};
    REQUIRE(s8::gemm_s8_avx2(a.data(), 2, 0, *packed_empty, y0.data(), 3, &e, nullptr).ok());
    CHECK(y0 == std::vector<float>{1.0f, -2.0f, 3.0f, 1.0f, -2.0f, 3.0f});
    // A row holding an infinity or a NaN gives a NaN output row; the other rows are finite.
    const std::vector<float> a3{1.0f, kInf, 0.5f, 0.25f, kNaN, 2.0f};
    std::vector<float> y3(3);
    REQUIRE(s8::gemm_s8_avx2(a3.data(), 3, 2, p, y3.data(), 1, nullptr, nullptr).ok());
    CHECK(std::isnan(y3[0]));
    CHECK(std::isfinite(y3[1]));
    CHECK(std::isnan(y3[2]));
  }
}

TEST_CASE("cpu int8: AVX2 kernel equals the scalar reference bit for bit (shapes, rows, epilogues)") {
  if (!has_avx2()) return;
  std::mt19937 rng(1234);
  std::normal_distribution<float> g(0.0f, 1.0f);
  int combo = 0;
  for (int64_t K : kSizes)
    for (int64_t N : kSizes) {
      const std::vector<float> wf = matrix(N, K, int(N + K) % 5, rng);
      auto qw = ops::s8::quantize_weight(wf.data(), DType::f32, ops::LinearWeight::nk, N, K);
      REQUIRE(qw.ok());
      auto packed_r = s8::pack_weight_s8x16(*qw);
      REQUIRE(packed_r.ok());
      const s8::PackedWeightS8& packed = *packed_r;
      std::vector<float> bias(static_cast<size_t>(N));
      for (float& v : bias) v = g(rng);
      for (int64_t M : kSizes) {
        // Every (N, K) with M 1, 7, 17 and 65; the larger M with the smaller N and K.
        if (M != 1 && M != 7 && M != 17 && M != 65 && N * K > 64 * 64) continue;
        const EpilogueCase& ec = kEpilogues[combo++ % std::size(kEpilogues)];
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        CAPTURE(ec.name);
        const std::vector<float> a = matrix(M, K, int(M) % 5, rng, true);
        std::vector<float> c(size_t(M * N));
        for (float& v : c) v = g(rng);
        const gemm::Epilogue e = ec.make(bias.data(), c.data(), N);
        const gemm::Epilogue* ep = std::string(ec.name) == "none" ? nullptr : &e;
        const std::vector<float> want = run_reference(a, M, *qw, ep);
        const std::vector<float> got = run_avx2(a, M, packed, ep, nullptr);
        INFO(first_difference(got, want, N));
        CHECK(bitwise_equal(got, want));
      }
    }
}

TEST_CASE("cpu int8: results are bitwise the same on 1, 2 and 3 threads") {
  if (!has_avx2()) return;
  auto two = pool_of(2), three = pool_of(3);
  std::mt19937 rng(99);
  struct Shape {
    int64_t m, n, k;
  };
  for (const Shape s : {Shape{257, 257, 255}, Shape{65, 1000, 33}, Shape{7, 2048, 64}, Shape{1000, 17, 31}}) {
    CAPTURE(s.m);
    CAPTURE(s.n);
    CAPTURE(s.k);
    const std::vector<float> wf = matrix(s.n, s.k, 1, rng), a = matrix(s.m, s.k, 2, rng);
    auto qw = ops::s8::quantize_weight(wf.data(), DType::f32, ops::LinearWeight::nk, s.n, s.k);
    REQUIRE(qw.ok());
    auto packed_r = s8::pack_weight_s8x16(*qw);
    REQUIRE(packed_r.ok());
    const s8::PackedWeightS8& packed = *packed_r;
    std::vector<float> bias(static_cast<size_t>(s.n), 0.25f);
    gemm::Epilogue e{1.0f, 0.0f, bias.data(), nullptr, 0, Activation::gelu};
    const std::vector<float> one = run_avx2(a, s.m, packed, &e, nullptr);
    CHECK(bitwise_equal(one, run_avx2(a, s.m, packed, &e, two.get())));
    CHECK(bitwise_equal(one, run_avx2(a, s.m, packed, &e, three.get())));
    CHECK(bitwise_equal(one, run_reference(a, s.m, *qw, &e)));
  }
}

// The format's error on Gaussian data (A[128, K], W[256, K], unit normal) against the product
// of the unquantized f32 inputs accumulated in double: ||y_int8 - y|| / ||y||. Each bound is
// the value measured with these seeds rounded up in its third digit: the format's error, not
// a tolerance to widen.
TEST_CASE("cpu int8: normalised error against the f32 product on Gaussian data") {
  struct Bound {
    int64_t k;
    double bound;
  };
  for (const Bound b : {Bound{64, 0.0084}, Bound{512, 0.0106}, Bound{4096, 0.0123}}) {
    std::mt19937 rng(2024);
    std::normal_distribution<float> g(0.0f, 1.0f);
    const int64_t M = 128, N = 256, K = b.k;
    std::vector<float> a(static_cast<size_t>(M * K)), w(static_cast<size_t>(N * K));
    for (float& v : a) v = g(rng);
    for (float& v : w) v = g(rng);
    auto qw = ops::s8::quantize_weight(w.data(), DType::f32, ops::LinearWeight::nk, N, K);
    REQUIRE(qw.ok());
    const std::vector<float> y8 = run_reference(a, M, *qw, nullptr);
    double err2 = 0, ref2 = 0;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double ref = 0;
        for (int64_t k = 0; k < K; ++k) ref += double(a[size_t(i * K + k)]) * double(w[size_t(j * K + k)]);
        const double d = double(y8[size_t(i * N + j)]) - ref;
        err2 += d * d;
        ref2 += ref * ref;
      }
    const double rel = std::sqrt(err2 / ref2);
    MESSAGE("int8 normalised error on Gaussian data, K " << K << ": " << rel);
    CHECK(rel <= b.bound);
  }
}

TEST_CASE("int8 weight quantization: [K, N] per column and f16/bf16 weights equal widened [N, K] rows") {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto [n, k] : {std::pair<int64_t, int64_t>{1, 1}, {3, 17}, {17, 3}, {33, 64}}) {
    CAPTURE(n);
    CAPTURE(k);
    std::vector<float> nk(size_t(n * k)), kn(size_t(n * k)), widened_bf16(size_t(n * k));
    std::vector<uint16_t> bf(size_t(n * k)), hf(size_t(n * k));
    std::vector<float> widened_f16(size_t(n * k));
    for (int64_t c = 0; c < n; ++c)
      for (int64_t j = 0; j < k; ++j) {
        const float v = normal(rng) * float(1 + c % 3);
        nk[size_t(c * k + j)] = kn[size_t(j * n + c)] = v;
        bf[size_t(c * k + j)] = f32_to_bf16(v);
        hf[size_t(c * k + j)] = f32_to_f16(v);
        widened_bf16[size_t(c * k + j)] = bf16_to_f32(bf[size_t(c * k + j)]);
        widened_f16[size_t(c * k + j)] = f16_to_f32(hf[size_t(c * k + j)]);
      }
    auto same = [&](const Result<ops::s8::QuantizedWeight>& a, const Result<ops::s8::QuantizedWeight>& b) {
      REQUIRE(a.ok());
      REQUIRE(b.ok());
      CHECK(a->n == b->n);
      CHECK(a->k == b->k);
      CHECK(a->q == b->q);
      CHECK(std::memcmp(a->scale.data(), b->scale.data(), a->scale.size() * sizeof(float)) == 0);
    };
    const auto rows = ops::s8::quantize_weight(nk.data(), DType::f32, ops::LinearWeight::nk, n, k);
    same(ops::s8::quantize_weight(kn.data(), DType::f32, ops::LinearWeight::kn, n, k), rows);
    same(ops::s8::quantize_weight(bf.data(), DType::bf16, ops::LinearWeight::nk, n, k),
         ops::s8::quantize_weight(widened_bf16.data(), DType::f32, ops::LinearWeight::nk, n, k));
    same(ops::s8::quantize_weight(hf.data(), DType::f16, ops::LinearWeight::nk, n, k),
         ops::s8::quantize_weight(widened_f16.data(), DType::f32, ops::LinearWeight::nk, n, k));
  }
  // A non-finite element of a [K, N] weight is named by its index in the stored tensor.
  std::vector<float> kn{1.0f, 2.0f, 3.0f, kNaN, 5.0f, 6.0f};  // [K 2, N 3]
  auto bad = ops::s8::quantize_weight(kn.data(), DType::f32, ops::LinearWeight::kn, 3, 2);
  REQUIRE(!bad.ok());
  CHECK_MESSAGE(bad.status().message().find("element [1, 0]") != std::string::npos, bad.status().to_string());
  CHECK(!ops::s8::quantize_weight(kn.data(), DType::i32, ops::LinearWeight::nk, 3, 2).ok());
  CHECK(!ops::s8::quantize_weight(kn.data(), DType::f32, ops::LinearWeight::none, 3, 2).ok());
}

TEST_CASE("cpu int8: the quantized A goes into the caller's scratch when it fits") {
  if (!has_avx2()) return;
  std::mt19937 rng(5);
  const int64_t m = 13, n = 33, k = 17;
  const std::vector<float> wf = matrix(n, k, 1, rng), a = matrix(m, k, 2, rng, true);
  auto qw = ops::s8::quantize_weight(wf.data(), DType::f32, ops::LinearWeight::nk, n, k);
  REQUIRE(qw.ok());
  auto packed = s8::pack_weight_s8x16(*qw);
  REQUIRE(packed.ok());
  auto need = s8::gemm_s8_scratch_bytes(m, k);
  REQUIRE(need.ok());
  // 13 rows of round_up(17, 8) = 24 int16 (624 bytes, then to 640), then 13 float scales.
  CHECK(*need == 640 + 13 * 4);
  CHECK(!s8::gemm_s8_scratch_bytes(-1, k).ok());
  CHECK(!s8::gemm_s8_scratch_bytes(m, s8::kMaxK + 1).ok());
  CHECK(!s8::gemm_s8_scratch_bytes(int64_t(1) << 62, k).ok());
  const std::vector<float> want = run_reference(a, m, *qw, nullptr);
  for (const int64_t bytes : {*need, *need - 1}) {
    CAPTURE(bytes);
    std::vector<float> scratch(size_t(bytes / 4 + 1), kNaN);  // float-aligned bytes
    const std::vector<float> before = scratch;
    std::vector<float> y(size_t(m * n));
    REQUIRE(
        s8::gemm_s8_avx2(a.data(), m, k, *packed, y.data(), n, nullptr, nullptr, scratch.data(), bytes).ok());
    CHECK(bitwise_equal(y, want));
    // Used when large enough; otherwise left alone (the call allocates its own).
    CHECK(bitwise_equal(scratch, before) == (bytes < *need));
  }
}

TEST_CASE("cpu int8: the AVX2 weight packing equals quantize_weight then pack_weight_s8x16 byte for byte") {
  if (!has_avx2()) return;
  auto three = pool_of(3);
  std::mt19937 rng(31);
  // A weight value representable in `dtype` and finite there (the stored weight's values).
  auto stored = [](float v, DType dtype) -> uint16_t {
    const uint16_t h = dtype == DType::f16 ? f32_to_f16(v) : f32_to_bf16(v);
    const float back = dtype == DType::f16 ? f16_to_f32(h) : bf16_to_f32(h);
    if (std::isfinite(back)) return h;
    return uint16_t((std::signbit(v) ? 0x8000 : 0) | (dtype == DType::f16 ? 0x7bff : 0x7f7f));  // ±max
  };
  auto same = [](const s8::PackedWeightS8& a, const s8::PackedWeightS8& b) {
    return a.n == b.n && a.k == b.k && a.k_pairs == b.k_pairs && a.panels == b.panels && a.data == b.data &&
           a.scale.size() == b.scale.size() &&
           std::memcmp(a.scale.data(), b.scale.data(), a.scale.size() * sizeof(float)) == 0;
  };
  struct Shape {
    int64_t n, k;
  };
  std::vector<Shape> shapes;
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 33, 40})
    for (int64_t k : {1, 2, 7, 8, 9, 15, 16, 17, 33, 255}) shapes.push_back({n, k});
  shapes.push_back({2000, 33});  // several chunks of panels on the pool
  shapes.push_back({515, 257});
  for (const Shape sh : shapes) {
    const std::vector<float> nk = matrix(sh.n, sh.k, int(sh.n + sh.k) % 5, rng);  // [n, k], adversarial rows
    for (const ops::LinearWeight layout : {ops::LinearWeight::nk, ops::LinearWeight::kn})
      for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
        CAPTURE(sh.n);
        CAPTURE(sh.k);
        CAPTURE(int(layout));
        CAPTURE(dtype_name(dtype));
        std::vector<float> f(size_t(sh.n * sh.k));
        std::vector<uint16_t> h(f.size());
        for (int64_t c = 0; c < sh.n; ++c)
          for (int64_t j = 0; j < sh.k; ++j) {
            const size_t at = size_t(layout == ops::LinearWeight::nk ? c * sh.k + j : j * sh.n + c);
            f[at] = nk[size_t(c * sh.k + j)];
            if (dtype != DType::f32) h[at] = stored(f[at], dtype);
          }
        const void* w = dtype == DType::f32 ? static_cast<const void*>(f.data()) : h.data();
        auto q = ops::s8::quantize_weight(w, dtype, layout, sh.n, sh.k);
        REQUIRE(q.ok());
        auto want = s8::pack_weight_s8x16(*q);
        REQUIRE(want.ok());
        auto one = s8::quantize_pack_weight_avx2(w, dtype, layout, sh.n, sh.k, nullptr);
        auto many = s8::quantize_pack_weight_avx2(w, dtype, layout, sh.n, sh.k, three.get());
        REQUIRE(one.ok());
        REQUIRE(many.ok());
        CHECK(same(*one, *want));
        CHECK(same(*many, *want));
      }
  }
  // Errors are quantize_weight's: a non-finite element named by its stored index, a bad shape.
  std::vector<float> kn(size_t(40 * 70), 0.5f);  // [K 40, N 70]
  kn[size_t(37 * 70 + 66)] = kNaN;
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), three.get()}) {
    auto bad = s8::quantize_pack_weight_avx2(kn.data(), DType::f32, ops::LinearWeight::kn, 70, 40, pool);
    REQUIRE(!bad.ok());
    CHECK_MESSAGE(bad.status().message().find("element [37, 66]") != std::string::npos,
                  bad.status().to_string());
  }
  CHECK(
      !s8::quantize_pack_weight_avx2(kn.data(), DType::f32, ops::LinearWeight::nk, 1, s8::kMaxK + 1, nullptr)
           .ok());
  CHECK(!s8::quantize_pack_weight_avx2(kn.data(), DType::i32, ops::LinearWeight::nk, 2, 2, nullptr).ok());
  CHECK(!s8::quantize_pack_weight_avx2(kn.data(), DType::f32, ops::LinearWeight::none, 2, 2, nullptr).ok());
  auto empty = s8::quantize_pack_weight_avx2(kn.data(), DType::f32, ops::LinearWeight::nk, 3, 0, nullptr);
  REQUIRE(empty.ok());
  CHECK(empty->panels == 1);
  CHECK(empty->data.empty());
}
