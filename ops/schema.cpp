// The schema table, generated from op_list.inc plus the per-op arity/aliasing rules below.
#include "longrun/ops/schema.h"

#include <array>
#include <string>

#include "longrun/op_subset.h"  // generated from LONGRUN_OPS

namespace longrun {
namespace {

struct Arity {
  int min_inputs, max_inputs, inplace_input;
  bool is_view;
};

// Arity and aliasing per op. Kept next to the table so that one place says it all.
constexpr Arity arity_of(OpKind k) {
  switch (k) {
    case OpKind::matmul: return {2, 4, -1, false};
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul: return {2, 2, 0, false};
    case OpKind::scale:
    case OpKind::exp:
    case OpKind::tanh:
    case OpKind::relu:
    case OpKind::gelu:
    case OpKind::gelu_tanh: return {1, 1, 0, false};
    case OpKind::softmax: return {1, 2, 0, false};
    case OpKind::layer_norm: return {3, 3, 0, false};
    case OpKind::embedding: return {2, 2, -1, false};
    case OpKind::concat: return {1, -1, -1, false};
    case OpKind::reshape: return {1, 1, -1, true};
    case OpKind::where: return {3, 3, -1, false};
    case OpKind::attention: return {3, 4, -1, false};
    case OpKind::matmul_topk: return {2, 4, -1, false};
    case OpKind::sparse_attention: return {4, 4, -1, false};
    case OpKind::axial_attention: return {5, 6, -1, false};
    default: return {1, 1, -1, false};
  }
}

const std::array<OpSchema, kNumOps>& table() {
  static const std::array<OpSchema, kNumOps> t = [] {
    std::array<OpSchema, kNumOps> s{};
    int i = 0;
#define LR_OP(name, Attrs)                                                                                 \
  {                                                                                                        \
    const Arity a = arity_of(OpKind::name);                                                                \
    s[i++] =                                                                                               \
        OpSchema{#name,           a.min_inputs, a.max_inputs,  1,                                          \
                 a.inplace_input, a.is_view,    &infer_##name, LR_IF_OP_ENABLED(name, &reference_##name)}; \
  }
#include "longrun/ops/op_list.inc"
    return s;
  }();
  return t;
}

// Index of each op's attrs type inside OpAttrs (0 is monostate).
constexpr size_t attrs_index(OpKind k) { return size_t(k) + 1; }

}  // namespace

std::string_view op_name(OpKind kind) { return table()[size_t(kind)].name; }

const OpSchema& op_schema(OpKind kind) { return table()[size_t(kind)]; }

bool op_in_build(OpKind kind) {
  static constexpr bool kInBuild[] = {
#define LR_OP(name, Attrs) LONGRUN_OP_ENABLED_##name != 0,
#include "longrun/ops/op_list.inc"
  };
  return size_t(kind) < std::size(kInBuild) && kInBuild[size_t(kind)];
}

std::string_view ops_build_setting() { return LONGRUN_OPS_SETTING; }

Status infer_op(OpKind kind, const OpAttrs& attrs, std::span<const TensorDesc> inputs,
                std::vector<TensorDesc>* outputs) {
  if (size_t(kind) >= size_t(kNumOps))
    return invalid_argument("unknown op kind " + std::to_string(int(kind)));
  const OpSchema& s = op_schema(kind);
  if (attrs.index() != attrs_index(kind))
    return invalid_argument(std::string(s.name) + ": attribute struct does not belong to this op");
  const int n = int(inputs.size());
  if (n < s.min_inputs || (s.max_inputs >= 0 && n > s.max_inputs)) {
    std::string expected = s.max_inputs < 0 ? "at least " + std::to_string(s.min_inputs)
                           : s.min_inputs == s.max_inputs
                               ? std::to_string(s.min_inputs)
                               : std::to_string(s.min_inputs) + ".." + std::to_string(s.max_inputs);
    return invalid_argument(std::string(s.name) + ": expected " + expected + " inputs, found " +
                            std::to_string(n));
  }
  // attention with_lse is the one op whose attributes add an output.
  const auto* at = std::get_if<AttentionAttrs>(&attrs);
  outputs->assign(size_t(s.num_outputs + (at != nullptr && at->with_lse ? 1 : 0)), TensorDesc{});
  Status st = s.infer(attrs, inputs, *outputs);
  if (!st.ok() && st.message().rfind(std::string(s.name) + ":", 0) != 0) return st.with_context(s.name);
  return st;
}

}  // namespace longrun
