// The cpu backend's dct / idct / spectral_filter kernels (backends/cpu/dct.h) against the
// reference kernels (direct O(N^2) sums in double): lengths 1..4096 including odd and prime
// ones, first / middle / last axis, column counts around the vector and pair widths,
// keep / n variants, both filter routes, every ISA level this machine has, bitwise equality
// of 1 vs 2 threads and of the prepared vs unprepared paths, guard bytes, and no leaking of
// Inf / NaN into the partner column of a pair.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/dct.h"
#include "longrun/graph.h"
#include "longrun/thread_pool.h"
#include "support/scoped_override.h"

namespace longrun {
namespace {

constexpr float kGuard = 12345.0f;
constexpr int kGuardCount = 16;

struct IsaKernels {
  cpu::Isa isa;
  KernelFn dct, idct, filter;
};
const IsaKernels kIsas[] = {
    {cpu::Isa::avx2, cpu::cpu_dct_f32_avx2, cpu::cpu_idct_f32_avx2, cpu::cpu_spectral_filter_f32_avx2},
    {cpu::Isa::avx512, cpu::cpu_dct_f32_avx512, cpu::cpu_idct_f32_avx512,
     cpu::cpu_spectral_filter_f32_avx512},
};

KernelFn kernel_of(const IsaKernels& k, OpKind op) {
  return op == OpKind::dct ? k.dct : op == OpKind::idct ? k.idct : k.filter;
}
KernelFn reference_of(OpKind op) {
  return op == OpKind::dct ? reference_dct : op == OpKind::idct ? reference_idct : reference_spectral_filter;
}

std::vector<float> random_data(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = dist(rng);
  return v;
}

// Runs `fn` on x and returns the output; checks the guard elements after it.
std::vector<float> run(KernelFn fn, OpKind op, const OpAttrs& attrs, const TensorDesc& in,
                       const std::vector<float>& x, ThreadPool* pool, const void* prepared = nullptr) {
  std::vector<TensorDesc> outs;
  const Status inferred = infer_op(op, attrs, std::span<const TensorDesc>(&in, 1), &outs);
  REQUIRE_MESSAGE(inferred.ok(), inferred.to_string());
  std::vector<float> y(size_t(outs[0].numel() + kGuardCount), kGuard);
  const TensorView iv{in, const_cast<float*>(x.data())};
  const TensorView ov{outs[0], y.data()};
  KernelArgs args;
  args.attrs = &attrs;
  args.inputs = std::span<const TensorView>(&iv, 1);
  args.outputs = std::span<const TensorView>(&ov, 1);
  args.pool = pool;
  args.prepared = prepared;
  const Status s = fn(args);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  for (int i = 0; i < kGuardCount; ++i) REQUIRE(y[y.size() - 1 - size_t(i)] == kGuard);
  y.resize(size_t(outs[0].numel()));
  return y;
}

// The conformance measures (tests/conformance/run_case.cpp): normalised error and the
// largest |a - e| / max(1, |e|). The norm is taken relative to the larger of |want| and the
// input's scale |x| sqrt(out/in): the transforms are orthonormal (the filter scales by
// ~sqrt(N/M)), so a correct f32 kernel's error follows |x|, and a single cancelling output
// (keep = 1 of random data) would otherwise turn its ~eps |x| rounding into a large ratio.
struct Errors {
  double norm = 0, elem = 0;
};
Errors errors(const std::vector<float>& got, const std::vector<float>& want, const std::vector<float>& x) {
  double d2 = 0, b2 = 0, x2 = 0, elem = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = double(got[i]) - double(want[i]);
    d2 += d * d;
    b2 += double(want[i]) * double(want[i]);
    elem = std::max(elem, std::fabs(d) / std::max(1.0, std::fabs(double(want[i]))));
  }
  for (float v : x) x2 += double(v) * double(v);
  if (!x.empty()) b2 = std::max(b2, x2 * double(got.size()) / double(x.size()));
  return {b2 > 0 ? std::sqrt(d2 / b2) : std::sqrt(d2), elem};
}

Errors g_worst;  // over the whole file, reported by the last test case

bool has(cpu::Isa isa) { return int(cpu::detect_isa()) >= int(isa); }

std::unique_ptr<ThreadPool> two_threads() {
  auto p = make_thread_pool(2);
  REQUIRE(p.ok());
  return std::move(p).value();
}

// One case: reference once, then every ISA with 1 and 2 threads (and the prepared path
// with 2 threads), all within tolerance and the thread variants bitwise equal.
void check_case(OpKind op, const OpAttrs& attrs, std::vector<int64_t> dims, uint32_t seed = 1) {
  const TensorDesc in(DType::f32, dims);
  const auto x = random_data(in.numel(), seed);
  const auto want = run(reference_of(op), op, attrs, in, x, nullptr);
  auto pool = two_threads();
  std::string what = std::string(op_name(op)) + " " + in.to_string();
  for (const IsaKernels& k : kIsas) {
    if (!has(k.isa)) continue;
    CAPTURE(what);
    CAPTURE(cpu::isa_name(k.isa));
    const KernelFn fn = kernel_of(k, op);
    const auto one = run(fn, op, attrs, in, x, nullptr);
    const auto two = run(fn, op, attrs, in, x, pool.get());
    const Errors e = errors(one, want, x);
    g_worst.norm = std::max(g_worst.norm, e.norm);
    g_worst.elem = std::max(g_worst.elem, e.elem);
    CHECK(e.norm <= 1e-5);
    CHECK(e.elem <= 1e-4);
    CHECK(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0);
  }
}

const int64_t kLengths[] = {1, 2, 3, 4, 5, 7, 8, 13, 16, 97, 127, 128, 255, 256, 1000, 4096};
const int64_t kColumns[] = {1, 2, 3, 15, 16, 17, 64};

// Column counts per length: all for short transforms, fewer where the O(N^2) reference is slow.
std::vector<int64_t> columns_for(int64_t n) {
  if (n <= 256) return {std::begin(kColumns), std::end(kColumns)};
  if (n <= 1000) return {1, 3, 17};
  return {1, 3};
}

TEST_CASE("cpu_dct: dct along first, middle and last axis") {
  for (int64_t n : kLengths)
    for (int64_t d : columns_for(n)) {
      check_case(OpKind::dct, DctAttrs{.axis = 0}, {n, d});
      if (n <= 1000) check_case(OpKind::dct, DctAttrs{.axis = 1}, {2, n, d});
      if (n <= 1000 || d == 1) check_case(OpKind::dct, DctAttrs{.axis = -1}, {d, n});
    }
}

TEST_CASE("cpu_dct: dct keep") {
  for (int64_t n : {1, 5, 13, 128, 255, 1000})
    for (int64_t keep : {int64_t(1), (n + 1) / 2, n})
      for (int64_t d : {1, 3, 17}) {
        check_case(OpKind::dct, DctAttrs{.axis = 0, .keep = keep}, {n, d});
        check_case(OpKind::dct, DctAttrs{.axis = -1, .keep = keep}, {d, n});
      }
  check_case(OpKind::dct, DctAttrs{.axis = -1, .keep = 64}, {2, 4096});
}

TEST_CASE("cpu_dct: idct along first, middle and last axis") {
  for (int64_t n : kLengths)
    for (int64_t d : columns_for(n)) {
      check_case(OpKind::idct, IdctAttrs{.axis = 0}, {n, d});
      if (n <= 1000) check_case(OpKind::idct, IdctAttrs{.axis = 1}, {2, n, d});
      if (n <= 1000 || d == 1) check_case(OpKind::idct, IdctAttrs{.axis = -1}, {d, n});
    }
}

TEST_CASE("cpu_dct: idct zero-pads and truncates to n") {
  for (int64_t len : {1, 5, 13, 64, 97})
    for (int64_t n : {int64_t(1), len > 1 ? len - 1 : 1, len, len + 3, 2 * len + 1})
      for (int64_t d : {1, 2, 17}) {
        check_case(OpKind::idct, IdctAttrs{.axis = 0, .n = n}, {len, d});
        check_case(OpKind::idct, IdctAttrs{.axis = -1, .n = n}, {d, len});
      }
  check_case(OpKind::idct, IdctAttrs{.axis = -1, .n = 4096}, {2, 64});
  check_case(OpKind::idct, IdctAttrs{.axis = 0, .n = 7}, {0, 3});  // empty input: zeros
}

TEST_CASE("cpu_dct: spectral_filter, both routes") {
  for (int64_t n : kLengths) {
    const int64_t r02 = std::max<int64_t>(1, int64_t(std::ceil(double(n) * 0.2)));
    // keep >= n (all, or capped) only where the O(n^2) reference is quick.
    const std::vector<int64_t> keeps =
        n < 1000 ? std::vector<int64_t>{1, r02, n, n + 5} : std::vector<int64_t>{1, r02};
    for (int64_t keep : keeps)
      for (auto method : {SpectralMethod::automatic, SpectralMethod::fft, SpectralMethod::matrix}) {
        if (n >= 1000 && method == SpectralMethod::matrix && keep > 1) continue;  // slow to build
        const SpectralFilterAttrs a{.axis = -2, .keep = keep, .method = method};
        for (int64_t d : n <= 256 ? std::vector<int64_t>{1, 3, 16, 17} : std::vector<int64_t>{3}) {
          check_case(OpKind::spectral_filter, a, {n, d});
          if (n <= 256) check_case(OpKind::spectral_filter, a, {2, n, d});
        }
        if (n <= 1000)
          check_case(OpKind::spectral_filter, SpectralFilterAttrs{.axis = -1, .keep = keep, .method = method},
                     {5, n});
      }
  }
}

// Wide blocks: several FFT sub-blocks per block, remainder sub-blocks and tail blocks, with
// few outputs (or inputs) so that the O(N^2) reference stays cheap.
TEST_CASE("cpu_dct: many columns, several sub-blocks per block") {
  check_case(OpKind::dct, DctAttrs{.axis = 0, .keep = 9}, {1000, 201});
  check_case(OpKind::dct, DctAttrs{.axis = 1, .keep = 3}, {2, 4096, 130});
  check_case(OpKind::idct, IdctAttrs{.axis = 0, .n = 1000}, {9, 201});
  check_case(OpKind::idct, IdctAttrs{.axis = -2, .n = 4096}, {2, 3, 130});
  check_case(OpKind::spectral_filter,
             SpectralFilterAttrs{.axis = 0, .keep = 7, .method = SpectralMethod::fft}, {1000, 201});
  check_case(OpKind::spectral_filter,
             SpectralFilterAttrs{.axis = 1, .keep = 5, .method = SpectralMethod::fft}, {2, 4096, 130});
  // Axis last: contiguous lines, many of them.
  check_case(OpKind::dct, DctAttrs{.axis = -1, .keep = 5}, {201, 1000});
  check_case(OpKind::idct, IdctAttrs{.axis = -1, .n = 1000}, {201, 9});
  check_case(OpKind::spectral_filter,
             SpectralFilterAttrs{.axis = -1, .keep = 5, .method = SpectralMethod::fft}, {130, 4096});
}

// The column route (power-of-two lengths >= 16, at least 16 columns per outer index): radix-4
// and radix-2 last passes (log2(n/2) even and odd), blocks of 64 / 32 / 16 columns with
// partial vectors in the tail block, keep below and above n/2, zero-padded and truncated
// inverses, several outer indices, lengths with and without the separate copy pass.
TEST_CASE("cpu_dct: column route, power-of-two lengths") {
  // 32 and 256 (and 2048 below): the DCT-II's last radix-2 pass folded into its post pass.
  for (int64_t n : {16, 32, 64, 128, 256, 512})
    for (int64_t d : {16, 23, 40, 100, 129}) {
      check_case(OpKind::dct, DctAttrs{.axis = 0}, {n, d});
      check_case(OpKind::idct, IdctAttrs{.axis = 0}, {n, d});
    }
  for (int64_t n : {32, 256})
    for (int64_t keep : {int64_t(1), n / 2 - 1, n / 2, n / 2 + 1, n - 3}) {
      check_case(OpKind::dct, DctAttrs{.axis = 1, .keep = keep}, {3, n, 37});
      check_case(OpKind::idct, IdctAttrs{.axis = 1, .n = n}, {3, keep, 37});  // zero-padded
    }
  check_case(OpKind::idct, IdctAttrs{.axis = 0, .n = 32}, {64, 20});  // truncated
  check_case(OpKind::dct, DctAttrs{.axis = 0, .keep = 40}, {2048, 65});
  check_case(OpKind::idct, IdctAttrs{.axis = 0, .n = 8192}, {40, 33});
  check_case(OpKind::dct, DctAttrs{.axis = 0, .keep = 20}, {8192, 33});
  // The n = 8192 cases above (33 columns: 40 lanes) take the separate gather / scatter pass
  // (dct.h, kColumnCopyPassBytes). n = 4096: with the two-step FFT (an L2 that holds
  // its buffer) in 64-column blocks and a 2-column tail; without it in 32-column blocks
  // (column_plan_width) with whole-buffer passes, while the filter's forward half keeps 64
  // columns and the gather pass.
  for (const int64_t l2 : {int64_t(0), int64_t(1) << 30}) {
    test_support::ScopedOverride<int64_t> scoped(cpu::dct_detail::column_two_step_l2_bytes(), l2);
    CAPTURE(l2);
    REQUIRE(cpu::dct_detail::column_two_step(4096) == (l2 > 0));
    REQUIRE(cpu::dct_detail::column_plan_width(4096) == (l2 > 0 ? 64 : 32));
    REQUIRE(cpu::dct_detail::column_plan_width(2048) == 64);
    REQUIRE(cpu::dct_detail::column_plan_width(8192) == 64);
    check_case(OpKind::dct, DctAttrs{.axis = 0, .keep = 24}, {4096, 130});
    // Every output (the two-step post pass walks k in tiles, two_step_post_order), and all
    // but the last n/2 - 3.
    check_case(OpKind::dct, DctAttrs{.axis = 0}, {4096, 66});
    check_case(OpKind::dct, DctAttrs{.axis = 0, .keep = 2051}, {4096, 17});
    check_case(OpKind::idct, IdctAttrs{.axis = 0, .n = 4096}, {30, 130});
    check_case(OpKind::spectral_filter,
               SpectralFilterAttrs{.axis = 0, .keep = 30, .method = SpectralMethod::fft}, {4096, 70});
  }
  // A 1 MiB L2: n = 2048 in 32-column blocks (the 64-column buffers would fill it), shorter
  // and longer lengths in 64; a 32-column block, a 32-column one and a 6-column tail. At
  // n = 2048 the DCT-II folds its last FFT pass into the post pass and the DCT-III its first
  // into the pre pass (dct_columns_impl.h).
  {
    test_support::ScopedOverride<int64_t> scoped(cpu::dct_detail::column_two_step_l2_bytes(), int64_t(1)
                                                                                                  << 20);
    REQUIRE(cpu::dct_detail::column_plan_width(1024) == 64);
    REQUIRE(cpu::dct_detail::column_plan_width(2048) == 32);
    REQUIRE(cpu::dct_detail::column_plan_width(4096) == 64);
    REQUIRE(cpu::dct_detail::column_plan_width(8192) == 64);
    check_case(OpKind::dct, DctAttrs{.axis = 0}, {2048, 70});
    check_case(OpKind::idct, IdctAttrs{.axis = 0, .n = 2048}, {2048, 70});
    check_case(OpKind::idct, IdctAttrs{.axis = 0, .n = 2048}, {40, 33});  // zero-padded
  }
  // Only inverse plans whose blocks can take that fold carry its twiddles: n = 2048 (h = 2 *
  // 8^3), not 16384 (h = 2 * 8^4, where even a 16-column block takes the scatter pass), not
  // the forward transform, not n = 1024 (h = 8^3: no radix-2 pass), not n = 256 (h = 2 * 8^2,
  // below h = 1024 where the fold did not pay).
  for (const auto& [inverse, n, has] :
       {std::tuple{true, 2048, true}, std::tuple{true, 16384, false}, std::tuple{false, 2048, false},
        std::tuple{true, 1024, false}, std::tuple{true, 256, false}}) {
    CAPTURE(inverse);
    CAPTURE(n);
    CHECK(cpu::dct_detail::make_column_plan(inverse, n, n, n)->fft_half.empty() == !has);
  }
}

// The prepare step (graph, node, pool) and the plain call give the same bits.
TEST_CASE("cpu_dct: prepared state matches the unprepared path") {
  auto pool = two_threads();
  struct Case {
    OpKind op;
    OpAttrs attrs;
    std::vector<int64_t> dims;
  };
  const Case cases[] = {
      {OpKind::dct, DctAttrs{.axis = 0}, {256, 40}},
      {OpKind::idct, IdctAttrs{.axis = -1, .n = 50}, {6, 37}},
      {OpKind::spectral_filter,
       SpectralFilterAttrs{.axis = -2, .keep = 52, .method = SpectralMethod::fft},
       {2, 256, 33}},
      {OpKind::spectral_filter,
       SpectralFilterAttrs{.axis = -2, .keep = 9, .method = SpectralMethod::matrix},
       {2, 40, 33}},
  };
  for (const Case& c : cases) {
    const TensorDesc in(DType::f32, c.dims);
    GraphBuilder b;
    const ValueId x = b.input("x", in);
    b.output(b.op(c.op, c.attrs, {x}), "y");
    auto graph = b.build();
    REQUIRE(graph.ok());
    const Node& node = graph->nodes()[0];
    auto prep = c.op == OpKind::dct    ? cpu::prepare_dct(*graph, node, pool.get())
                : c.op == OpKind::idct ? cpu::prepare_idct(*graph, node, pool.get())
                                       : cpu::prepare_spectral_filter(*graph, node, pool.get());
    REQUIRE(prep.ok());
    if (c.op == OpKind::spectral_filter)
      CHECK(cpu::spectral_filter_uses_matrix(prep->get()) ==
            (std::get<SpectralFilterAttrs>(c.attrs).method == SpectralMethod::matrix));
    const auto data = random_data(in.numel(), 7);
    for (const IsaKernels& k : kIsas) {
      if (!has(k.isa)) continue;
      const auto a = run(kernel_of(k, c.op), c.op, c.attrs, in, data, pool.get(), prep->get());
      const auto s = run(kernel_of(k, c.op), c.op, c.attrs, in, data, nullptr);
      CHECK(std::memcmp(a.data(), s.data(), a.size() * sizeof(float)) == 0);
    }
  }
}

// Columns are paired inside one complex FFT: an Inf or NaN must not leak into its partner.
// Both layouts: columns of rows (axis 0) and contiguous lines (axis last).
TEST_CASE("cpu_dct: non-finite inputs stay in their own column") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const bool last : {false, true}) {
    const int axis = last ? -1 : 0;
    const std::vector<std::pair<OpKind, OpAttrs>> cases = {
        {OpKind::dct, DctAttrs{.axis = axis}},
        {OpKind::idct, IdctAttrs{.axis = axis}},
        {OpKind::spectral_filter,
         SpectralFilterAttrs{.axis = axis, .keep = 4, .method = SpectralMethod::fft}}};
    for (const auto& [op, attrs] : cases)
      for (int64_t d : {4, 17, 64})
        for (int64_t n : {13, 16, 64}) {  // 16, 64 with 17 or 64 columns: the column route
          const TensorDesc in(DType::f32, last ? std::vector<int64_t>{d, n} : std::vector<int64_t>{n, d});
          auto at = [&](int64_t rows, int64_t r, int64_t col) {
            return size_t(last ? col * rows + r : r * d + col);
          };
          auto x = random_data(in.numel(), 3);
          x[at(n, 5, 0)] = nan;  // column 0 (partner: column 1)
          x[at(n, 2, 3)] = inf;  // column 3 (partner: column 2)
          const auto want = run(reference_of(op), op, attrs, in, x, nullptr);
          for (const IsaKernels& k : kIsas) {
            if (!has(k.isa)) continue;
            CAPTURE(cpu::isa_name(k.isa));
            CAPTURE(last);
            const auto got = run(kernel_of(k, op), op, attrs, in, x, nullptr);
            const int64_t rows = int64_t(got.size()) / d;
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t col = 0; col < d; ++col) {
                const float g = got[at(rows, r, col)], w = want[at(rows, r, col)];
                if (col == 0) {
                  CHECK(std::isnan(g));
                } else if (col == 3) {
                  CHECK(!std::isfinite(g));
                } else {
                  CHECK(std::fabs(g - w) <= 1e-4 * std::max(1.0f, std::fabs(w)));
                }
              }
          }
        }
  }
}

TEST_CASE("cpu_dct: worst error observed (runs last)") {
  MESSAGE("worst normalised error " << g_worst.norm << ", worst element error " << g_worst.elem);
  CHECK(g_worst.norm <= 1e-5);
}

}  // namespace
}  // namespace longrun
