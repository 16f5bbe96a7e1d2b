// Text generation for the encoder-decoder families (bart, transformer, fourier-bart,
// lasformer): greedy and beam search with a KV cache, fairseq SequenceGenerator semantics; and
// for the decoder-only causal combiner LM (arch "combiner", causal = true), same search rules.
//
// Causal combiner LM (models/lm/causal_lm_generate.cpp): input_ids [B, N] is the prompt
// (1 <= N < max_len; N = 0 or N >= max_len is invalid_argument); the result is its
// continuation. Every causal form runs a one-token step graph
// (CausalLm, lm/causal_lm.h) with caches of capacity S (a multiple of s, doubling as below):
// fixed keeps K/V and per-segment summaries (max-pooled key, local expectation E, from
// running segment maxima); axial keeps the own row's q/k/v/LN input and K~, R of every
// position (the own row's R recomputed each step, O(s^2 d)); logsparse keeps K/V and, per
// level, the running maxima of the current block and the last finished block's summary (each
// step recomputes every level's current E over the cached keys, O(t d log max_len)); mixture
// keeps K/V, the own row's q/k/v, per-column running maxima and every earlier position's
// top-left / top-right summaries (each step recomputes the column summaries over the cached
// keys, O(t d), and the own row's, O(s^2 d)). The prompt is fed through the same step. Steps are capped so
// prompt + generated <= max_len (the last allowed step forces eos). pad = 0 is banned; eos = eos_token_id, or
// 1 by default (the flax WMT/LM1B SentencePiece ids: pad 0, eos 1). no_repeat_ngram looks at the generated
// tokens after a leading pad, not at the prompt. No attention_mask. A bidirectional combiner
// is refused (unsupported) at Generator::create.
//
// How it runs (models/generate.cpp):
//   - the encoder runs once per call; it also projects every decoder layer's cross-attention
//     keys and values once ("generation encoder" graph);
//   - each step runs a one-token "decoder step" graph through a Session: the self-attention
//     KV cache and the cross K/V are graph inputs, the updated cache a graph output, so the
//     host only reorders cache rows between steps (beam search) and feeds them back;
//   - the cache has a capacity S (slots), and the step graph writes the new key/value into
//     slot t and attends over the valid slots (a mask), so its shapes do not change from one
//     step to the next. S starts at min(16, steps) and doubles when full (rows copied once),
//     so a generation of T steps plans log2(T / 16) + 1 step graphs rather than T (each plan
//     is a graph build + memory plan + kernel preparation, ~ms), at the cost of attending
//     over at most 2x the valid slots. The session's plan cache keeps the plans across calls
//     of one Generator.
//   - in a bf16 session (SessionOptions::precision) the encoder-decoders' self-attention KV
//     cache and cross K/V are bf16 (half the bytes): each step rounds its new key and value
//     to bf16 (cast) before writing them, and attention widens them exactly to f32. The
//     causal LM's caches and the selection keys stay f32.
//
// Search (per source sentence, beam size K; greedy = K = 1), as fairseq:
//   tokens start with the decoder start token; at step s = 0, 1, ... (tokens generated so far)
//     lprobs = log_softmax(logits of the last token) in double; lprobs[pad] = -inf;
//     s < min_length: lprobs[eos] = -inf;  s == max_new_tokens - 1: only eos is allowed;
//     no_repeat_ngram_size n: a token that would complete an n-gram already in the hypothesis
//     (start token included) gets -inf;
//     candidates = beam score + lprobs over K x V (at s = 0 only the first beam), the best 2K
//     by score, ties by beam * V + token ascending;
//     the eos candidates among the first K finish the hypothesis (while the sentence has fewer
//     than K finished) with score = sum of its lprobs / (s + 1) ^ length_penalty;
//     the first K candidates not ending in eos continue; the sentence is done with K finished.
//   Results: finished hypotheses by score, best first (stable), without the start token, eos
//   included (every hypothesis ends with eos: the last step forces it).
// HF generate() differs in details (length normalisation by the length with the start token,
// its early-stopping heuristic, pad not banned); the goldens follow the rules above.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "longrun/models/model.h"
#include "longrun/session.h"
#include "longrun/status.h"
#include "longrun/tensor.h"

namespace longrun {

struct GenerateOptions {
  int64_t max_new_tokens = 20;  // steps, eos included; capped by the decoder's position table
  int64_t min_length = 0;       // eos is banned while fewer tokens were generated
  int num_beams = 1;            // 1 = greedy
  double length_penalty = 1.0;
  int64_t no_repeat_ngram_size = 0;     // 0 = off
  int num_return_sequences = 1;         // <= num_beams
  int64_t decoder_start_token_id = -1;  // -1: the model's (BART: decoder_start_token_id; fairseq: eos)
  int64_t eos_token_id = -1;            // causal LMs only; -1: the model's (combiner: 1)
  // Called after every step with its logits f32 [B * num_beams, V] (row b * K + k = beam k of
  // sentence b, in beam order; rows of finished sentences are unspecified). For tests/tools.
  std::function<void(int64_t step, const Tensor& logits)> on_step_logits;
};

struct GenerateResult {
  // [B][num_return_sequences]: token ids (start token excluded) and normalised scores.
  std::vector<std::vector<std::vector<int64_t>>> sequences;
  std::vector<std::vector<double>> scores;
  int64_t steps = 0;        // decoder steps run
  int64_t cache_slots = 0;  // final KV-cache capacity S
  int64_t cache_bytes = 0;  // bytes of the final caches (self-attention K/V, cross K/V, selection keys)
  int step_shapes = 0;      // distinct step-graph shapes used (plans)
};

class Generator {
 public:
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  // unsupported for a model that is neither an encoder-decoder nor a causal combiner LM
  // (a bidirectional combiner is refused: each of its tokens sees later ones).
  static Result<std::unique_ptr<Generator>> create(std::shared_ptr<const Model> model,
                                                   const SessionOptions& options);

  // input_ids i32/i64 [B, N]; attention_mask [B, N] (u8/i32/i64/f32, 0/1; bart only;
  // nullptr = all ones; the fairseq transformer takes padding from ids == pad; a causal LM
  // takes none). A causal LM's input_ids is the prompt, 1 <= N < max_len.
  Result<GenerateResult> generate(const TensorView& input_ids, const TensorView* attention_mask,
                                  const GenerateOptions& options);

 private:
  struct Impl;
  explicit Generator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One-shot form: a Generator for this call only.
Result<GenerateResult> generate(std::shared_ptr<const Model> model, const SessionOptions& options,
                                const TensorView& input_ids, const TensorView* attention_mask,
                                const GenerateOptions& generate_options);

}  // namespace longrun
