// Layout kernels of the cpu backend (see layout.h): byte copies in the largest contiguous
// blocks each op allows; chunks of ~64 KB or more per task.
#include "backends/cpu/layout.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/elementwise.h"

namespace longrun::cpu {
namespace {

constexpr int64_t kChunkBytes = 65536;

int64_t grain_for(int64_t bytes_per_unit) {
  return std::max<int64_t>(1, kChunkBytes / std::max<int64_t>(bytes_per_unit, 1));
}

bool contiguous(const KernelArgs& args) {
  for (const TensorView& v : args.inputs)
    if (!v.desc.is_contiguous()) return false;
  return args.outputs[0].desc.is_contiguous();
}

// Products of the dims before and after `axis`.
void split_at(const TensorDesc& d, int axis, int64_t* outer, int64_t* inner) {
  *outer = 1, *inner = 1;
  for (int i = 0; i < axis; ++i) *outer *= d.dim(i);
  for (int i = axis + 1; i < d.rank(); ++i) *inner *= d.dim(i);
}

const char* bytes_of(const TensorView& v) { return static_cast<const char*>(v.data); }
char* bytes_of_out(const KernelArgs& args) { return static_cast<char*>(args.outputs[0].data); }

// Strided copy of n elements of `es` bytes (1, 2, 4 or 8), typed so the compiler can move
// whole elements.
template <typename T>
void gather_t(char* dst, const char* src, int64_t n, int64_t src_step) {
  T* d = reinterpret_cast<T*>(dst);
  for (int64_t j = 0; j < n; ++j) std::memcpy(d + j, src + j * src_step * int64_t(sizeof(T)), sizeof(T));
}
void gather(char* dst, const char* src, int64_t n, int64_t src_step, size_t es) {
  switch (es) {
    case 1: return gather_t<uint8_t>(dst, src, n, src_step);
    case 2: return gather_t<uint16_t>(dst, src, n, src_step);
    case 4: return gather_t<uint32_t>(dst, src, n, src_step);
    default: return gather_t<uint64_t>(dst, src, n, src_step);
  }
}

}  // namespace

Status cpu_concat(const KernelArgs& args) {
  if (!contiguous(args)) return reference_concat(args);
  const TensorDesc& y = args.outputs[0].desc;
  if (y.numel() == 0) return {};
  const int axis = y.normalize_axis(args.attr<ConcatAttrs>().axis);
  int64_t outer = 0, inner = 0;
  split_at(y, axis, &outer, &inner);
  const int64_t es = int64_t(dtype_size(y.dtype()));
  const int64_t yrow = y.dim(axis) * inner * es;
  char* out = bytes_of_out(args);
  parallel_ranges(args.pool, outer, grain_for(yrow), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      int64_t at = o * yrow;
      for (const TensorView& x : args.inputs) {
        const int64_t xrow = x.desc.dim(axis) * inner * es;
        if (xrow > 0) std::memcpy(out + at, bytes_of(x) + o * xrow, size_t(xrow));
        at += xrow;
      }
    }
  });
  return {};
}

Status cpu_slice(const KernelArgs& args) {
  if (!contiguous(args)) return reference_slice(args);
  const auto& a = args.attr<SliceAttrs>();
  const TensorView& x = args.inputs[0];
  const TensorDesc& y = args.outputs[0].desc;
  if (y.numel() == 0) return {};
  const int axis = x.desc.normalize_axis(a.axis);
  int64_t offset = 0;  // element offset of the first selected row: start * inner
  LR_ASSIGN_OR_RETURN(const TensorDesc view, x.desc.slice(a.axis, a.start, a.end, a.step, &offset));
  (void)view;
  int64_t outer = 0, inner = 0;
  split_at(x.desc, axis, &outer, &inner);
  const int64_t es = int64_t(dtype_size(x.desc.dtype()));
  const int64_t n = x.desc.dim(axis), m = y.dim(axis);
  const int64_t row = inner * es;  // bytes of one position along axis
  const char* in = bytes_of(x) + offset * es;
  char* out = bytes_of_out(args);
  parallel_ranges(args.pool, outer, grain_for(m * row), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const char* src = in + o * n * row;
      char* dst = out + o * m * row;
      if (a.step == 1) {
        std::memcpy(dst, src, size_t(m * row));
      } else if (inner == 1) {
        gather(dst, src, m, a.step, size_t(es));
      } else {
        for (int64_t i = 0; i < m; ++i) std::memcpy(dst + i * row, src + i * a.step * row, size_t(row));
      }
    }
  });
  return {};
}

