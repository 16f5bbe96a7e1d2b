// Glue of the cpu softmax and layer_norm kernels (no intrinsics here): row planning, mask
// broadcasting, the causal band, threading over rows, reference fallbacks.
#include "cpu/normalization.h"

#include <algorithm>
#include <cstdint>

#include "cpu/cpu_isa.h"
#include "cpu/elementwise.h"

namespace longrun::cpu {
namespace {

// Rows per chunk: at least ~16K elements of work per task.
int64_t row_grain(int64_t row_len) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(row_len, 1)); }

// Softmax along the last axis of a contiguous f32 tensor; the mask (any shape that
// broadcasts to x, contiguous) is read through broadcast strides, with step 1 or 0 along
// the softmax axis. Other layouts (softmax over an inner axis, strided views) use the
// reference kernel.
Status run_softmax(const KernelArgs& args, const NormalizationIsa& isa) {
  const SoftmaxAttrs& at = args.attr<SoftmaxAttrs>();
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  const TensorView* mask = at.has_mask ? &args.inputs[1] : nullptr;
  const int rank = x.desc.rank();
  const bool fast = rank >= 1 && x.desc.normalize_axis(at.axis) == rank - 1 && x.desc.dtype() == DType::f32 &&
                    x.desc.is_contiguous() && y.desc.is_contiguous() &&
                    (mask == nullptr || (mask->desc.dtype() == DType::f32 && mask->desc.is_contiguous()));
  if (!fast) return reference_softmax(args);
  const int64_t n = x.desc.dim(rank - 1);
  const int64_t total = x.desc.numel();
  if (total == 0) return {};
  const int64_t rows = total / n;

  // Mask element strides over x's dims (0 where the mask broadcasts).
  int64_t mstride[kMaxRank] = {};
  int mask_step = 0;
  if (mask != nullptr) {
    const int shift = rank - mask->desc.rank();
    for (int i = shift; i < rank; ++i)
      mstride[i] = mask->desc.dim(i - shift) == 1 ? 0 : mask->desc.stride(i - shift);
    mask_step = mstride[rank - 1] != 0 ? 1 : 0;
  }
  // Causal: row i along axis -2 keeps columns j <= i + (n - causal_rows).
  const int64_t causal_rows = at.causal ? x.desc.dim(rank - 2) : 0;
  const float* px = x.ptr<const float>();
  const float* pm = mask != nullptr ? mask->ptr<const float>() : nullptr;
  float* py = y.ptr<float>();
  // Outputs too large for the cache are streamed by the rule of GEMM and layer_norm
  // (cpu_isa.h, rows_streamable): y's lines are then never read for ownership.
  const bool stream = rows_streamable(py, n, y.desc.nbytes());
  // Rows ahead to fetch during a row's exp pass (NormalizationIsa::softmax_row).
  const int64_t ahead = std::max<int64_t>(1, kRowFetchAheadFloats / std::max<int64_t>(n, 1));
  if (pm == nullptr && !at.causal && n <= (stream ? kSoftmaxStreamedRows : kSoftmaxCachedRow)) {
    parallel_ranges(args.pool, rows, row_grain(n), [&](int64_t r0, int64_t r1) {
      isa.softmax_rows(px + r0 * n, at.scale, n, r1 - r0, py + r0 * n, ahead, stream);
    });
    return {};
  }
  parallel_ranges(args.pool, rows, row_grain(n), [&](int64_t r0, int64_t r1) {
    // Odometer over the leading rank-1 dims, positioned at row r0.
    int64_t idx[kMaxRank] = {}, moff = 0;
    for (int64_t rem = r0, i = rank - 2; i >= 0; --i) {
      idx[i] = rem % x.desc.dim(int(i));
      rem /= x.desc.dim(int(i));
      moff += idx[i] * mstride[i];
    }
    for (int64_t r = r0; r < r1; ++r) {
      int64_t valid = n;
      if (at.causal) valid = std::clamp<int64_t>(idx[rank - 2] + (n - causal_rows) + 1, 0, n);
      isa.softmax_row(px + r * n, pm != nullptr ? pm + moff : nullptr, mask_step, at.scale, valid, n,
                      py + r * n, stream, r + ahead < r1 ? px + (r + ahead) * n : nullptr);
      for (int i = rank - 2; i >= 0; --i) {
        moff += mstride[i];
        if (++idx[i] < x.desc.dim(i)) break;
        moff -= idx[i] * mstride[i];
        idx[i] = 0;
      }
    }
  });
  return {};
}

bool param_type(const TensorView& v, int64_t d, ParamType* t) {
  if (v.desc.rank() != 1 || v.desc.dim(0) != d || (d > 1 && v.desc.stride(0) != 1)) return false;
  switch (v.desc.dtype()) {
    case DType::f32: *t = ParamType::f32; return true;
    case DType::f16: *t = ParamType::f16; return true;
    case DType::bf16: *t = ParamType::bf16; return true;
    default: return false;
  }
}

Status run_layer_norm(const KernelArgs& args, const NormalizationIsa& isa) {
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  const int rank = x.desc.rank();
  ParamType gt = ParamType::f32, bt = ParamType::f32;
  if (rank < 1 || x.desc.dtype() != DType::f32 || !x.desc.is_contiguous() || !y.desc.is_contiguous())
    return reference_layer_norm(args);
  const int64_t d = x.desc.dim(rank - 1);
  if (!param_type(args.inputs[1], d, &gt) || !param_type(args.inputs[2], d, &bt))
    return reference_layer_norm(args);
  const int64_t total = x.desc.numel();
  if (total == 0) return {};
  const float eps = args.attr<LayerNormAttrs>().eps;
  const float* px = x.ptr<const float>();
  float* py = y.ptr<float>();
  const void* gamma = args.inputs[1].data;
  const void* beta = args.inputs[2].data;
  // An output beyond the cache goes out with non-temporal stores (cpu_isa.h) when every row
  // starts on a line: its lines are then never read for ownership.
  // An input beyond the cache (the output's size) is also fetched rows ahead where the ISA
  // gains from that (normalization_impl.h, kRowFetchAheadFloats, kLayerNormFetchFromMemory).
  const RowFlow flow{rows_streamable(py, d, y.desc.nbytes()), y.desc.nbytes() >= stream_min_bytes()};
  parallel_ranges(args.pool, total / d, row_grain(d), [&](int64_t r0, int64_t r1) {
    isa.layer_norm_rows(px + r0 * d, py + r0 * d, r1 - r0, d, eps, gamma, gt, beta, bt, flow);
  });
  return {};
}

}  // namespace

Status cpu_softmax_f32_avx2(const KernelArgs& args) { return run_softmax(args, kNormalizationAvx2); }
Status cpu_layer_norm_f32_avx2(const KernelArgs& args) { return run_layer_norm(args, kNormalizationAvx2); }
Status cpu_softmax_f32_avx512(const KernelArgs& args) { return run_softmax(args, kNormalizationAvx512); }
Status cpu_layer_norm_f32_avx512(const KernelArgs& args) {
  return run_layer_norm(args, kNormalizationAvx512);
}

}  // namespace longrun::cpu
