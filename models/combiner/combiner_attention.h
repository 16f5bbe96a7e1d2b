// The four Combiner attention forms of docs/models.md#combiner on projected heads, composed from
// matmul / where / concat / softmax / segment_max / cummax (combiner_graph.h). Causal forms
// follow the JAX code (combiner/jax/model/layer.py), bidirectional forms the TF code
// (combiner/tf/approx_attention.py); key_padding gives docs/models.md#combiner-padding's "correct"
// bidirectional mode.
//
// Memory: fixed and axial materialise O(N (n + s)) logits per head, mixture O(N (3n + 3s)),
// logsparse O(N log N): what the official block algorithms hold, never [N, N].
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "combiner/combiner_graph.h"

namespace longrun::models::combiner {

enum class Variant { fixed, logsparse, axial, mixture };

enum class RowSummaryMode { proj, none, wsum };
// The config / TF names "proj", "none", "wsum"; parse gives nullopt for any other.
std::optional<RowSummaryMode> parse_row_summary(std::string_view name);
const char* row_summary_name(RowSummaryMode mode);

struct Form {
  Variant variant = Variant::fixed;
  bool causal = true;
  bool key_padding = false;        // bidirectional only
  Pooling pooling = Pooling::max;  // mixture summaries: max (JAX, paper) or sum (TF cumsum)
  // Axial key summary K~ (TF row_summary, docs/models.md#combiner-axial): 'proj' W2 LN'(W1 R + x) (JAX, TF
  // default), 'none' the key itself, 'wsum' the row attention's weighted sum of the keys.
  RowSummaryMode row_summary = RowSummaryMode::proj;
  int64_t segment = 1;  // s (not used by logsparse)
  int64_t log_len = 0;  // logsparse: ceil(log2(max_len - 1)) levels (docs/models.md#combiner-logsparse)
};

struct Heads {
  ValueId q = kNoValue;  // [B, H, Np, hd], already times 1/sqrt(hd)
  ValueId k = kNoValue;
  ValueId v = kNoValue;
  ValueId key_mask = kNoValue;  // u8 [B, Np], 1 = real token (key_padding only)
};

// Axial only: the learned row summary K~ = W2 LN'(W1 R + x) of R (rows layout
// [B, H, n, s, hd]) -> [B, H, n, s, hd].
using RowSummary = std::function<ValueId(ValueId r_rows)>;

// The attention output [B, H, Np, hd] (before the output projection). Np must be a multiple
// of the segment (except logsparse). `debug` (may be empty) names the summary keys
// intermediate: "<debug>.summary_keys" (fixed: max-pooled keys [B, H, n, hd]; axial: K~
// [B, H, Np, hd]; mixture: the pooled column-summary keys [B, H, Np, hd]).
ValueId combiner_attention(GraphContext& c, const Form& form, const Heads& heads,
                           const RowSummary& row_summary, const std::string& name, const std::string& debug);

}  // namespace longrun::models::combiner
