// The shared vector vocabulary of the cpu kernels, AVX-512 flavour: 16 f32 lanes, lane masks
// in k registers. The same member names as vec_avx2.h (which explains the pattern); the
// genuinely different choices of this ISA live here as members: masked moves instead of
// blends and padded copies, rcp14 plus a Newton step instead of a division where ~1 ulp is
// plenty, scalef for 2^n scaling. Include ONLY from *_avx512.cpp files (namespace avx512).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "cpu/vmath_avx512.h"

// GCC 12's avx512fintrin.h passes a self-initialised `__Y` as the pass-through operand of
// unmasked intrinsics (GCC PR 105593), which -W(maybe-)uninitialized reports wherever they
// are inlined. The files including this header are ours alone.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace longrun::cpu::avx512 {

struct Vec {
  using T = __m512;  // 16 f32 lanes
  using M = __mmask16;
  using H = __m256i;  // 16 16-bit lanes (f16 / bf16 bit patterns)
  static constexpr int L = 16;

  // ---- masks ----
  // Lanes [0, min(n, L)) set; n >= 0.
  static M first_n(int64_t n) { return n >= L ? M(0xffff) : M((1u << n) - 1u); }
  static M no_lanes() { return 0; }
  static M mask_or(M a, M b) { return M(a | b); }
  static bool any(M m) { return m != 0; }
  static M gt(T a, T b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static M ge(T a, T b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
  static M lt(T a, T b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static M neq_uq(T a, T b) { return _mm512_cmp_ps_mask(a, b, _CMP_NEQ_UQ); }
  static M nle_uq(T a, T b) { return _mm512_cmp_ps_mask(a, b, _CMP_NLE_UQ); }
  static M is_nan(T a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }

  // ---- memory ----
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  // A non-temporal store (no read for ownership); p 64-byte aligned. Needs an sfence before
  // another thread reads the data.
  static void stream(float* p, T v) { _mm512_stream_ps(p, v); }
  static T load_n(const float* p, M m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store_n(float* p, M m, T v) { _mm512_mask_storeu_ps(p, m, v); }
  static H load_u16(const uint16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void store_u16(uint16_t* p, H h) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), h); }
  static H load_u16_n(const uint16_t* p, int64_t, M m) { return _mm256_maskz_loadu_epi16(m, p); }
  static void store_u16_n(uint16_t* p, int64_t, M m, H h) { _mm256_mask_storeu_epi16(p, m, h); }

  // ---- arithmetic ----
  static T zero() { return _mm512_setzero_ps(); }
  static T set1(float x) { return _mm512_set1_ps(x); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static T sub(T a, T b) { return _mm512_sub_ps(a, b); }
  static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static T div(T a, T b) { return _mm512_div_ps(a, b); }
  static T fmadd(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T fnmadd(T a, T b, T c) { return _mm512_fnmadd_ps(a, b, c); }
  static T max(T a, T b) { return _mm512_max_ps(a, b); }
  static T min(T a, T b) { return _mm512_min_ps(a, b); }
  static T neg_abs(T a) { return _mm512_or_ps(a, _mm512_set1_ps(-0.0f)); }
  static T round_nearest(T a) {
    return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // p * 2^n for integral n: scalef, one rounding.
  static T mul_pow2(T p, T n) { return _mm512_scalef_ps(p, n); }

  // ---- lane selection ----
  static T blend(M m, T if_clear, T if_set) { return _mm512_mask_blend_ps(m, if_clear, if_set); }
  static T keep(M m, T v) { return _mm512_maskz_mov_ps(m, v); }
  static T zero_where(M m, T v) { return _mm512_maskz_mov_ps(M(~m), v); }
  static T add_where(M m, T a, T b) { return _mm512_mask_add_ps(a, m, a, b); }
  static T fmadd_where(M m, T a, T b, T c) { return _mm512_mask3_fmadd_ps(a, b, c, m); }
  static T fmadd_or_add(M m, T a, T b, T c) {
    const T f = _mm512_mask_fmadd_ps(a, m, b, c);  // m ? a * b + c : a
    return _mm512_mask_add_ps(f, M(~m), f, b);     // then a + b where m is clear
  }

  // ---- reductions ----
  static float first(T v) { return _mm512_cvtss_f32(v); }
  static float hmax(T v) { return _mm512_reduce_max_ps(v); }
  static float hsum(T v) { return _mm512_reduce_add_ps(v); }

  // ---- 16-bit floats ----
  static T widen_f16(H h) { return _mm512_cvtph_ps(h); }
  static T widen_bf16(H h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
  static H narrow_f16(T v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // As avx2::Vec::narrow_bf16: nearest even, NaN kept and quieted.
  static H narrow_bf16(T v) {
    const __m512i u = _mm512_castps_si512(v);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    const __m512i bias = _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                                          _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1)));
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
    const __m512i r = _mm512_mask_or_epi32(rounded, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
  }

  // ---- complex slots (vec_avx2.h explains them) ----
  static constexpr int kSlots = L / 2;
  static M first_n_any(int64_t n) { return n >= L ? M(0xFFFF) : n <= 0 ? M(0) : M((1u << n) - 1u); }
  static T load_part(const float* p, M m, bool) { return load_n(p, m); }  // k-masked loads are free
  static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
  static void store_part(float* p, M m, T v, bool) { store_n(p, m, v); }
  // PREFETCHW (every AVX-512 CPU has it): fetch a line in exclusive state for a coming store.
  static void prefetch_for_write(const float* p) { asm volatile("prefetchw %0" : : "m"(*p)); }
  static T fmaddsub(T a, T b, T c) { return _mm512_fmaddsub_ps(a, b, c); }
  static T fmsubadd(T a, T b, T c) { return _mm512_fmsubadd_ps(a, b, c); }
  static T swap_pairs(T v) { return _mm512_permute_ps(v, 0xB1); }
  static T reverse_slots(T v) {
    return _mm512_castpd_ps(
        _mm512_permutexvar_pd(_mm512_setr_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_castps_pd(v)));
  }
  // 8 x 8 complex values: three rounds of two-source permutes.
  static inline __attribute__((always_inline)) void transpose_slots(T v[kSlots]) {
    const __m512i lo1 = _mm512_setr_epi64(0, 8, 2, 10, 4, 12, 6, 14),
                  hi1 = _mm512_setr_epi64(1, 9, 3, 11, 5, 13, 7, 15);
    const __m512i lo2 = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13),
                  hi2 = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    const __m512i lo3 = _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11),
                  hi3 = _mm512_setr_epi64(4, 5, 6, 7, 12, 13, 14, 15);
    __m512d r[8], t[8], u[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm512_castps_pd(v[i]);
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm512_permutex2var_pd(r[i], lo1, r[i + 1]);
      t[i + 1] = _mm512_permutex2var_pd(r[i], hi1, r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4)
      for (int h = 0; h < 2; ++h) {
        u[i + h] = _mm512_permutex2var_pd(t[i + h], lo2, t[i + h + 2]);
        u[i + h + 2] = _mm512_permutex2var_pd(t[i + h], hi2, t[i + h + 2]);
      }
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm512_castpd_ps(_mm512_permutex2var_pd(u[i], lo3, u[i + 4]));
      v[i + 4] = _mm512_castpd_ps(_mm512_permutex2var_pd(u[i], hi3, u[i + 4]));
    }
  }
  // One two-source permute each.
  static void zip_shuffled(T a, T b, T& even, T& odd_down) {
    even = _mm512_permutex2var_ps(
        a, _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30), b);
    odd_down = _mm512_permutex2var_ps(
        a, _mm512_setr_epi32(15, 31, 13, 29, 11, 27, 9, 25, 7, 23, 5, 21, 3, 19, 1, 17), b);
  }
  static void unzip_shuffled(T lo, T hi, T& a, T& b) {
    const __m512i merge_a = _mm512_setr_epi32(0, 30, 2, 28, 4, 26, 6, 24, 8, 22, 10, 20, 12, 18, 14, 16);
    a = _mm512_permutex2var_ps(lo, merge_a, hi);
    b = _mm512_permutex2var_ps(lo, _mm512_add_epi32(merge_a, _mm512_set1_epi32(1)), hi);
  }
  static T zip_halves(const float* a, const float* b) {
    const __m512 va = _mm512_zextps256_ps512(_mm256_loadu_ps(a));
    const __m512 vb = b ? _mm512_zextps256_ps512(_mm256_loadu_ps(b)) : _mm512_setzero_ps();
    return _mm512_permutex2var_ps(
        va, _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23), vb);
  }
  static void unzip_halves(T v, float* pa, float* pb) {
    v = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15), v);
    _mm256_storeu_ps(pa, _mm512_castps512_ps256(v));
    if (pb) _mm256_storeu_ps(pb, _mm512_extractf32x8_ps(v, 1));
  }

  // ---- vmath (error bounds in vmath_avx2.h) ----
  static T exp(T x) { return exp_ps(x); }
  static T exp_neg(T x) { return exp_neg_ps(x); }
  static T tanh(T x) { return tanh_ps(x); }
  static T gelu(T x) { return gelu_ps(x); }
  template <int W>
  static void gelu(T (&x)[W]) {  // W vectors side by side (vmath_avx512.h)
    gelu_ps(x);
  }
  static T gelu_tanh(T x) { return gelu_tanh_ps(x); }
};

}  // namespace longrun::cpu::avx512
