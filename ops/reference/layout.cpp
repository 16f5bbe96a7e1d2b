// Reference kernels for the layout ops. They copy element bytes unchanged (no round trip
// through double), so every dtype, NaN payload and -0 comes out bit-exact; only pad's fill
// value is converted into the dtype.
#include <cstdint>
#include <cstring>
#include <vector>

#include "longrun/ops/schema.h"
#include "reference/access.h"

namespace longrun {
namespace {

// Copies the element at `src_off` of `src` to `dst_off` of `dst` (offsets in elements).
void copy_element(const TensorView& dst, int64_t dst_off, const TensorView& src, int64_t src_off) {
  const int64_t es = int64_t(dtype_size(src.desc.dtype()));
  std::memcpy(static_cast<char*>(dst.data) + dst_off * es, static_cast<const char*>(src.data) + src_off * es,
              size_t(es));
}

// dst[idx] = src[idx] for every index of dst (same dims, any strides on both sides).
void copy_view(const TensorView& dst, const TensorView& src) {
  ref::for_each_index(dst.desc.dims(), [&](std::span<const int64_t> idx) {
    copy_element(dst, ref::offset_of(dst.desc, idx), src, ref::offset_of(src.desc, idx));
  });
}

std::vector<int64_t> copy_dims(const TensorDesc& d) { return {d.dims().begin(), d.dims().end()}; }

}  // namespace

Status reference_concat(const KernelArgs& args) {
  const auto& a = args.attr<ConcatAttrs>();
  const TensorView& y = args.outputs[0];
  const int axis = y.desc.normalize_axis(a.axis);
  int64_t start = 0;  // where the current input begins along axis in the output
  for (const TensorView& x : args.inputs) {
    std::vector<int64_t> out_idx(size_t(y.desc.rank()));
    ref::for_each_index(x.desc.dims(), [&](std::span<const int64_t> idx) {
      out_idx.assign(idx.begin(), idx.end());
      out_idx[size_t(axis)] += start;
      copy_element(y, ref::offset_of(y.desc, out_idx), x, ref::offset_of(x.desc, idx));
    });
    start += x.desc.dim(axis);
  }
  return {};
}

Status reference_slice(const KernelArgs& args) {
  const auto& a = args.attr<SliceAttrs>();
  const TensorView& x = args.inputs[0];
  // The slice is a strided view of x (Python clamping lives in TensorDesc::slice); copy it.
  int64_t offset = 0;
  LR_ASSIGN_OR_RETURN(const TensorDesc view, x.desc.slice(a.axis, a.start, a.end, a.step, &offset));
  const int64_t es = int64_t(dtype_size(x.desc.dtype()));
  copy_view(args.outputs[0], TensorView{view, static_cast<char*>(x.data) + offset * es});
  return {};
}

Status reference_pad(const KernelArgs& args) {
  const auto& a = args.attr<PadAttrs>();
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  const int axis = x.desc.normalize_axis(a.axis);
  const int64_t len = x.desc.dim(axis);
  // The fill value converted once into one element of the dtype.
  alignas(8) char fill_bytes[8] = {};
  const TensorView fill{TensorDesc(x.desc.dtype(), {1}), fill_bytes};
  ref::store(fill, 0, double(a.value));
  std::vector<int64_t> src_idx(size_t(x.desc.rank()));
  ref::for_each_index(y.desc.dims(), [&](std::span<const int64_t> idx) {
    const int64_t j = idx[size_t(axis)] - a.before;
    const int64_t dst = ref::offset_of(y.desc, idx);
    if (j < 0 || j >= len) {
      copy_element(y, dst, fill, 0);
      return;
    }
    src_idx.assign(idx.begin(), idx.end());
    src_idx[size_t(axis)] = j;
    copy_element(y, dst, x, ref::offset_of(x.desc, src_idx));
  });
  return {};
}

Status reference_transpose(const KernelArgs& args) {
  const auto& a = args.attr<TransposeAttrs>();
  const TensorView& x = args.inputs[0];
  // y[i0, i1, ...] = x[...] with y.dims[i] = x.dims[perm[i]]: the permuted view of x has
  // exactly y's dims, so a plain element-wise copy does it.
  LR_ASSIGN_OR_RETURN(const TensorDesc view,
                      x.desc.permute(std::span<const int>(a.perm.data(), size_t(a.rank))));
  copy_view(args.outputs[0], TensorView{view, x.data});
  return {};
}

Status reference_reshape(const KernelArgs& args) {
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  // Row-major order on both sides: walk both index spaces in step.
  const std::vector<int64_t> ydims = copy_dims(y.desc);
  std::vector<int64_t> yidx(ydims.size(), 0);
  ref::for_each_index(x.desc.dims(), [&](std::span<const int64_t> idx) {
    copy_element(y, ref::offset_of(y.desc, yidx), x, ref::offset_of(x.desc, idx));
    for (size_t i = ydims.size(); i-- > 0;) {
      if (++yidx[i] < ydims[i]) break;
      yidx[i] = 0;
    }
  });
  return {};
}

Status reference_roll(const KernelArgs& args) {
  const auto& a = args.attr<RollAttrs>();
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  const int axis = x.desc.normalize_axis(a.axis);
  const int64_t n = x.desc.dim(axis);
  if (n == 0) return {};
  const int64_t shift = ((a.shift % n) + n) % n;  // in [0, n), also for negative shifts
  std::vector<int64_t> src_idx(size_t(x.desc.rank()));
  // y[(i + shift) mod n] = x[i]  <=>  y[j] = x[(j - shift) mod n].
  ref::for_each_index(y.desc.dims(), [&](std::span<const int64_t> idx) {
    src_idx.assign(idx.begin(), idx.end());
    src_idx[size_t(axis)] = (idx[size_t(axis)] + n - shift) % n;
    copy_element(y, ref::offset_of(y.desc, idx), x, ref::offset_of(x.desc, src_idx));
  });
  return {};
}

Status reference_where(const KernelArgs& args) {
  const TensorView& cond = args.inputs[0];
  const TensorView& a = args.inputs[1];
  const TensorView& b = args.inputs[2];
  const TensorView& y = args.outputs[0];
  ref::for_each_index(y.desc.dims(), [&](std::span<const int64_t> idx) {
    const bool pick_a = ref::load_int(cond, ref::broadcast_offset(cond.desc, idx)) != 0;
    const TensorView& src = pick_a ? a : b;
    copy_element(y, ref::offset_of(y.desc, idx), src, ref::broadcast_offset(src.desc, idx));
  });
  return {};
}

}  // namespace longrun
