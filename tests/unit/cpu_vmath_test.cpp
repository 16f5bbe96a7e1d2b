// The vector math of backends/cpu/vmath_avx2.h / vmath_avx512.h (exp, tanh, gelu) through the
// cpu elementwise kernels at every ISA level this machine has: the error bounds documented in
// vmath_avx2.h on a sample of all f32 bit patterns, the AVX-512 gelu's table path at its
// interval edges and lane by lane, AVX2 exp_neg against exp, and the AVX-512 exp_neg's own bound.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "unit/cpu_membound_test_util.h"
#include "unit/cpu_vmath_probe.h"

using namespace longrun;
using namespace longrun::membound_tests;

namespace {

// |got - ref| in units of the last place of float(ref) (a normal float).
double ulp_error(float got, double ref) {
  int e = 0;
  std::frexp(std::fabs(float(ref)), &e);
  return std::fabs(double(got) - ref) / std::ldexp(1.0, e - 24);
}

double gelu_ref(double v) { return v * 0.5 * std::erfc(-v / std::sqrt(2.0)); }

}  // namespace

// The bounds stated in vmath_avx2.h, checked on 2^22 inputs spread over all f32 bit patterns
// (the exhaustive run over all 2^32 is too slow for a unit test).
TEST_CASE("cpu membound: vector exp/tanh/gelu error bounds over the whole f32 range") {
  const int64_t n = int64_t(1) << 22;
  In x = make_in(DType::f32, {n});
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = uint32_t(i) * 1024u + uint32_t(i % 1021);
    std::memcpy(x.ptr<float>() + i, &bits, 4);
  }
  struct Fn {
    const char* name;
    double (*ref)(double);
    double max_ulp;
  };
  const Fn fns[] = {
      {"exp", [](double v) { return std::exp(v); }, 1.0},
      {"tanh", [](double v) { return std::tanh(v); }, 1.5},
      {"gelu", gelu_ref, 8.0},
  };
  for_each_level([&](const Level& l) {
    for (const Fn& f : fns) {
      CAPTURE(f.name);
      KernelFn k = std::string(f.name) == "exp" ? l.exp : std::string(f.name) == "tanh" ? l.tanh : l.gelu;
      Out y(x.desc);
      REQUIRE(run(k, ExpAttrs{}, {x}, y, nullptr).ok());
      double worst = 0;
      float worst_x = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float xi = x.ptr<float>()[i];
        const double r = f.ref(double(xi));
        const float got = y.at<float>(i), rf = float(r);
        if (std::isnan(rf) || std::isinf(rf) || std::isnan(got) || std::isinf(got)) {
          CHECK_MESSAGE(((std::isnan(rf) && std::isnan(got)) || rf == got), f.name, "(", xi, ") = ", got);
          continue;
        }
        if (std::fabs(rf) < std::numeric_limits<float>::min()) {  // subnormal results may flush to 0
          CHECK(std::fabs(double(got) - r) <= double(std::numeric_limits<float>::min()));
          continue;
        }
        const double ulps = ulp_error(got, r);
        if (ulps > worst) worst = ulps, worst_x = xi;
      }
      CHECK_MESSAGE(worst <= f.max_ulp, f.name, ": ", worst, " ulp at x = ", worst_x);
    }
  });
}