Status cpu_pad(const KernelArgs& args) {
  if (!contiguous(args)) return reference_pad(args);
  const auto& a = args.attr<PadAttrs>();
  const TensorView& x = args.inputs[0];
  const TensorDesc& y = args.outputs[0].desc;
  if (y.numel() == 0) return {};
  const int axis = x.desc.normalize_axis(a.axis);
  int64_t outer = 0, inner = 0;
  split_at(x.desc, axis, &outer, &inner);
  const DType t = x.desc.dtype();
  const int64_t es = int64_t(dtype_size(t));
  // The fill element, converted as the reference does (via double; infer checked that the
  // value is representable).
  alignas(8) char fill[8] = {};
  const double v = double(a.value);
  switch (t) {
    case DType::f32: *reinterpret_cast<float*>(fill) = float(v); break;
    case DType::f16: *reinterpret_cast<uint16_t*>(fill) = f32_to_f16(float(v)); break;
    case DType::bf16: *reinterpret_cast<uint16_t*>(fill) = f32_to_bf16(float(v)); break;
    case DType::i32: *reinterpret_cast<int32_t*>(fill) = int32_t(v); break;
    case DType::i64: *reinterpret_cast<int64_t*>(fill) = int64_t(v); break;
    case DType::u8: *reinterpret_cast<uint8_t*>(fill) = uint8_t(v); break;
    case DType::i8: *reinterpret_cast<int8_t*>(fill) = int8_t(v); break;
  }
  const int64_t n = x.desc.dim(axis), len = y.dim(axis);
  const int64_t row = inner * es;
  const char* in = bytes_of(x);
  char* out = bytes_of_out(args);
  auto fill_elems = [&](char* dst, int64_t count) {
    for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * es, fill, size_t(es));
  };
  parallel_ranges(args.pool, outer, grain_for(len * row), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      char* dst = out + o * len * row;
      fill_elems(dst, a.before * inner);
      if (n > 0) std::memcpy(dst + a.before * row, in + o * n * row, size_t(n * row));
      fill_elems(dst + (a.before + n) * row, a.after * inner);
    }
  });
  return {};
}

namespace {

// dst[a * B + b] = src[a + b * sb] for a in [a0, a1), b in [0, B), in kTile x kTile tiles so
// that the kTile source lines of a tile stay in cache while they are read across.
constexpr int64_t kTile = 16;
template <typename T>
void transpose_rows(const char* src_bytes, int64_t sb, char* dst_bytes, int64_t a0, int64_t a1, int64_t B) {
  const T* src = reinterpret_cast<const T*>(src_bytes);
  T* dst = reinterpret_cast<T*>(dst_bytes);
  for (int64_t b0 = 0; b0 < B; b0 += kTile) {
    const int64_t b1 = std::min(B, b0 + kTile);
    for (int64_t a = a0; a < a1; ++a)
      for (int64_t b = b0; b < b1; ++b) dst[a * B + b] = src[a + b * sb];
  }
}

// The last two output dims swap x's innermost dim with a strided one (a plain 2-D transpose
// per plane): tiled, in parallel over (plane, block of kTile output rows).
Status transpose_planes(const KernelArgs& args, const int64_t* src_stride, size_t es) {
  const TensorDesc& y = args.outputs[0].desc;
  const int r = y.rank();
  const int64_t A = y.dim(r - 2), B = y.dim(r - 1), sb = src_stride[r - 1];
  const int64_t row_blocks = (A + kTile - 1) / kTile;
  int64_t planes = 1;
  for (int i = 0; i < r - 2; ++i) planes *= y.dim(i);
  const char* in = bytes_of(args.inputs[0]);
  char* out = bytes_of_out(args);
  parallel_ranges(
      args.pool, planes * row_blocks, grain_for(kTile * B * int64_t(es)), [&](int64_t u0, int64_t u1) {
        for (int64_t u = u0; u < u1; ++u) {
          const int64_t plane = u / row_blocks, a0 = (u % row_blocks) * kTile, a1 = std::min(A, a0 + kTile);
          int64_t off = 0;  // element offset of the plane in x
          for (int64_t rem = plane, i = r - 3; i >= 0; --i) {
            off += (rem % y.dim(int(i))) * src_stride[i];
            rem /= y.dim(int(i));
          }
          const char* src = in + off * int64_t(es);
          char* dst = out + plane * A * B * int64_t(es);
          switch (es) {
            case 1: transpose_rows<uint8_t>(src, sb, dst, a0, a1, B); break;
            case 2: transpose_rows<uint16_t>(src, sb, dst, a0, a1, B); break;
            case 4: transpose_rows<uint32_t>(src, sb, dst, a0, a1, B); break;
            default: transpose_rows<uint64_t>(src, sb, dst, a0, a1, B); break;
          }
        }
      });
  return {};
}

}  // namespace

