// A native model with random weights made from its family's parameter table, so that a model
// benchmark needs no checkpoint. Deterministic: the same arch, config and seed give the same
// bytes, so `longrun-bench models --save-models DIR` files can be timed by other engines
// (tools/bench/pytorch_models.py) with exactly the weights longrun ran.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "longrun/models/model.h"

namespace longrun::bench {

struct RandomModel {
  std::shared_ptr<const Model> model;
  int64_t vocab_size = 0;  // the config's vocab_size or src_vocab_size (0: none): ids are drawn below it
  int64_t decoder_vocab_size = 0;  // tgt_vocab_size of encoder-decoders (else vocab_size)
};

// Weights: matrices uniform in +-1/sqrt(fan_in) (activations stay O(1) through the layers),
// vectors (biases, LayerNorm gamma and beta) uniform in [-0.1, 0.1), embedding tables in
// [-1, 1). The model is written to a native file and loaded from it (mmap, as a deployment
// loads one): to `save_path` when not empty, else to a temporary file removed once mapped.
Result<RandomModel> random_model(const std::string& arch, const std::string& config_json, uint32_t seed,
                                 const std::string& save_path);

}  // namespace longrun::bench
