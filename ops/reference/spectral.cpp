// Reference kernels for dct, idct and spectral_filter: the DIRECT O(N^2) cosine sums in
// double, deliberately independent of any FFT so that they can judge the FFT (Makhoul)
// and matrix kernels of the backends. Formulas (docs/models.md#spectral-filter, scipy norm='ortho'):
//   DCT-II:  X_k = c_k(N) sum_{n<N} x_n cos(pi k (2n+1) / 2N)
//   DCT-III: y_m = sum_{k<M} c_k(M) X_k cos(pi k (2m+1) / 2M)
//   c_0(P) = 1/sqrt(P), c_k(P) = sqrt(2/P) for k >= 1.
#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

#include "longrun/ops/schema.h"
#include "reference/access.h"

namespace longrun {
namespace {

// One line of a tensor along an axis: element i sits at base + i * stride.
struct Line {
  const TensorView* view;
  int64_t base;
  int64_t stride;
  double get(int64_t i) const { return ref::load(*view, base + i * stride); }
  void set(int64_t i, double v) const { ref::store(*view, base + i * stride, v); }
};

double ortho_scale(int64_t k, int64_t p) {
  return k == 0 ? std::sqrt(1.0 / double(p)) : std::sqrt(2.0 / double(p));
}

// cos(pi * k * (2n+1) / (2p)). The integer k(2n+1) is reduced modulo 4p (one period) before
// the division so that the argument stays in [0, 2pi) and keeps full double precision for
// long sequences.
double basis(int64_t k, int64_t n, int64_t p) {
  const int64_t period = 4 * p;
  const int64_t phase = ((k % period) * ((2 * n + 1) % period)) % period;
  return std::cos(std::numbers::pi * double(phase) / double(2 * p));
}

// First `keep` DCT-II coefficients of the length-n line `in`.
std::vector<double> dct2(const Line& in, int64_t n, int64_t keep) {
  std::vector<double> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = in.get(i);
  std::vector<double> out(static_cast<size_t>(keep));
  for (int64_t k = 0; k < keep; ++k) {
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += x[size_t(i)] * basis(k, i, n);
    out[size_t(k)] = ortho_scale(k, n) * s;
  }
  return out;
}

// Length-m DCT-III of the coefficients `coef` (missing ones are zero: scipy's zero padding).
void dct3(const std::vector<double>& coef, int64_t m, const Line& out) {
  const int64_t used = int64_t(coef.size()) < m ? int64_t(coef.size()) : m;
  for (int64_t j = 0; j < m; ++j) {
    double s = 0.0;
    for (int64_t k = 0; k < used; ++k) s += ortho_scale(k, m) * coef[size_t(k)] * basis(k, j, m);
    out.set(j, s);
  }
}

}  // namespace

Status reference_dct(const KernelArgs& args) {
  const auto& a = args.attr<DctAttrs>();
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  const int axis = x.desc.normalize_axis(a.axis);
  const int64_t n = x.desc.dim(axis);
  const int64_t keep = a.keep == 0 ? n : a.keep;
  ref::for_each_line(x.desc, y.desc, axis, [&](int64_t in_base, int64_t out_base) {
    const std::vector<double> coef = dct2(Line{&x, in_base, x.desc.stride(axis)}, n, keep);
    const Line out{&y, out_base, y.desc.stride(axis)};
    for (int64_t k = 0; k < keep; ++k) out.set(k, coef[size_t(k)]);
  });
  return {};
}

Status reference_idct(const KernelArgs& args) {
  const auto& a = args.attr<IdctAttrs>();
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  const int axis = x.desc.normalize_axis(a.axis);
  const int64_t len = x.desc.dim(axis);
  const int64_t m = a.n == 0 ? len : a.n;
  // Truncation to m: coefficients at k >= m do not take part.
  const int64_t used = len < m ? len : m;
  ref::for_each_line(x.desc, y.desc, axis, [&](int64_t in_base, int64_t out_base) {
    const Line in{&x, in_base, x.desc.stride(axis)};
    std::vector<double> coef(static_cast<size_t>(used));
    for (int64_t k = 0; k < used; ++k) coef[size_t(k)] = in.get(k);
    dct3(coef, m, Line{&y, out_base, y.desc.stride(axis)});
  });
  return {};
}

// y = idct_M(dct_N(x)[0:M]): a true M-point inverse of the truncated spectrum, which
// resamples the low-passed signal to length M and scales it by ~sqrt(N/M) (intended; the
// Fourier Transformer was trained with it).
Status reference_spectral_filter(const KernelArgs& args) {
  const auto& a = args.attr<SpectralFilterAttrs>();
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  const int axis = x.desc.normalize_axis(a.axis);
  const int64_t n = x.desc.dim(axis);
  const int64_t m = a.keep < n ? a.keep : n;
  ref::for_each_line(x.desc, y.desc, axis, [&](int64_t in_base, int64_t out_base) {
    const std::vector<double> coef = dct2(Line{&x, in_base, x.desc.stride(axis)}, n, m);
    dct3(coef, m, Line{&y, out_base, y.desc.stride(axis)});
  });
  return {};
}

}  // namespace longrun
