// Embedding gather of the cpu backend (see embedding.h).
#include "backends/cpu/embedding.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/elementwise.h"

namespace longrun::cpu {
namespace {

int64_t id_at(const TensorView& ids, int64_t i) {
  if (ids.desc.dtype() == DType::i32) return ids.ptr<const int32_t>()[i];
  return ids.ptr<const int64_t>()[i];
}

Status run_embedding(const KernelArgs& args, const ElementwiseIsa& isa) {
  const TensorView& table = args.inputs[0];
  const TensorView& ids = args.inputs[1];
  const TensorView& y = args.outputs[0];
  const DType tt = table.desc.dtype();
  if (!table.desc.is_contiguous() || !ids.desc.is_contiguous() || !y.desc.is_contiguous() ||
      (ids.desc.dtype() != DType::i32 && ids.desc.dtype() != DType::i64) ||
      (tt != DType::f32 && tt != DType::f16 && tt != DType::bf16))
    return reference_embedding(args);
  const int64_t v = table.desc.dim(0), d = table.desc.dim(1), count = ids.desc.numel();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t id = id_at(ids, i);
    if (id < 0 || id >= v) return reference_embedding(args);  // names the first bad id
  }
  if (d == 0 || count == 0) return {};
  const char* rows = static_cast<const char*>(table.data);
  const int64_t row_bytes = d * int64_t(dtype_size(tt));
  float* out = y.ptr<float>();
  parallel_ranges(args.pool, count, std::max<int64_t>(1, 16384 / d), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const char* src = rows + id_at(ids, i) * row_bytes;
      float* dst = out + i * d;
      switch (tt) {
        case DType::f16: isa.f16_to_f32(reinterpret_cast<const uint16_t*>(src), dst, d); break;
        case DType::bf16: isa.bf16_to_f32(reinterpret_cast<const uint16_t*>(src), dst, d); break;
        default: std::memcpy(dst, src, size_t(row_bytes)); break;
      }
    }
  });
  return {};
}

}  // namespace

Status cpu_embedding_avx2(const KernelArgs& args) { return run_embedding(args, kElementwiseAvx2); }
Status cpu_embedding_avx512(const KernelArgs& args) { return run_embedding(args, kElementwiseAvx512); }

}  // namespace longrun::cpu