// y[i0, .., ir] = x[...] with y.dims[i] = x.dims[perm[i]]: trailing output dims that perm
// leaves in place (perm[i] == i) form contiguous blocks of x (memcpy); a swap of x's innermost
// dim into the last-but-one output dim is a tiled 2-D transpose per plane; otherwise the
// innermost output dim is a strided gather. The leading dims are walked with an odometer.
Status cpu_transpose(const KernelArgs& args) {
  if (!contiguous(args)) return reference_transpose(args);
  const auto& a = args.attr<TransposeAttrs>();
  const TensorView& x = args.inputs[0];
  const TensorDesc& y = args.outputs[0].desc;
  if (y.numel() == 0) return {};
  const int r = y.rank();
  const int64_t es = int64_t(dtype_size(y.dtype()));
  int64_t src_stride[kMaxRank] = {};  // x's element stride for each output dim
  for (int i = 0; i < r; ++i) src_stride[i] = x.desc.stride(a.perm[size_t(i)]);
  int t = r;  // output dims [t, r) are x's trailing dims in order: one contiguous block of x
  while (t > 0 && a.perm[size_t(t - 1)] == t - 1) --t;
  int64_t block = 1;
  for (int i = t; i < r; ++i) block *= y.dim(i);
  // With no contiguous block, the innermost output dim becomes a gathered run.
  const bool gathered = t == r;
  const int walk = gathered ? r - 1 : t;  // odometer dims [0, walk)
  const int64_t run = gathered ? y.dim(r - 1) : block;
  const int64_t run_step = gathered ? src_stride[r - 1] : 1;
  int64_t runs = 1;
  for (int i = 0; i < walk; ++i) runs *= y.dim(i);
  const char* in = bytes_of(x);
  char* out = bytes_of_out(args);
  if (gathered && r >= 2 && src_stride[r - 2] == 1) return transpose_planes(args, src_stride, size_t(es));
  parallel_ranges(args.pool, runs, grain_for(run * es), [&](int64_t u0, int64_t u1) {
    int64_t idx[kMaxRank] = {}, off = 0;
    for (int64_t rem = u0, i = walk - 1; i >= 0; --i) {
      idx[i] = rem % y.dim(int(i));
      rem /= y.dim(int(i));
      off += idx[i] * src_stride[i];
    }
    for (int64_t u = u0; u < u1; ++u) {
      char* dst = out + u * run * es;
      if (run_step == 1)
        std::memcpy(dst, in + off * es, size_t(run * es));
      else
        gather(dst, in + off * es, run, run_step, size_t(es));
      for (int i = walk - 1; i >= 0; --i) {
        off += src_stride[i];
        if (++idx[i] < y.dim(i)) break;
        off -= idx[i] * src_stride[i];
        idx[i] = 0;
      }
    }
  });
  return {};
}

