// Causal-LM generation by full recomputation (lm/causal_lm_generate.h): every step runs the
// forward graph on [B * K, N + t] ids and feeds the last position's logits to BeamSearch.
#include "lm/causal_lm_generate.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "seq2seq/beam_search.h"

namespace longrun::models {

Result<int64_t> int_at(const TensorView& v, int64_t i) {
  switch (v.desc.dtype()) {
    case DType::i32: return int64_t(v.ptr<const int32_t>()[i]);
    case DType::i64: return v.ptr<const int64_t>()[i];
    case DType::u8: return int64_t(v.ptr<const uint8_t>()[i]);
    case DType::f32: return int64_t(v.ptr<const float>()[i]);
    default: return invalid_argument("unsupported dtype " + v.desc.to_string());
  }
}

Result<std::optional<CausalLmSpec>> causal_lm_spec(const Model& model) {
  if (model.arch() != "combiner") return std::optional<CausalLmSpec>();
  const auto j = nlohmann::json::parse(model.config_json(), nullptr, false);
  if (j.is_discarded()) return internal_error("combiner: unreadable config_json");
  if (!j.value("causal", true))
    return unsupported(model.path() +
                       ": generation needs a causal combiner (causal = true); this model is "
                       "bidirectional (attention \"" +
                       j.value("attention", std::string()) +
                       "\", causal = false): each token sees later ones");
  CausalLmSpec s;
  s.vocab = j.at("vocab_size").get<int64_t>();
  s.max_len = j.at("max_len").get<int64_t>();
  s.pad = 0;  // the JAX model pads with id 0 (flax WMT/LM1B SentencePiece: pad 0, eos 1)
  s.eos = std::min<int64_t>(1, s.vocab - 1);
  return std::optional<CausalLmSpec>(s);
}

Result<GenerateResult> generate_causal_lm(const CausalLmSpec& spec, Session& full, const TensorView& ids,
                                          const GenerateOptions& o) {
  const int64_t batch = ids.desc.dim(0), n = ids.desc.dim(1), k = o.num_beams, rows = batch * k;
  if (n < 1)
    return invalid_argument("generate: input 'input_ids' has N = 0 tokens: a causal LM needs a prompt");
  if (n >= spec.max_len)
    return invalid_argument("generate: the prompt has " + std::to_string(n) +
                            " tokens, which leaves no room below max_len " + std::to_string(spec.max_len));
  const int64_t eos = o.eos_token_id >= 0 ? o.eos_token_id : spec.eos;
  if (eos >= spec.vocab)
    return invalid_argument("generate: eos_token_id " + std::to_string(eos) +
                            " is outside the vocabulary of " + std::to_string(spec.vocab));
  // Capped (documented in generate.h): prompt + generated tokens <= max_len.
  const int64_t steps = std::min(o.max_new_tokens, spec.max_len - n);

  std::vector<std::vector<int64_t>> seq(static_cast<size_t>(rows));  // per row: prompt + generated
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i) {
      LR_ASSIGN_OR_RETURN(const int64_t x, int_at(ids, b * n + i));
      if (x < 0 || x >= spec.vocab)
        return invalid_argument("generate: input_ids[" + std::to_string(b) + ", " + std::to_string(i) +
                                "] = " + std::to_string(x) + " is outside the vocabulary of " +
                                std::to_string(spec.vocab));
      for (int64_t j = 0; j < k; ++j) seq[size_t(b * k + j)].push_back(x);
    }
  BeamSearch search(batch, spec.pad,
                    {.vocab = spec.vocab,
                     .pad = spec.pad,
                     .eos = eos,
                     .beams = int(k),
                     .max_steps = steps,
                     .min_length = o.min_length,
                     .no_repeat_ngram = o.no_repeat_ngram_size,
                     .length_penalty = o.length_penalty});
  GenerateResult result;
  LR_ASSIGN_OR_RETURN(Tensor last, Tensor::zeros(TensorDesc(DType::f32, {rows, spec.vocab})));
  for (int64_t t = 0; t < steps && !search.done(); ++t) {
    const int64_t len = n + t;
    LR_ASSIGN_OR_RETURN(Tensor in, Tensor::zeros(TensorDesc(DType::i64, {rows, len})));
    for (int64_t r = 0; r < rows; ++r)
      std::copy(seq[size_t(r)].begin(), seq[size_t(r)].end(), in.data<int64_t>() + r * len);
    const std::vector<NamedTensorRef> feed = {{"input_ids", in.view()}};
    LR_ASSIGN_OR_RETURN(std::vector<NamedTensor> out, full.run(feed));
    const auto it =
        std::find_if(out.begin(), out.end(), [](const NamedTensor& x) { return x.name == "logits"; });
    if (it == out.end()) return internal_error("generate: the model has no 'logits' output");
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(last.data<float>() + r * spec.vocab,
                  it->tensor.data<float>() + (r * len + len - 1) * spec.vocab,
                  size_t(spec.vocab) * sizeof(float));
    if (o.on_step_logits) o.on_step_logits(t, last);
    search.advance(t, last.data<float>());
    result.steps = t + 1;
    const std::vector<int64_t> chosen = search.last_tokens();
    std::vector<std::vector<int64_t>> next(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      next[size_t(r)] = seq[size_t(search.source_rows()[size_t(r)])];
      next[size_t(r)].push_back(chosen[size_t(r)]);
    }
    seq = std::move(next);
  }
  result.step_shapes = int(result.steps);
  result.sequences.resize(size_t(batch));
  result.scores.resize(size_t(batch));
  for (int64_t b = 0; b < batch; ++b) {
    const auto hyps = search.finished(b);
    for (size_t j = 0; j < hyps.size() && j < size_t(o.num_return_sequences); ++j) {
      result.sequences[size_t(b)].push_back(hyps[j].tokens);
      result.scores[size_t(b)].push_back(hyps[j].score);
    }
  }
  return result;
}

}  // namespace longrun::models
