// Device-side helpers shared by the cuda kernels: dtype loads/stores through f32, launch
// geometry for grid-stride loops, warp reductions, the data-error record. Included only by
// .cu files.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "longrun/dtype.h"

namespace longrun::cuda {

// Element i of a buffer of dtype t, as f32 (integers converted; i64 through double).
__device__ __forceinline__ float load_as_float(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(p)[i];
    case DType::f16: return __half2float(static_cast<const __half*>(p)[i]);
    case DType::bf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case DType::i32: return float(static_cast<const int32_t*>(p)[i]);
    case DType::i64: return float(static_cast<const long long*>(p)[i]);
    case DType::u8: return float(static_cast<const uint8_t*>(p)[i]);
    case DType::i8: return float(static_cast<const int8_t*>(p)[i]);
  }
  return 0.0f;
}

// Exact integer load (ids, indices): i32 / i64 / u8.
__device__ __forceinline__ long long load_as_int(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::i32: return static_cast<const int32_t*>(p)[i];
    case DType::i64: return static_cast<const long long*>(p)[i];
    case DType::u8: return static_cast<const uint8_t*>(p)[i];
    case DType::i8: return static_cast<const int8_t*>(p)[i];
    default: return (long long)load_as_float(p, t, i);
  }
}

// Stores x rounded to nearest even into a float buffer of dtype t (f32 / f16 / bf16).
__device__ __forceinline__ void store_float(void* p, DType t, int64_t i, float x) {
  switch (t) {
    case DType::f32: static_cast<float*>(p)[i] = x; return;
    case DType::f16: static_cast<__half*>(p)[i] = __float2half_rn(x); return;
    case DType::bf16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(x); return;
    default: return;
  }
}

// Blocks for a grid-stride loop over n items: enough to fill the device, never more than
// the items need. `threads` per block. At most 32 blocks per SM (four waves of 256-thread
// blocks; the loop strides over the rest); 132 SMs (an H100 SXM) if the count reads 0.
inline unsigned grid_for(int64_t n, int threads, int sm_count) {
  const int64_t want = (n + threads - 1) / threads;
  const int64_t cap = int64_t(sm_count > 0 ? sm_count : 132) * 32;
  return unsigned(want < 1 ? 1 : (want < cap ? want : cap));
}

#define LR_GRID_STRIDE(i, n)                                                \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

// Sum and max over a warp by xor shuffles: every lane ends with the same bits (a + b and
// b + a round alike), so the result is deterministic whatever the lane.
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Records the first data error of a run (see DeviceError in cuda_kernel.h).
template <typename E>
__device__ __forceinline__ void report_error(E* err, int code, int arg, long long index, double value) {
  if (atomicCAS(&err->code, 0, code) == 0) {
    err->arg = arg;
    err->index = index;
    err->value = value;
  }
}

}  // namespace longrun::cuda
