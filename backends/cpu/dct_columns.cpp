// The column route's plan (dct.h, ColumnPlan): twiddle tables in double, rounded once. The
// loops are in dct_columns_impl.h.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "cpu/cpu_isa.h"
#include "cpu/dct.h"

namespace longrun::cpu::dct_detail {

bool column_route_fits(int64_t n) { return n >= kColumnMinLength && (n & (n - 1)) == 0; }

int64_t column_work_floats(const ColumnPlan& plan, int64_t width) {
  const int64_t padded = (width + 15) / 16 * 16;    // whole vectors of either ISA
  return 2 * column_buffer_floats(plan.n, padded);  // two buffers of n/2 complex rows
}

// Wide blocks read and write longer row segments (64 columns: 256 bytes per row visit), which
// matters more than keeping the buffers within L2 once they no longer fit anyway: 64 columns
// while the two FFT buffers stay within 4 MB (n <= 8192), then 32 at 16384 and 16 beyond.
int64_t column_block_width(int64_t n) {
  constexpr int64_t kBufferBytes = 4 * 1024 * 1024;
  return std::clamp<int64_t>(kBufferBytes / (8 * n) / 16 * 16, 16, 64);
}

// The width of a DCT-II / DCT-III block, from the core's L2 (column_two_step_l2_bytes):
// - n = 4096 (the two-step range): 64 columns where the two-step buffer fits the L2, else 32,
//   whose whole-buffer passes then stay within the L2 (and below kColumnCopyPassBytes).
// - elsewhere: 32 columns where the 64-column buffers would take more than 3/4 of the L2 and
//   the 32-column ones would not (n = 2048 with a 1 MiB L2), so the FFT passes stay in L2;
//   64 otherwise, also where even 32 would not fit, since the wider rows then matter more.
// Never the thread count: a column's bits depend on its block's width (the gather pass of
// a 64-column block rounds differently from the direct first pass), and 1 and 2 threads
// must give the same bits.
int64_t column_plan_width(int64_t n) {
  const int64_t w = column_block_width(n);
  const bool in_range = n >= kColumnTwoStepFrom && n <= kColumnTwoStepUpTo;
  if (in_range) return column_two_step(n) ? w : std::max<int64_t>(16, w / 2);
  const int64_t room = column_two_step_l2_bytes() / 4 * 3;
  auto buffer_bytes = [&](int64_t width) {
    return 2 * column_buffer_floats(n, width) * int64_t(sizeof(float));
  };
  return w == 64 && buffer_bytes(64) > room && buffer_bytes(32) <= room ? 32 : w;
}

int64_t& column_two_step_l2_bytes() {
  static int64_t bytes = l2_cache_bytes();
  return bytes;
}

bool column_two_step(int64_t n) {
  return n >= kColumnTwoStepFrom && n <= kColumnTwoStepUpTo &&
         column_two_step_l2_bytes() >= n * column_block_width(n) * int64_t(sizeof(float));
}

namespace {

// The Stockham passes of lengths len = h, h / r, ... (r = column_fft_radix(len)): per
// butterfly p, w^{tp} for t = 1 .. r - 1, w = e^{sign 2 pi i/len} (none for the radix-2 pass).
std::vector<float> fft_twiddles(int64_t h, double sign) {
  std::vector<float> tw;
  for (int64_t len = h; len > 1; len /= column_fft_radix(len)) {
    const int64_t r = column_fft_radix(len);
    if (r == 2) continue;
    for (int64_t p = 0; p < len / r; ++p)
      for (int64_t t = 1; t < r; ++t) {
        const double a = 2.0 * std::numbers::pi * double(t * p) / double(len);
        tw.push_back(float(std::cos(a)));
        tw.push_back(float(sign * std::sin(a)));
      }
  }
  return tw;
}

}  // namespace

std::shared_ptr<const ColumnPlan> make_column_plan(bool inverse, int64_t n, int64_t rows_in,
                                                   int64_t rows_out) {
  auto pl = std::make_shared<ColumnPlan>();
  pl->inverse = inverse;
  pl->n = n;
  pl->rows_in = rows_in;
  pl->rows_out = rows_out;
  const int64_t h = n / 2;
  const double pi = std::numbers::pi, sign = inverse ? 1.0 : -1.0;
  pl->fft = fft_twiddles(h, sign);
  // The DCT-III's radix-2-first FFT (dct_columns_impl.h, pre_radix2, AVX-512 only) from
  // h = 1024: for shorter transforms the saved pass over the buffer is too short to pay for
  // the larger step. Not where even a block of 16 columns takes the copy pass, which the fold
  // needs to be absent (n = 16384).
  if (inverse && h >= 1024 && column_fft_ends_in_radix2(h) && !column_copy_pass(h, 16))
    pl->fft_half = fft_twiddles(h / 2, sign);
  if (!inverse) {
    pl->shuffled.resize(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t)
      pl->shuffled[size_t(t)] = int32_t(2 * t < n ? 2 * t : 2 * (n - 1 - t) + 1);
  }
  if (column_two_step(n)) {
    int64_t n2 = 1;
    while (n2 * n2 * 2 <= h) n2 *= 2;  // h = 2048: split 32, n2 64
    pl->split = h / n2;
    pl->fft1 = fft_twiddles(pl->split, sign);
    pl->fft2 = fft_twiddles(n2, sign);
    for (int64_t j2 = 0; j2 < n2; ++j2)
      for (int64_t k1 = 0; k1 < pl->split; ++k1) {
        const double a = 2.0 * pi * double(j2 * k1) / double(h);
        pl->cross.push_back(float(std::cos(a)));
        pl->cross.push_back(float(sign * std::sin(a)));
      }
  }
  if (!inverse) {
    // k = 0: c_0 = 1/sqrt n; k = h: c cos(pi/4) = 1/sqrt n as well.
    const double c = std::sqrt(2.0 / double(n));
    pl->edge = {float(1.0 / std::sqrt(double(n))), float(c * std::cos(pi / 4)), 0.0f, 0.0f};
    for (int64_t k = 1; k < h; ++k) {
      const double f = 2.0 * pi * double(k) / double(n), a = pi * double(k) / double(2 * n);
      for (double v : {std::cos(f), std::sin(f), c / 2 * std::cos(a), c / 2 * std::sin(a)})
        pl->edge.push_back(float(v));
    }
  } else {
    const double g = 1.0 / std::sqrt(2.0 * double(n));
    pl->edge = {float(1.0 / std::sqrt(double(n))), float(std::sqrt(2.0) * g), 0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t k = 1; k < h; ++k) {
      const double a = pi * double(k) / double(2 * n), a2 = pi * double(h - k) / double(2 * n);
      const double f = 2.0 * pi * double(k) / double(n);
      for (double v :
           {g * std::cos(a), g * std::sin(a), g * std::cos(a2), g * std::sin(a2), std::cos(f), std::sin(f)})
        pl->edge.push_back(float(v));
    }
  }
  return pl;
}

}  // namespace longrun::cpu::dct_detail
