// Lasformer's lightweight top-k key selection (docs/models.md#lasformer, paper eq. 1-2 and 8), built
// as one matmul_topk so that attention then costs O(N k) through sparse_attention:
//
//   Qs = Xq Wsq^T (+ bsq)   Ks = Xk Wsk^T (+ bsk)          Wsq, Wsk [ds, D] ("select_q/k")
//   As = Qs Ks^T / sqrt(ds) + masks (key padding; causal: j > i + Nk - Nq) = -inf
//   k(n) = min(n, max(ceil(rho n - 1e-9), k_min))   n = the row's number of unmasked keys
//   Sel_i = the k(n_i) largest of As_i (ties: lower index), as i32 indices; slots past
//           k(n_i) are -1 (sparse_attention skips them).
// The -1e-9 keeps k(100) = 5 at rho = 0.05 (0.05 * 100 = 5.000000000000001 in binary).
// One matmul_topk node computes Sel: it never forms As (the backends reduce each row's
// scores to its top k tile by tile, so the memory is O(Nq k) at any length), masked keys and
// keys beyond a causal query's reach are never selected, and its row_k input (k(n_i) from an
// [Nk + 1] table over the running count of valid keys) blanks each row's surplus slots. The
// output has the widest k(Nk) slots per row.
//
// Group sharing (eq. 8) lives in the encoder-decoder: the lowest layer of every group of
// group_size consecutive layers computes Sel from its own attention inputs and carries the
// parameters; the others reuse it.
//
// It lives in seq2seq/ because the encoder-decoder applies it wherever Seq2SeqSpec::selection
// is enabled; lasformer/ only fills that spec and the parameter table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/architecture.h"

namespace longrun::models {

struct SelectionSpec {
  bool enabled = false;
  int64_t group_size = 3;  // r: layers sharing one selection
  int64_t dim = 64;        // ds: the selection projection width
  double ratio = 0.05;     // rho
  int64_t min_keys = 10;   // k_min
  bool bias = false;       // select_q / select_k biases
};

// k(n) above.
int64_t selected_keys(const SelectionSpec& s, int64_t valid_keys);

// "<attn>.select_q.{weight[,bias]}" and "<attn>.select_k.*": [ds, D] (+ [ds]).
void add_selection(std::vector<ParamSpec>* table, const std::string& attn, int64_t model_dim,
                   const SelectionSpec& s);

// Sel for the attention at prefix attn: i32 [B, 1, Nq, k(Nk)]. xq [B, Nq, D], xk [B, Nk, D],
// key_mask u8 [B, Nk] (1 = key) or kNoValue.
ValueId select_keys(GraphContext& c, ValueId xq, ValueId xk, const std::string& attn, const SelectionSpec& s,
                    bool causal, ValueId key_mask);
// The two halves, for generation (which caches Ks like K/V): Ks = xk Wsk^T (+b) [B, Nk, ds],
// and Sel from xq and given Ks.
ValueId selection_keys(GraphContext& c, ValueId xk, const std::string& attn, const SelectionSpec& s);
ValueId select_with_keys(GraphContext& c, ValueId xq, ValueId ks, const std::string& attn,
                         const SelectionSpec& s, bool causal, ValueId key_mask);

}  // namespace longrun::models
