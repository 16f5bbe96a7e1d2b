// The parsed config shared by the four BERT-style arches (bert.h documents the fields), and
// the Architecture factory bert.cpp implements.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/architecture.h"
#include "longrun/ops/attrs.h"

namespace longrun::models {

struct BertConfig {
  std::string arch;      // "bert", "roberta", "fourier-bert", "fourier-roberta"
  bool roberta = false;  // padding-aware positions, lm_head naming
  bool fourier = false;  // filter_layers / filter_ratio are read
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t intermediate_size = 0;
  std::string hidden_act = "gelu";
  Activation act = Activation::gelu;
  int64_t max_positions = 512;
  int64_t type_vocab_size = 2;
  double layer_norm_eps = 1e-12;
  int64_t pad_token_id = 0;
  bool add_pooling_layer = true;
  bool mlm_head = false;
  std::vector<int64_t> filter_layers;
  double filter_ratio = 0.0;  // 0 without filter layers

  // Longest input: P for bert; P - pad - 1 for roberta (positions reach pad + N).
  int64_t max_length() const { return roberta ? max_positions - pad_token_id - 1 : max_positions; }
};

std::unique_ptr<Architecture> make_bert_architecture(BertConfig cfg);

}  // namespace longrun::models
