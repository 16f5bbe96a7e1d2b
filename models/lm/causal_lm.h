// The interface a decoder-only causal LM architecture implements for KV-cache generation
// (lm/causal_lm_generate.cpp). The step graph runs ONE token per row against fixed-capacity
// caches that are graph inputs ("past.*") and outputs ("present.*", same order), then logits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/architecture.h"

namespace longrun::models {

struct LmStepSpec {
  int64_t vocab = 0, max_len = 0, segment = 1;
  int64_t summaries = 0;  // M: per-segment summary slots (max_len / segment); logsparse: levels
  // Cache tensors, each [R, heads, dim2, head_dim]: dim2 = S (the slot capacity, grows) when
  // grows is true, else fixed. A growing cache is f32 or, in a bf16 session, bf16 (the step
  // graph follows its past input's dtype); a fixed one is f32.
  struct Cache {
    std::string name;
    int64_t heads = 0, dim2 = 0, head_dim = 0;
    bool grows = false;
  };
  std::vector<Cache> caches;
  std::vector<std::string> inputs;  // the host inputs the step takes (names below), in order
};

// Step graph inputs (spec.inputs, position p = u s + t): "ids" i64 [R, 1], "position" i64 [1],
// "write_slot" u8 [1, 1, S, 1] (slot p), "direct_keep" u8 [1, 1, 1, S] (slots u s .. p),
// "summary_keep" u8 [1, 1, 1, M] (segments r < u), "summary_write" u8 [1, 1, M, 1] (slot u),
// "segment_start" u8 [1, 1, 1, 1] (t == 0), "row_write" u8 [1, 1, s, 1] (slot t), "row_keep"
// u8 [1, 1, 1, s] (slots <= t), "row_slots" u8 [1, 1, S, 1] (slots of row u), "column_keep" u8
// [1, 1, 1, S] (slots r s + t with r < u), for logsparse levels l < M (block 2^l):
// "level_start" / "level_end" u8 [1, 1, M, 1] (p starts / ends its level-l block),
// "level_keep" u8 [1, 1, M, S] (slots of that block up to p), "level_use" u8 [1, 1, 1, M]
// (bit l of p), for mixture "first_row" u8 [1, 1, 1, 1] (u == 0), "column_rows_keep" u8
// [1, 1, s, S] (column c's slots in rows < u), "prev_row_keep" u8 [1, 1, 1, s] (u > 0, c != t),
// "top_left_keep" / "top_right_keep" u8 [1, 1, 1, S] (slots r s + t, r < u, when t > 0 /
// t < s - 1); then "past.<cache name>" for every cache. S is a
// multiple of s. Outputs: "present.<cache name>" in the same order, then
// "logits" f32 [R, 1, V].
class CausalLm {
 public:
  virtual ~CausalLm() = default;
  virtual LmStepSpec step_spec() const = 0;
  virtual void build_step(GraphContext& ctx) const = 0;
};

}  // namespace longrun::models
