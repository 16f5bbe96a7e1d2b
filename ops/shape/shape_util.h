// Helpers shared by the shape/dtype inference functions of ops/shape/*.cpp.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "longrun/status.h"
#include "longrun/tensor_desc.h"

namespace longrun::shape {

// "input 1 (f32[2,3])": how messages name an input.
std::string describe_input(int index, const TensorDesc& d);

// Fails unless input `index` has one of the given dtypes.
Status expect_dtype(int index, const TensorDesc& d, std::initializer_list<DType> allowed);
// Fails unless rank is in [lo, hi].
Status expect_rank(int index, const TensorDesc& d, int lo, int hi);
// Normalises `axis` for `d` or fails naming the attribute.
Result<int> resolve_axis(int index, const TensorDesc& d, int axis, const char* attr = "axis");

// Numpy broadcasting of two shapes (right-aligned; a dim of 1 stretches).
Result<std::vector<int64_t>> broadcast_dims(std::span<const int64_t> a, std::span<const int64_t> b);

// "[2,3,4]": how messages print a shape.
std::string dims_string(std::span<const int64_t> dims);

// Fails unless d.dim(axis) == expected; `what` names the dimension in the message
// ("input 1 (f32[4,3]): dim 0 (K) expected 5, found 4").
Status expect_dim(int index, const TensorDesc& d, int axis, int64_t expected, const std::string& what);

// Fails unless `d` broadcasts (numpy rules) to exactly `target`: rank <= target rank and
// every dim of d is 1 or equal to the matching (right-aligned) dim of target.
Status expect_broadcasts_to(int index, const TensorDesc& d, std::span<const int64_t> target);

// Validated contiguous desc (rank, overflow).
Result<TensorDesc> make_desc(DType dtype, std::span<const int64_t> dims);

}  // namespace longrun::shape