Status cpu_reshape(const KernelArgs& args) {
  if (!contiguous(args)) return reference_reshape(args);
  const TensorView& x = args.inputs[0];
  const int64_t bytes = x.desc.nbytes();
  if (bytes == 0 || x.data == args.outputs[0].data) return {};
  const char* in = bytes_of(x);
  char* out = bytes_of_out(args);
  parallel_ranges(args.pool, bytes, kChunkBytes,
                  [&](int64_t b, int64_t e) { std::memcpy(out + b, in + b, size_t(e - b)); });
  return {};
}

// y[(i + shift) mod n] = x[i]: per outer slab two block copies.
Status cpu_roll(const KernelArgs& args) {
  if (!contiguous(args)) return reference_roll(args);
  const auto& a = args.attr<RollAttrs>();
  const TensorView& x = args.inputs[0];
  if (x.desc.numel() == 0) return {};
  const int axis = x.desc.normalize_axis(a.axis);
  int64_t outer = 0, inner = 0;
  split_at(x.desc, axis, &outer, &inner);
  const int64_t n = x.desc.dim(axis);
  const int64_t s = ((a.shift % n) + n) % n;
  const int64_t row = inner * int64_t(dtype_size(x.desc.dtype()));
  const char* in = bytes_of(x);
  char* out = bytes_of_out(args);
  parallel_ranges(args.pool, outer, grain_for(n * row), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const char* src = in + o * n * row;
      char* dst = out + o * n * row;
      std::memcpy(dst + s * row, src, size_t((n - s) * row));
      if (s > 0) std::memcpy(dst, src + (n - s) * row, size_t(s * row));
    }
  });
  return {};
}

namespace {

// y[i] = c[i * sc] ? a[i * sa] : b[i * sb] over one broadcast run.
template <typename T>
void select_run(const uint8_t* c, int sc, const char* a, int sa, const char* b, int sb, char* y, int64_t n) {
  const T* pa = reinterpret_cast<const T*>(a);
  const T* pb = reinterpret_cast<const T*>(b);
  T* py = reinterpret_cast<T*>(y);
  if (sc && sa && sb) {
    for (int64_t i = 0; i < n; ++i) py[i] = c[i] ? pa[i] : pb[i];
    return;
  }
  for (int64_t i = 0; i < n; ++i) py[i] = c[i * sc] ? pa[i * sa] : pb[i * sb];
}

}  // namespace

Status cpu_where(const KernelArgs& args) {
  if (!contiguous(args)) return reference_where(args);
  const TensorDesc& y = args.outputs[0].desc;
  if (y.numel() == 0) return {};
  const TensorDesc descs[3] = {args.inputs[0].desc, args.inputs[1].desc, args.inputs[2].desc};
  const BroadcastPlan p = plan_broadcast(descs, y);
  const int64_t es = int64_t(dtype_size(y.dtype()));
  const auto* c = static_cast<const uint8_t*>(args.inputs[0].data);
  const char* a = bytes_of(args.inputs[1]);
  const char* b = bytes_of(args.inputs[2]);
  char* out = bytes_of_out(args);
  parallel_ranges(args.pool, p.runs(), grain_for(p.inner * es), [&](int64_t u0, int64_t u1) {
    BroadcastCursor cur(p, u0);
    for (int64_t u = u0; u < u1; ++u, cur.next()) {
      const uint8_t* pc = c + cur.offset(0);
      const char* pa = a + cur.offset(1) * es;
      const char* pb = b + cur.offset(2) * es;
      char* py = out + u * p.inner * es;
      switch (es) {
        case 1: select_run<uint8_t>(pc, p.step[0], pa, p.step[1], pb, p.step[2], py, p.inner); break;
        case 2: select_run<uint16_t>(pc, p.step[0], pa, p.step[1], pb, p.step[2], py, p.inner); break;
        case 4: select_run<uint32_t>(pc, p.step[0], pa, p.step[1], pb, p.step[2], py, p.inner); break;
        default: select_run<uint64_t>(pc, p.step[0], pa, p.step[1], pb, p.step[2], py, p.inner); break;
      }
    }
  });
  return {};
}

}  // namespace longrun::cpu
