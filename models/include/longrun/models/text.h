// Text in and embeddings out, shared by longrun-run --text, longrun-demo and the Python
// package (python/): the tokenizer a model file carries, a batch of texts encoded into
// padded input_ids + attention_mask, and the pooling of last_hidden_state into one vector
// per text (sentence-transformers' Pooling + Normalize).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "longrun/safetensors.h"
#include "longrun/status.h"
#include "longrun/tensor.h"
#include "longrun/tokenizer.h"

namespace longrun {

// The tokenizer stored under kTokenizerMetadataKey, or nullopt when the file has none.
// Errors: the stored tokenizer does not parse (named with the file's path).
Result<std::optional<Tokenizer>> file_tokenizer(const SafetensorsFile& file);

struct BatchEncodeOptions {
  bool add_special_tokens = true;
  // > 0: longer sequences are cut to this many tokens by Tokenizer::encode_truncated (the
  // text's tokens go from the end, the special tokens stay: [CLS] t1 ... [SEP]); 0: none.
  int64_t max_length = 0;
  // Pad every row to max_length (> 0) instead of to the longest row.
  bool pad_to_max_length = false;
  // What errors call each text (one name per text); empty: "text <index>".
  std::span<const std::string> names;
};

struct TokenBatch {
  Tensor input_ids;              // i64 [B, N], padded at the end with the pad id (0 without one)
  Tensor attention_mask;         // i64 [B, N], 1 = token, 0 = padding
  std::vector<int64_t> lengths;  // tokens per row before padding
  // Tokens per row before truncation (what Tokenizer::encode gives); > lengths[b] when cut.
  std::vector<int64_t> untruncated_lengths;
};

// Encodes every text and pads the rows at the end. Errors: no texts, names not one per text,
// invalid UTF-8 (the text named), max_length < 0, or max_length smaller than the special
// tokens (Tokenizer::encode_truncated's error, the text named).
Result<TokenBatch> encode_batch(const Tokenizer& tokenizer, std::span<const std::string> texts,
                                const BatchEncodeOptions& options = {});

enum class Pooling { mean, cls, max };

// "mean", "cls" or "max"; invalid_argument naming the value otherwise.
Result<Pooling> parse_pooling(std::string_view name);

// One vector per row of last_hidden_state f32 [B, N, D]: the mean (in double) or maximum
// over the tokens whose attention_mask ([B, N], any integer dtype or f32; nullptr = all
// tokens) is non-zero, or the first token's row (cls); then L2-normalised when `normalize`.
// Returns f32 [B, D]. Errors: wrong dtype or rank, mismatched mask, a row without tokens.
Result<Tensor> pool_embeddings(const TensorView& last_hidden_state, const TensorView* attention_mask,
                               Pooling pooling, bool normalize);

}  // namespace longrun
