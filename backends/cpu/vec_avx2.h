// The shared vector vocabulary of the cpu kernels, AVX2+FMA flavour: 8 f32 lanes, lane masks
// held in vector registers (all-ones / all-zero per lane). The generic kernel algorithms
// (<family>_impl.h) are written once against this struct and its AVX-512 twin (vec_avx512.h,
// same member names, k-register masks); each member is the cheapest AVX2 spelling of the
// operation. Include ONLY from files compiled with AVX2 flags (*_avx2.cpp): everything lives
// in namespace avx2, so an inline function compiled with AVX flags can never be merged by the
// linker with a copy for another ISA.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "cpu/vmath_avx2.h"

namespace longrun::cpu::avx2 {

// Eight -1 then eight 0: an unaligned load at kMaskWindow + 8 - n sets lanes [0, n).
alignas(32) inline constexpr int32_t kMaskWindow[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                        0,  0,  0,  0,  0,  0,  0,  0};

struct Vec {
  using T = __m256;   // 8 f32 lanes
  using M = __m256;   // lane mask: all bits set or clear per lane
  using H = __m128i;  // 8 16-bit lanes (f16 / bf16 bit patterns)
  static constexpr int L = 8;
  static constexpr int kLog2L = 3;

  // ---- masks ----
  // Lanes [0, min(n, L)) set; n >= 0.
  static M first_n(int64_t n) {
    return _mm256_castsi256_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMaskWindow + L - (n < L ? n : L))));
  }
  static M no_lanes() { return _mm256_setzero_ps(); }
  static M mask_or(M a, M b) { return _mm256_or_ps(a, b); }
  static bool any(M m) { return _mm256_movemask_ps(m) != 0; }
  // Ordered compares are false on NaN; the *_uq ones are true on NaN.
  static M gt(T a, T b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static M ge(T a, T b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
  static M lt(T a, T b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static M neq_uq(T a, T b) { return _mm256_cmp_ps(a, b, _CMP_NEQ_UQ); }
  static M nle_uq(T a, T b) { return _mm256_cmp_ps(a, b, _CMP_NLE_UQ); }
  static M is_nan(T a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }

  // ---- memory ----
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  // A non-temporal store (no read for ownership); p 32-byte aligned. Needs an sfence before
  // another thread reads the data.
  static void stream(float* p, T v) { _mm256_stream_ps(p, v); }
  // Lanes outside m read as 0 and are never touched in memory.
  static T load_n(const float* p, M m) { return _mm256_maskload_ps(p, _mm256_castps_si256(m)); }
  // A full mask takes a plain store: vmaskmovps to memory is microcoded on AMD cores (several
  // times slower than a plain store), and the loops call this for every vector, with a
  // partial mask only on the tail.
  static void store_n(float* p, M m, T v) {
    if (_mm256_movemask_ps(m) == 0xFF)
      _mm256_storeu_ps(p, v);
    else
      _mm256_maskstore_ps(p, _mm256_castps_si256(m), v);
  }
  static H load_u16(const uint16_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
  static void store_u16(uint16_t* p, H h) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), h); }
  // The first min(left, L) elements (m == first_n(left)); AVX2 has no 16-bit masked move, so
  // a short tail goes through a zero-padded copy.
  static H load_u16_n(const uint16_t* p, int64_t left, M) {
    if (left >= L) return load_u16(p);
    uint16_t buf[L] = {};
    std::memcpy(buf, p, size_t(left) * sizeof(uint16_t));
    return load_u16(buf);
  }
  static void store_u16_n(uint16_t* p, int64_t left, M, H h) {
    if (left >= L) return store_u16(p, h);
    uint16_t buf[L];
    store_u16(buf, h);
    std::memcpy(p, buf, size_t(left) * sizeof(uint16_t));
  }

  // ---- arithmetic ----
  static T zero() { return _mm256_setzero_ps(); }
  static T set1(float x) { return _mm256_set1_ps(x); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static T sub(T a, T b) { return _mm256_sub_ps(a, b); }
  static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T div(T a, T b) { return _mm256_div_ps(a, b); }
  static T fmadd(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }    // a * b + c
  static T fnmadd(T a, T b, T c) { return _mm256_fnmadd_ps(a, b, c); }  // c - a * b
  // max / min return the second operand when either is NaN (x86 rule).
  static T max(T a, T b) { return _mm256_max_ps(a, b); }
  static T min(T a, T b) { return _mm256_min_ps(a, b); }
  static T neg_abs(T a) { return _mm256_or_ps(a, _mm256_set1_ps(-0.0f)); }  // -|a|
  static T round_nearest(T a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // p * 2^n for integral n in [-126, 127]: one rounding (through the exponent bits).
  static T mul_pow2(T p, T n) {
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  }

  // ---- lane selection ----
  static T blend(M m, T if_clear, T if_set) { return _mm256_blendv_ps(if_clear, if_set, m); }
  static T keep(M m, T v) { return _mm256_and_ps(m, v); }                         // m ? v : 0
  static T zero_where(M m, T v) { return _mm256_andnot_ps(m, v); }                // m ? 0 : v
  static T add_where(M m, T a, T b) { return blend(m, a, _mm256_add_ps(a, b)); }  // m ? a + b : a
  static T fmadd_where(M m, T a, T b, T c) {
    return blend(m, c, _mm256_fmadd_ps(a, b, c));
  }  // m ? a * b + c : c
  // m ? a * b + c : a + b.
  static T fmadd_or_add(M m, T a, T b, T c) {
    return blend(m, _mm256_add_ps(a, b), _mm256_fmadd_ps(a, b, c));
  }

  // ---- reductions, in a fixed order (halves, then pairs, then neighbours) ----
  static float first(T v) { return _mm256_cvtss_f32(v); }
  // Lane i of the result is lane i ^ (L >> (step + 1)) of v: step 0 swaps the halves, the
  // last step swaps neighbours (kLog2L steps in all).
  static T swap_lanes(T v, int step) {
    switch (step) {
      case 0: return _mm256_permute2f128_ps(v, v, 1);
      case 1: return _mm256_permute_ps(v, 0x4e);
      default: return _mm256_permute_ps(v, 0xb1);
    }
  }
  static float hmax(T v) {
    for (int s = 0; s < kLog2L; ++s) v = _mm256_max_ps(v, swap_lanes(v, s));
    return first(v);
  }
  static float hsum(T v) {
    for (int s = 0; s < kLog2L; ++s) v = _mm256_add_ps(v, swap_lanes(v, s));
    return first(v);
  }

  // ---- 16-bit floats ----
  static T widen_f16(H h) { return _mm256_cvtph_ps(h); }
  static T widen_bf16(H h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
  static H narrow_f16(T v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // Round to nearest even on the upper 16 bits; NaN keeps its top bits and is made quiet
  // (the rule of f32_to_bf16 in dtype.h).
  static H narrow_bf16(T v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i nan =
        _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
                                          _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1)));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
    const __m256i quieted = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    const __m256i r = _mm256_blendv_epi8(rounded, quieted, nan);
    // Values fit 16 bits, so the saturating pack is exact; fix the 128-bit lane order.
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
  }

  // ---- complex slots: a lane pair (re, im) = one complex value, or the (a, b) columns of
  // a DCT pair; kSlots per vector (dct_impl.h) ----
  static constexpr int kSlots = L / 2;
  // Lanes [0, n) with n clamped to [0, L] (any sign).
  static M first_n_any(int64_t n) {
    const int c = n < 0 ? 0 : n > L ? L : int(n);
    return _mm256_castsi256_ps(
        _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
  }
  // A load of the first lanes (m) where not `whole`: AVX2 masked loads are slow, so whole
  // vectors take a plain load.
  static T load_part(const float* p, M m, bool whole) { return whole ? load(p) : load_n(p, m); }
  static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
  static void store_part(float* p, M m, T v, bool whole) {
    if (whole)
      store(p, v);
    else
      store_n(p, m, v);
  }
  // Fetch a line for a coming store (prefetchw where the target has it, else prefetcht0).
  static void prefetch_for_write(const float* p) { __builtin_prefetch(p, 1, 3); }
  static T fmaddsub(T a, T b, T c) { return _mm256_fmaddsub_ps(a, b, c); }  // a*b -+ c (even lanes -)
  static T fmsubadd(T a, T b, T c) { return _mm256_fmsubadd_ps(a, b, c); }  // a*b +- c (even lanes +)
  static T swap_pairs(T v) { return _mm256_permute_ps(v, 0xB1); }           // (a, b) -> (b, a) per slot
  static T reverse_slots(T v) { return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0x1B)); }
  // r[i] slot p -> r[p] slot i for kSlots x kSlots complex values.
  static inline __attribute__((always_inline)) void transpose_slots(T r[kSlots]) {
    const __m256d r0 = _mm256_castps_pd(r[0]), r1 = _mm256_castps_pd(r[1]);
    const __m256d r2 = _mm256_castps_pd(r[2]), r3 = _mm256_castps_pd(r[3]);
    const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
    const __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
    r[0] = _mm256_castpd_ps(_mm256_permute2f128_pd(t0, t2, 0x20));
    r[1] = _mm256_castpd_ps(_mm256_permute2f128_pd(t1, t3, 0x20));
    r[2] = _mm256_castpd_ps(_mm256_permute2f128_pd(t0, t2, 0x31));
    r[3] = _mm256_castpd_ps(_mm256_permute2f128_pd(t1, t3, 0x31));
  }
  // Two lines a, b (L floats each) -> the slots (a[2i], b[2i]) (`even`) and, in reverse
  // order, (a[2i+1], b[2i+1]) (`odd_down`): Makhoul's shuffle of a pair of lines.
  static void zip_shuffled(T a, T b, T& even, T& odd_down) {
    const __m256d lo = _mm256_castps_pd(_mm256_unpacklo_ps(a, b));  // (a0 b0)(a1 b1) | (a4 b4)(a5 b5)
    const __m256d hi = _mm256_castps_pd(_mm256_unpackhi_ps(a, b));  // (a2 b2)(a3 b3) | (a6 b6)(a7 b7)
    even = _mm256_castpd_ps(_mm256_shuffle_pd(lo, hi, 0x0));
    odd_down = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_shuffle_pd(lo, hi, 0xF), 0x1B));
  }
  // The inverse: slots lo (positions j..) and hi (positions len-kSlots-j.., as stored) ->
  // a[2i] = lo_i.a, a[2i+1] = hi_{kSlots-1-i}.a, likewise b.
  static void unzip_shuffled(T lo, T hi, T& a, T& b) {
    hi = reverse_slots(hi);
    const __m256d u = _mm256_castps_pd(_mm256_unpacklo_ps(lo, hi)),
                  v = _mm256_castps_pd(_mm256_unpackhi_ps(lo, hi));
    a = _mm256_castpd_ps(_mm256_shuffle_pd(u, v, 0x0));
    b = _mm256_castpd_ps(_mm256_shuffle_pd(u, v, 0xF));
  }
  // kSlots floats of line a and of line b (b may be null: zeros) -> slots (a[i], b[i]).
  static T zip_halves(const float* a, const float* b) {
    const __m128 va = _mm_loadu_ps(a), vb = b ? _mm_loadu_ps(b) : _mm_setzero_ps();
    return _mm256_set_m128(_mm_unpackhi_ps(va, vb), _mm_unpacklo_ps(va, vb));
  }
  // Slots (a[i], b[i]) -> a to pa, b to pb (kSlots floats each; pb may be null).
  static void unzip_halves(T v, float* pa, float* pb) {
    v = _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
    _mm_storeu_ps(pa, _mm256_castps256_ps128(v));
    if (pb) _mm_storeu_ps(pb, _mm256_extractf128_ps(v, 1));
  }

  // ---- vmath (error bounds in vmath_avx2.h) ----
  static T exp(T x) { return exp_ps(x); }
  static T exp_neg(T x) { return exp_neg_ps(x); }
  static T tanh(T x) { return tanh_ps(x); }
  static T gelu(T x) { return gelu_ps(x); }
  template <int W>
  static void gelu(T (&x)[W]) {
    for (T& v : x) v = gelu_ps(v);
  }
  static T gelu_tanh(T x) { return gelu_tanh_ps(x); }
};

}  // namespace longrun::cpu::avx2
