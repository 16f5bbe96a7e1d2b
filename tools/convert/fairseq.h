// fairseq checkpoints (docs/checkpoints.md#fairseq-checkpoints): a torch.save'd dict {"model": state_dict,
// "args": argparse.Namespace | None, "cfg": {"model": {...}, ...}, "last_optimizer_state",
// "extra_state", ...}. The reader keeps only the model's tensors (names without "model."),
// applies fairseq's own state-dict upgrades (fused in_proj split into q/k/v views, old
// layer_norms.{0,1} names), drops buffers that hold no weights, and turns the hyper-parameters
// (args, else cfg.model) into a JSON object for the mapping. Training objects pickled outside
// "model" (meters, enums, dataclass configs in args / cfg / extra_state) stay opaque without
// --lenient (ReadOptions::opaque_outside_model); an unknown global under "model" is refused.
#pragma once

#include <string>
#include <vector>

#include "source.h"

namespace longrun::convert {

struct FairseqCheckpoint {
  SourceCheckpoint source;            // model tensors only, upgraded
  std::string hyperparameters_json;   // args (Namespace) or cfg.model, as a JSON object
  std::string hyperparameters_from;   // "args" or "cfg.model"
  std::vector<std::string> dropped;   // "name: reason" (optimizer state, version buffers, ...)
  std::vector<std::string> upgraded;  // "old -> new"
};

Result<FairseqCheckpoint> read_fairseq(const std::string& path, const ReadOptions& options);
// Same, from an already read torch checkpoint (its pickle_root must be set).
Result<FairseqCheckpoint> fairseq_from(SourceCheckpoint src, const std::string& label);

// Splits a fused attention projection ("...in_proj_weight" [3D, D] or "...in_proj_bias" [3D])
// into q/k/v views of the same storage (rows [0, D), [D, 2D), [2D, 3D)), named
// "...q_proj.weight" etc. Errors when the first dim is not divisible by 3.
Result<std::vector<SourceTensor>> split_in_proj(const SourceTensor& fused);

}  // namespace longrun::convert
