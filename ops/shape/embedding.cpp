// Shape/dtype inference of embedding: table [V, D] gathered by ids of any shape.
#include <vector>

#include "longrun/ops/schema.h"
#include "shape/shape_util.h"

namespace longrun {
namespace {

Status infer_embedding_impl(std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  const TensorDesc& table = in[0];
  const TensorDesc& ids = in[1];
  LR_RETURN_IF_ERROR(shape::expect_dtype(0, table, {DType::f32, DType::f16, DType::bf16}));
  LR_RETURN_IF_ERROR(shape::expect_rank(0, table, 2, 2));
  LR_RETURN_IF_ERROR(shape::expect_dtype(1, ids, {DType::i32, DType::i64}));
  // The output appends D to the ids' dims, so the ids may have at most kMaxRank - 1 dims.
  LR_RETURN_IF_ERROR(shape::expect_rank(1, ids, 0, kMaxRank - 1));
  std::vector<int64_t> dims(ids.dims().begin(), ids.dims().end());
  dims.push_back(table.dim(1));
  LR_ASSIGN_OR_RETURN(out[0], shape::make_desc(DType::f32, dims));
  return {};
}

}  // namespace

Status infer_embedding(const OpAttrs&, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  return infer_embedding_impl(in, out).with_context("embedding");
}

}  // namespace longrun
