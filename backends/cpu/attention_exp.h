// The small exp of the attention softmax, written once over a vector struct V (vec_avx2.h /
// vec_avx512.h). Include only from attention_vexp_avx2.h / attention_vexp_avx512.h.
#pragma once

namespace longrun::cpu {

// exp(x) for the softmax: arguments are <= 0 (or NaN) there. Range reduction
// x = n ln2 + r with ln2 split in two (exact n ln2_hi), a degree-6 polynomial on
// |r| <= ln2/2 (about 1 ulp), then scaling by 2^n (n in [-126, 127] after the clamp, so
// V::mul_pow2 rounds once). exp(-inf) = 0, results below the normal range flush to 0, NaN
// stays NaN.
template <class V>
static inline typename V::T softmax_exp(typename V::T x) {
  using T = typename V::T;
  const T lo = V::set1(-87.33654f), hi = V::set1(88.0f);
  const typename V::M underflow = V::lt(x, lo);
  x = V::min(hi, V::max(lo, x));  // max/min return x when x is NaN
  const T n = V::round_nearest(V::mul(x, V::set1(1.44269504088896341f)));
  T r = V::fnmadd(n, V::set1(0.693359375f), x);
  r = V::fnmadd(n, V::set1(-2.12194440e-4f), r);
  T p = V::set1(1.9875691500e-4f);
  p = V::fmadd(p, r, V::set1(1.3981999507e-3f));
  p = V::fmadd(p, r, V::set1(8.3334519073e-3f));
  p = V::fmadd(p, r, V::set1(4.1665795894e-2f));
  p = V::fmadd(p, r, V::set1(1.6666665459e-1f));
  p = V::fmadd(p, r, V::set1(5.0000001201e-1f));
  p = V::fmadd(p, V::mul(r, r), V::add(r, V::set1(1.0f)));
  return V::zero_where(underflow, V::mul_pow2(p, n));  // NaN lanes: p is NaN
}

}  // namespace longrun::cpu
