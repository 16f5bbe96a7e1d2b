// The vector vocabulary of the attention kernels, AVX-512 flavour (16 f32 lanes): the shared
// avx512::Vec (vec_avx512.h) plus the attention's own masking helpers and transposed horizontal
// sum; the softmax's exp is the shared Vec::exp_neg (vmath). Included only by attention*_avx512.cpp; the
// generic algorithms (attention_flash_impl.h, sparse_attention_impl.h) are written against this struct and
// its AVX2 counterpart.
//
// Everything lives in an ISA-specific namespace so that inline functions compiled with
// these flags can never be merged by the linker with a copy for another ISA.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "cpu/vec_avx512.h"

// GCC 12's avx512fintrin.h passes a self-initialised `__Y` as the pass-through operand of
// unmasked intrinsics (max, min, cvtps_epi32, shuffles, ...), which -W(maybe-)uninitialized
// reports wherever they are inlined. The files including this header are ours alone.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace longrun::cpu::attn_avx512 {

struct Vec : avx512::Vec {
  // The first n lanes (0 <= n <= L); the rest read as zero and are never touched in memory.
  static T load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(__mmask16((1u << n) - 1u), p); }
  static void store_n(float* p, T v, int n) { _mm512_mask_storeu_ps(p, __mmask16((1u << n) - 1u), v); }

  // L bf16 values widened exactly to f32 (vpmovzxwd, then vpslld 16: the bf16 bits become
  // the high half of the f32).
  static T load_bf16(const uint16_t* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  // The first n bf16 values (0 <= n <= L) widened; the rest read as zero and are never
  // touched in memory (a masked 16-bit load, AVX-512 BW + VL).
  static T load_bf16_n(const uint16_t* p, int n) {
    const __m256i h = _mm256_maskz_loadu_epi16(__mmask16((1u << n) - 1u), p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }

  // Lanes whose visible-key count nvis[lane] is <= j become -inf (causal mask of key j).
  static T mask_invisible(T s, const int32_t* nvis, int32_t j) {
    const __mmask16 vis = _mm512_cmpgt_epi32_mask(_mm512_loadu_si512(nvis), _mm512_set1_epi32(j));
    return _mm512_mask_blend_ps(vis, _mm512_set1_ps(-__builtin_inff()), s);
  }
  // Lanes >= n become -inf (the unused tail of a group of logits).
  static T keep_first_n(T s, int n) {
    return _mm512_mask_blend_ps(__mmask16((1u << n) - 1u), _mm512_set1_ps(-__builtin_inff()), s);
  }
  // -inf lanes become 0: the shift of a softmax whose keys are all -inf (or absent), so that
  // exp(x - shift) gives 0 instead of exp(-inf + inf) = NaN.
  static T neg_inf_to_zero(T m) {
    const __mmask16 ninf = _mm512_cmp_ps_mask(m, _mm512_set1_ps(-__builtin_inff()), _CMP_EQ_OQ);
    return _mm512_mask_blend_ps(ninf, m, _mm512_setzero_ps());
  }

  // Lane s of the result = sum of the lanes of a[s] (16 dot-product partials -> 16 dots) in
  // a fixed tree of 15 shuffles and adds. The tree leaves lane 4c+t holding input 4t+c, so
  // the inputs are fed in that transposed order.
  static T transpose_sum(const T* a) {
    T x[8];
    for (int k = 0; k < 8; ++k) {
      const int p0 = 2 * k, p1 = 2 * k + 1;
      const T u = a[(p0 % 4) * 4 + p0 / 4], w = a[(p1 % 4) * 4 + p1 / 4];
      x[k] = _mm512_add_ps(_mm512_shuffle_f32x4(u, w, 0x44), _mm512_shuffle_f32x4(u, w, 0xEE));
    }
    T z[4];
    for (int m = 0; m < 4; ++m)
      z[m] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * m], x[2 * m + 1], 0x88),
                           _mm512_shuffle_f32x4(x[2 * m], x[2 * m + 1], 0xDD));
    T u[2];
    for (int n = 0; n < 2; ++n)
      u[n] = _mm512_add_ps(_mm512_shuffle_ps(z[2 * n], z[2 * n + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_ps(z[2 * n], z[2 * n + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(3, 1, 3, 1)));
  }

  // Lane l = p[l * stride] (stride in floats, (L - 1) * stride < 2^31).
  static T gather(const float* p, int32_t stride) {
    const __m512i idx = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(stride));
    return _mm512_i32gather_ps(idx, p, 4);
  }
};

}  // namespace longrun::cpu::attn_avx512
