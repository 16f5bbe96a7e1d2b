// Flax -> PyTorch layout conventions (docs/checkpoints.md#flax-layout-conventions), as small functions over
// one tensor each. The mapping tables (Combiner, HF Flax models) call these; `name` (the Flax path) only
// appears in messages. Element bytes are moved as is, so any dtype works.
//
//   nn.Dense       kernel [in, out]          -> weight [out, in]
//   DenseGeneral   kernel [D, H, hd]         -> weight [H*hd, D]       (into heads; also [D, R, H, hd])
//                  kernel [H, hd, O]         -> weight [O, H*hd]       (out of heads, axis=(-2,-1))
//                  bias   [H, hd]            -> bias   [H*hd]
//   nn.Embed       embedding [V, D]          -> weight [V, D]          (same layout)
//   nn.LayerNorm   scale [D] / bias [D]      -> weight [D] / bias [D]  (Flax's default eps is 1e-6)
#pragma once

#include <optional>
#include <string_view>

#include "flax_tree.h"

namespace longrun::checkpoint {

// General form: a kernel whose first `in_axes` axes are the inputs and the rest the outputs,
// [i_0..i_{k-1}, o_0..] -> [prod(o), prod(i)] (flatten both groups, then transpose).
// Requires 1 <= in_axes < rank.
Result<FlaxTensor> kernel_to_torch_weight(const FlaxTensor& kernel, size_t in_axes, std::string_view name);

// nn.Dense: rank 2, [in, out] -> [out, in].
Result<FlaxTensor> dense_kernel_to_torch(const FlaxTensor& kernel, std::string_view name);
// DenseGeneral into heads: rank >= 3 with one input axis, [D, ..., H, hd] -> [prod(...)*H*hd, D].
Result<FlaxTensor> heads_in_kernel_to_torch(const FlaxTensor& kernel, std::string_view name);
// DenseGeneral out of heads: rank 3, [H, hd, O] -> [O, H*hd].
Result<FlaxTensor> heads_out_kernel_to_torch(const FlaxTensor& kernel, std::string_view name);
// Any-rank bias (e.g. [H, hd]) -> rank 1 [H*hd]; a rank-1 bias is returned unchanged.
Result<FlaxTensor> flatten_bias(const FlaxTensor& bias, std::string_view name);
// nn.Embed: checks rank 2 [V, D]; the bytes are shared, not copied.
Result<FlaxTensor> embed_to_torch(const FlaxTensor& embedding, std::string_view name);
// nn.LayerNorm scale or bias: checks rank 1 (and `features` when > 0); bytes shared.
Result<FlaxTensor> layer_norm_param_to_torch(const FlaxTensor& param, std::string_view name,
                                             int64_t features = 0);

// The PyTorch leaf name for a Flax parameter leaf: kernel -> weight, scale -> weight,
// embedding -> weight, bias -> bias; nullopt for anything else.
std::optional<std::string_view> torch_param_name(std::string_view flax_leaf);

// Widens or narrows a float tensor (f16, bf16, f32, f64) to f32, round-to-nearest for f64;
// refuses integer and bool tensors.
Result<FlaxTensor> to_f32(const FlaxTensor& x, std::string_view name);

}  // namespace longrun::checkpoint
