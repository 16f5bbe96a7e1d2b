// Attention-only workloads (the pseudo-arch "attention" of `longrun-bench models`): one
// layer's attention on given projected heads q, k, v [B, H, N, hd], so that the Combiner forms
// can be timed against fused dense attention on the same inputs without the projections,
// FFN, embeddings and heads of a whole model around them.
//
// config JSON (unknown keys are errors):
//   form      "dense" (the fused attention op) | "fixed" | "axial"   (required)
//   heads     H (default 8), head_dim hd (default 64)
//   segment   s for fixed / axial (default 128); N must be a multiple of it
// fixed and axial are the bidirectional (TF) forms, built by the model's own code
// (models/combiner/combiner_attention.h). Axial includes its learned row summary
// K~ = W2 LN'(W1 R + h) (random W1, W2, LN'; h, the layer's normalised input [B, N, H hd],
// is a graph input): that projection exists only because of axial attention, so it counts.
// q carries the 1/sqrt(hd) scale already (as the model's q projection), so dense runs with
// scale 1.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "workload.h"

namespace longrun::bench {

inline bool is_attention_block(std::string_view arch) { return arch == "attention"; }

// invalid_argument naming the field for a bad config.
Status check_attention_config(const std::string& config_json);

// The workload at batch B and length N; inputs from `seed`.
Result<Workload> attention_block(const std::string& config_json, int64_t batch, int64_t n, uint32_t seed);

}  // namespace longrun::bench
