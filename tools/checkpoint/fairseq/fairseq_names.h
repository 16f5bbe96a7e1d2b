// fairseq state-dict names -> the current fairseq names, as pure functions over names and
// shapes (CHECKPOINTS.md §3.1). Independent of how the checkpoint was read: the PyTorch
// reader lists (name, shape) pairs, plan_state_dict() says what to keep, rename, drop or split,
// and split_rows() cuts a fused in_proj tensor's bytes into q/k/v views.
//
// The rules replicate fairseq's upgrade_state_dict_named methods (transformer encoder/decoder
// layers, MultiheadAttention, the sinusoidal position cache, decoder.embed_out) and the
// buffers every converter drops (*.version, *._float_tensor). They are data: a table of
// NameRule rows, so an architecture built on fairseq's transformer (Lasformer) appends rows
// instead of code.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "longrun/status.h"

namespace longrun::checkpoint::fairseq {

enum class RuleAction : uint8_t {
  rename,     // one target name
  drop,       // not a parameter the runtime needs; `reason` says why
  split_qkv,  // rows [0:D) -> targets[0], [D:2D) -> targets[1], [2D:3D) -> targets[2]
};

// `pattern` is a dotted name where "*" matches exactly one segment and "**" one or more; the
// captures fill "$1", "$2", ... in the targets, in order.
struct NameRule {
  std::string_view pattern;
  RuleAction action;
  std::array<std::string_view, 3> targets;  // rename: [0]; split_qkv: all three; drop: none
  std::string_view reason;
};

// The fairseq transformer / BART rules (first match wins).
std::span<const NameRule> transformer_rules();

// Matches `name` against `pattern`; the captured segments (joined with '.') on success.
std::optional<std::vector<std::string>> match_pattern(std::string_view pattern, std::string_view name);

struct SourceParam {
  std::string name;
  std::vector<int64_t> shape;
};

struct PlanEntry {
  std::string source;
  enum class Kind : uint8_t { keep, rename, drop, split_qkv } kind = Kind::keep;
  std::vector<std::string> targets;  // keep/rename: 1; split_qkv: 3 (q, k, v); drop: 0
  std::vector<std::vector<int64_t>> target_shapes;
  std::string reason;  // drop
};

// One entry per source tensor, in source order. Names no rule matches are kept unchanged (the
// architecture mapper decides whether it wants them). Fails when a fused in_proj tensor is not
// [3D, D] / [3D], or when two sources would produce the same target name (e.g. both
// layers.0.layer_norms.0.weight and layers.0.self_attn_layer_norm.weight).
Result<std::vector<PlanEntry>> plan_state_dict(std::span<const SourceParam> params,
                                               std::span<const NameRule> rules = transformer_rules());

// Splits the row-major bytes of a [parts*R, ...] tensor into `parts` equal row blocks (views,
// no copy); fails when the rows do not divide or the byte size disagrees with the shape.
Result<std::vector<std::span<const std::byte>>> split_rows(std::span<const std::byte> bytes,
                                                           std::span<const int64_t> shape, size_t elem_size,
                                                           size_t parts, std::string_view name);

}  // namespace longrun::checkpoint::fairseq
