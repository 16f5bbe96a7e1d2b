// The numeric building blocks of the cpu spectral kernels (dct.h): the FFTW plan cache, the
// batched sequence DFT (FFTW directly, or Bluestein's chirp-z through power-of-two FFTs for
// lengths FFTW handles slowly) and the spectral filter's operator matrix. No intrinsics.
#include <fftw3.h>

#include <climits>
#include <cmath>
#include <complex>
#include <map>
#include <mutex>
#include <numbers>
#include <tuple>
#include <vector>

#include "cpu/dct.h"

namespace longrun::cpu::dct_detail {
namespace {

// FFTW's planner is not thread-safe; executing a plan on new arrays is.
std::mutex& fftw_mutex() {
  static std::mutex m;
  return m;
}

// Out-of-place complex FFT of length n on p contiguous sequences `ld` complex apart.
// Plans are cached for the life of the process (a few per model shape) and single-threaded
// (this library does not link fftw3f_threads): parallelism is ours, over blocks.
// FFTW_ESTIMATE plans in about a millisecond and picks its algorithm without timing, so
// results are reproducible across processes; on contiguous sequences it comes close to
// FFTW_MEASURE, which would time candidate plans for about a second per length.
Result<fftwf_plan> sequence_plan(int64_t n, int64_t p, int64_t ld, int sign) {
  static std::map<std::tuple<int64_t, int64_t, int64_t, int>, fftwf_plan> cache;
  if (ld > INT_MAX || p > INT_MAX || ld * p > INT_MAX)
    return unsupported("dct: transform of " + std::to_string(n) + " x " + std::to_string(p) +
                       " is too large");
  std::lock_guard<std::mutex> lock(fftw_mutex());
  const auto key = std::make_tuple(n, p, ld, sign);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  fftwf_complex* in = fftwf_alloc_complex(size_t(ld * p));
  fftwf_complex* out = fftwf_alloc_complex(size_t(ld * p));
  fftwf_plan plan = nullptr;
  if (in != nullptr && out != nullptr) {
    const int len = int(n);
    plan = fftwf_plan_many_dft(1, &len, int(p), in, nullptr, 1, int(ld), out, nullptr, 1, int(ld), sign,
                               FFTW_ESTIMATE);
  }
  fftwf_free(in);
  fftwf_free(out);
  if (plan == nullptr) return internal_error("dct: FFTW could not plan length " + std::to_string(n));
  cache.emplace(key, plan);
  return plan;
}

// In-place radix-2 DFT in double (x.size() a power of two), e^{-2 pi i jk / n}: the exact
// spectrum of the Bluestein filter.
void fft_double(std::vector<std::complex<double>>& x) {
  const size_t n = x.size();
  for (size_t i = 1, j = 0; i < n; ++i) {  // bit reversal
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(x[i], x[j]);
  }
  for (size_t len = 2; len <= n; len <<= 1)
    for (size_t k = 0; k < len / 2; ++k) {
      const std::complex<double> w = std::polar(1.0, -2.0 * std::numbers::pi * double(k) / double(len));
      for (size_t i = 0; i < n; i += len) {
        const std::complex<double> u = x[i + k], v = x[i + k + len / 2] * w;
        x[i + k] = u + v;
        x[i + k + len / 2] = u - v;
      }
    }
}

// A complex table as two per-slot arrays (both floats of slot k hold Re t_k, resp. Im t_k),
// the layout of DctLoops::cmul.
struct SlotTable {
  std::vector<float> re, im;
  void push(std::complex<double> v) {
    re.insert(re.end(), 2, float(v.real()));
    im.insert(im.end(), 2, float(v.imag()));
  }
};

}  // namespace

// FFTW runs lengths whose prime factors are all <= 13 on its fast codelets; for a larger
// prime factor it falls back to Rader or its own Bluestein, one sequence at a time, several
// times slower per point. Bluestein here runs batched power-of-two FFTs of length >= 2n - 1
// instead, which stay on the fast codelets and run a whole block of sequences per call.
int64_t bluestein_length(int64_t n) {
  if (n <= 1) return 0;
  int64_t rest = n;
  for (int64_t p : {2, 3, 5, 7, 11, 13})
    while (rest % p == 0) rest /= p;
  if (rest == 1) return 0;
  int64_t n2 = 1;
  while (n2 < 2 * n - 1) n2 *= 2;
  return n2;
}

struct SequenceDft {
  int64_t n = 0, n2 = 0, ld = 0;
  struct Plans {
    int64_t pairs = 0;
    fftwf_plan direct = nullptr, fwd2 = nullptr, bwd2 = nullptr;
  };
  std::vector<Plans> plans;
  // Bluestein: X_k = c_k sum_j (x_j c_j) d_{k-j}, c_j = e^{s i pi j^2/n}, d = conj(c), as a
  // cyclic convolution of length n2 (d's spectrum precomputed, with the 1/n2).
  SlotTable chirp, filter;
};

Result<std::shared_ptr<const SequenceDft>> make_sequence_dft(int64_t n, int sign, int64_t ld,
                                                             std::span<const int64_t> pair_counts) {
  auto dft = std::make_shared<SequenceDft>();
  dft->n = n;
  dft->n2 = bluestein_length(n);
  dft->ld = ld;
  for (int64_t pairs : pair_counts) {
    SequenceDft::Plans p;
    p.pairs = pairs;
    if (dft->n2 == 0) {
      LR_ASSIGN_OR_RETURN(p.direct, sequence_plan(n, pairs, ld, sign));
    } else {
      LR_ASSIGN_OR_RETURN(p.fwd2, sequence_plan(dft->n2, pairs, dft->n2, FFTW_FORWARD));
      LR_ASSIGN_OR_RETURN(p.bwd2, sequence_plan(dft->n2, pairs, dft->n2, FFTW_BACKWARD));
    }
    dft->plans.push_back(p);
  }
  if (dft->n2 > 0) {
    const double s = sign == FFTW_FORWARD ? -1.0 : 1.0;
    // j^2 reduced modulo 2n (the chirp's period) in integers keeps the angle exact.
    auto chirp = [&](int64_t j) {
      return std::polar(1.0, s * std::numbers::pi * double((j * j) % (2 * n)) / double(n));
    };
    for (int64_t j = 0; j < n; ++j) dft->chirp.push(chirp(j));
    std::vector<std::complex<double>> d(size_t(dft->n2));
    for (int64_t j = 0; j < n; ++j) d[size_t(j)] = d[size_t((dft->n2 - j) % dft->n2)] = std::conj(chirp(j));
    fft_double(d);
    for (const auto& v : d) dft->filter.push(v / double(dft->n2));
  }
  return std::shared_ptr<const SequenceDft>(std::move(dft));
}

int64_t sequence_dft_work_floats(const SequenceDft& dft, int64_t pairs) { return 4 * pairs * dft.n2; }

void run_sequence_dft(const SequenceDft& dft, const DctLoops& loops, float* in, float* out, int64_t pairs,
                      float* work) {
  const SequenceDft::Plans* plan = &dft.plans[0];
  while (plan->pairs != pairs) ++plan;  // made for every sub-block size that occurs
  auto as_complex = [](float* p) { return reinterpret_cast<fftwf_complex*>(p); };
  if (dft.n2 == 0) {
    fftwf_execute_dft(plan->direct, as_complex(in), as_complex(out));
    return;
  }
  float* t1 = work;
  float* t2 = work + 2 * pairs * dft.n2;
  const SlotTable &c = dft.chirp, &d = dft.filter;
  loops.cmul(in, dft.ld, pairs, dft.n, c.re.data(), c.im.data(), t1, dft.n2, dft.n2);
  fftwf_execute_dft(plan->fwd2, as_complex(t1), as_complex(t2));
  loops.cmul(t2, dft.n2, pairs, dft.n2, d.re.data(), d.im.data(), t2, dft.n2, dft.n2);
  fftwf_execute_dft(plan->bwd2, as_complex(t2), as_complex(t1));
  loops.cmul(t1, dft.n2, pairs, dft.n, c.re.data(), c.im.data(), out, dft.ld, dft.n);
}

// ---- the filter's operator matrix ------------------------------------------------------

namespace {

// sin and cos of pi*q/den, with q reduced modulo one period first (exact in integers).
double sin_pi(int64_t q, int64_t den) {
  return std::sin(std::numbers::pi * double(q % (2 * den)) / double(den));
}
double cos_pi(int64_t q, int64_t den) {
  return std::cos(std::numbers::pi * double(q % (2 * den)) / double(den));
}

// R[i,j] = sum_{k<m} c_k(m) c_k(n) cos(pi k (2i+1)/2m) cos(pi k (2j+1)/2n) (docs/models.md#spectral-filter)
// in closed form: with cos a cos b = (cos(a-b) + cos(a+b))/2 the sum over k >= 1 is two Dirichlet sums D(t) =
// sum_{k=1}^{m-1} cos(k t) = sin((m-1)t/2) cos(m t/2) / sin(t/2), with t/2 = pi p / 4mn for the integers p =
// (2i+1)n -+ (2j+1)m. O(mn) in double, not O(m^2 n).
std::vector<float> build_filter_matrix(int64_t n, int64_t m, bool transposed) {
  std::vector<float> r(size_t(n * m));
  const int64_t den = 4 * m * n;  // D has period den in p
  auto dirichlet = [&](int64_t p) {
    p = ((p % den) + den) % den;
    if (p == 0) return double(m - 1);
    return sin_pi((m - 1) * p, den) * cos_pi(m * p, den) / sin_pi(p, den);
  };
  const double scale = 1.0 / std::sqrt(double(m) * double(n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const int64_t a = (2 * i + 1) * n, b = (2 * j + 1) * m;
      const float v = float(scale * (1.0 + dirichlet(a - b) + dirichlet(a + b)));
      r[size_t(transposed ? j * m + i : i * n + j)] = v;
    }
  return r;
}

}  // namespace

std::shared_ptr<const std::vector<float>> filter_matrix(int64_t n, int64_t m, bool transposed) {
  static std::mutex mu;
  static std::map<std::tuple<int64_t, int64_t, bool>, std::weak_ptr<const std::vector<float>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[std::make_tuple(n, m, transposed)];
  if (auto held = slot.lock()) return held;
  auto made = std::make_shared<const std::vector<float>>(build_filter_matrix(n, m, transposed));
  slot = made;
  return made;
}

}  // namespace longrun::cpu::dct_detail