// The AVX-512 gelu's piecewise polynomial (vmath_avx512.h, vmath_gelu_table.h) on the inputs
// where it could be weakest: both sides of every interval edge and of the clamp, and a dense
// sweep of the table's domain. Then the per-lane fallback: a lane's result must not depend on
// whether its vector also holds a tail lane (x <= -6.9), so that any split of a tensor into
// vectors, by thread or by tile, gives the same bits.
TEST_CASE("cpu membound: AVX-512 gelu table path: error at interval edges, lanes independent") {
  if (!has(cpu::Isa::avx512)) {
    MESSAGE("skipping: no AVX-512 on this machine");
    return;
  }
  const Level& l = kLevels[1];
  REQUIRE(l.isa == cpu::Isa::avx512);
  std::vector<float> xs;
  auto around = [&](float v) {
    float lo = v, hi = v;
    for (int i = 0; i < 64; ++i, lo = std::nextafter(lo, 0.0f), hi = std::nextafter(hi, 100.0f))
      for (float s : {1.0f, -1.0f}) xs.insert(xs.end(), {s * lo, s * hi});
  };
  for (int k = 0; k < 16; ++k) around(std::sqrt(4.0f * float(k) + 3.0f) - 1.0f);  // a (a + 2) = 4k + 2
  around(6.9f);
  for (int i = 0; i < (1 << 20); ++i) xs.push_back(-6.9f + 13.8f * float(i) / float(1 << 20));
  auto gelu = [&](const std::vector<float>& v) {
    In x = make_in(DType::f32, {int64_t(v.size())});
    std::copy(v.begin(), v.end(), x.ptr<float>());
    auto y = std::make_unique<Out>(x.desc);
    REQUIRE(run(l.gelu, GeluAttrs{}, {x}, *y, nullptr).ok());
    return y;
  };
  const auto y = gelu(xs);
  double worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!(xs[i] > -6.9f) || xs[i] == 0.0f) continue;  // the tail path; gelu(0) = 0 exactly
    const double e = ulp_error(y->at<float>(int64_t(i)), gelu_ref(double(xs[i])));
    if (e > worst) worst = e, worst_x = xs[i];
  }
  // vmath_avx2.h states 3.15 ulp over every f32 input above -6.9.
  CHECK_MESSAGE(worst <= 3.15, "table path: ", worst, " ulp at x = ", worst_x);

  // Every 5th lane of every 3rd vector in the tail (so a group of four vectors mixes vectors
  // with and without tail lanes), then the same values with the tail lanes replaced (fast
  // lanes only) or with the fast lanes replaced (tail lanes only): no lane's bits may move.
  auto is_tail = [](size_t i) { return i % 5 == 2 && (i / 16) % 3 == 0; };
  std::vector<float> mixed(4099), fast_only, tail_only;
  for (size_t i = 0; i < mixed.size(); ++i)
    mixed[i] = is_tail(i) ? -6.9f - 0.003f * float(i) : -6.8f + 0.0033f * float(i);
  fast_only = tail_only = mixed;
  for (size_t i = 0; i < mixed.size(); ++i) {
    if (is_tail(i))
      fast_only[i] = 0.25f;
    else
      tail_only[i] = -20.0f + 0.5f * float(i % 5);
  }
  const auto ym = gelu(mixed), yf = gelu(fast_only), yt = gelu(tail_only);
  int64_t moved = 0;
  for (size_t i = 0; i < mixed.size(); ++i) {
    const float a = ym->at<float>(int64_t(i)), b = (is_tail(i) ? yt : yf)->at<float>(int64_t(i));
    moved += std::memcmp(&a, &b, 4) != 0;
  }
  CHECK(moved == 0);
}

// avx2::exp_neg_ps (one 2^n scaling) against exp_ps (two) on sign-set f32 patterns: equal bit
// for bit down to the flush threshold, +0 below (vmath_avx2.h; exhaustive when checked once).
TEST_CASE("cpu membound: AVX2 exp_neg equals exp down to its flush threshold") {
  if (!has(cpu::Isa::avx2)) return;
  CHECK(test_support::exp_neg_mismatches_avx2(0x80000000u, 0xffffffffu, 509) == 0);
  CHECK(test_support::exp_neg_mismatches_avx2(0xc2aa0000u, 0xc2b00000u, 1) == 0);  // around -87.3
  CHECK(test_support::exp_neg_mismatches_avx2(0x7fc00000u, 0x7fc00010u, 1) == 0);  // +NaN
}

// avx512::exp_neg_ps (a 2^(j/32) table and a quadratic, vmath_avx512.h): within 1.76 ulp of
// exp on sign-set patterns down to the flush threshold (exhaustive when checked once),
// densely around that threshold and the first table edge (x = -ln2/64), +0 below the
// threshold, and every NaN pattern sampled stays NaN; also for positive x up to the overflow,
// and +inf beyond it.
TEST_CASE("cpu membound: AVX-512 exp_neg within 1.76 ulp, flush to +0, NaN kept") {
  if (!has(cpu::Isa::avx512)) {
    MESSAGE("skipping: no AVX-512 on this machine");
    return;
  }
  using test_support::exp_neg_probe_avx512;
  for (const auto& r :
       {exp_neg_probe_avx512(0x80000000u, 0xffffffffu, 509),
        exp_neg_probe_avx512(0xc2aa0000u, 0xc2b00000u, 1),       // around -87.3
        exp_neg_probe_avx512(0xbc2f0000u, 0xbc330000u, 1),       // around -ln2/64: first table edge
        exp_neg_probe_avx512(0x7f800001u, 0x7fffffffu, 4093),    // +NaN payloads
        exp_neg_probe_avx512(0x00000000u, 0x42b17200u, 509)}) {  // 0 <= x <= 88.72 (the softmax's shift)
    CHECK(r.bad == 0);
    CHECK_MESSAGE(r.max_ulp <= 1.76, r.max_ulp, " ulp at x = ", r.worst_x);
  }
  CHECK(test_support::exp_neg_overflows_avx512());  // +inf from 88.73 up, +inf included
}
