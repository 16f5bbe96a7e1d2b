// Generation: the encoder once, then decoder steps with a fixed-capacity KV cache through
// Sessions (longrun/models/generate.h explains the design and the search rules).
#include "longrun/models/generate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>

#include "common/architecture.h"
#include "common/weights.h"
#include "lm/causal_lm_generate.h"
#include "seq2seq/beam_search.h"
#include "seq2seq/encoder_decoder.h"

namespace longrun {

namespace {

using models::gather_rows;
using models::GenerationSpec;
using models::int_at;
using models::Seq2SeqArchitecture;

constexpr int64_t kFirstCacheSlots = 16;

// A GraphFactory over one of the architecture's generation graphs.
GraphFactory generation_factory(std::shared_ptr<const Model> model, std::vector<std::string> names,
                                bool step) {
  return [model, names = std::move(names), step](std::span<const TensorDesc> descs) -> Result<Graph> {
    const auto& arch = dynamic_cast<const Seq2SeqArchitecture&>(model->architecture());
    GraphBuilder b;
    const ModelOptions no_debug;
    models::GraphContext ctx(b, model->weights(), no_debug);
    for (size_t i = 0; i < names.size(); ++i) ctx.add_input(names[i], b.input(names[i], descs[i]));
    if (step)
      arch.build_decoder_step(ctx);
    else
      arch.build_generation_encoder(ctx);
    ctx.finish();
    auto g = b.build();
    if (!g.ok())
      return g.status().with_context(model->arch() + (step ? " decoder step" : " generation encoder"));
    return g;
  };
}

std::vector<std::string> step_input_names(int64_t layers, int64_t selection_groups) {
  std::vector<std::string> n = {"decoder_input_ids", "decoder_position", "write_slot", "slot_mask",
                                "encoder_mask"};
  for (int64_t i = 0; i < layers; ++i)
    for (const char* kind : {"past.", "cross."})
      for (const char* kv : {".key", ".value"}) n.push_back(kind + std::to_string(i) + kv);
  for (int64_t g = 0; g < selection_groups; ++g)  // Lasformer's selection keys
    for (const char* kind : {"past_select.", "cross_select."}) n.push_back(kind + std::to_string(g) + ".key");
  return n;
}

Result<Tensor> zeros(DType t, std::initializer_list<int64_t> dims) {
  return Tensor::zeros(t, std::span<const int64_t>(dims.begin(), dims.size()));
}

// The self-attention KV cache's and cross K/V's dtype (and the causal LMs' growing caches'):
// bf16 in a bf16 session (attention and casts widen the values exactly; half the bytes of
// f32), else f32.
DType kv_cache_dtype(const SessionOptions& options) {
  return options.precision == Precision::bf16 ? DType::bf16 : DType::f32;
}

// An f32 tensor rounded to bf16 (nearest even), element by element.
Result<Tensor> to_bf16(const Tensor& in) {
  LR_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(DType::bf16, in.desc().dims()));
  const float* src = in.data<float>();
  auto* dst = out.data<uint16_t>();
  for (int64_t i = 0; i < in.desc().numel(); ++i) dst[i] = f32_to_bf16(src[i]);
  return out;
}

// Each of the B rows of `in` (any rank >= 1) repeated `times` times: [B * times, ...].
Result<Tensor> repeat_rows(const Tensor& in, int64_t times) {
  std::vector<int64_t> dims(in.desc().dims().begin(), in.desc().dims().end());
  const int64_t b = dims[0];
  dims[0] *= times;
  LR_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(in.dtype(), dims));
  const size_t row = size_t(in.nbytes() / b);
  for (int64_t i = 0; i < b; ++i)
    for (int64_t t = 0; t < times; ++t)
      std::memcpy(out.bytes().data() + (i * times + t) * row, in.bytes().data() + i * row, row);
  return out;
}

}  // namespace

struct Generator::Impl {
  std::shared_ptr<const Model> model;
  GenerationSpec spec;
  std::unique_ptr<Session> encoder_plain, encoder_masked, step;
  SessionOptions options;
  std::optional<models::CausalLmSpec> lm;  // decoder-only LM: `step` is its cached step
};

Generator::Generator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Generator::~Generator() = default;

Result<std::unique_ptr<Generator>> Generator::create(std::shared_ptr<const Model> model,
                                                     const SessionOptions& options) {
  if (!model) return invalid_argument("Generator::create: null model");
  LR_ASSIGN_OR_RETURN(std::optional<models::CausalLmSpec> lm, models::causal_lm_spec(*model));
  if (lm) {
    auto impl = std::make_unique<Impl>();
    impl->model = model;
    impl->lm = lm;
    impl->options = options;
    LR_ASSIGN_OR_RETURN(impl->step, models::causal_lm_step_session(model, options));
    return std::unique_ptr<Generator>(new Generator(std::move(impl)));
  }
  const auto* arch = dynamic_cast<const Seq2SeqArchitecture*>(&model->architecture());
  if (arch == nullptr)
    return unsupported(model->path() + ": generation needs an encoder-decoder model; arch '" + model->arch() +
                       "' has no decoder");
  auto impl = std::make_unique<Impl>();
  impl->model = model;
  impl->spec = arch->generation_spec();
  impl->options = options;
  std::vector<std::string> enc = {"input_ids"};
  LR_ASSIGN_OR_RETURN(impl->encoder_plain,
                      Session::create(generation_factory(model, enc, false), enc, options));
  if (!impl->spec.padding_from_tokens) {
    enc.push_back("attention_mask");
    LR_ASSIGN_OR_RETURN(impl->encoder_masked,
                        Session::create(generation_factory(model, enc, false), enc, options));
  }
  const std::vector<std::string> step =
      step_input_names(impl->spec.decoder_layers, impl->spec.selection_groups);
  LR_ASSIGN_OR_RETURN(impl->step, Session::create(generation_factory(model, step, true), step, options));
  return std::unique_ptr<Generator>(new Generator(std::move(impl)));
}

Result<GenerateResult> Generator::generate(const TensorView& ids, const TensorView* mask,
                                           const GenerateOptions& o) {
  const Impl& m = *impl_;
  const GenerationSpec& g = m.spec;
  if (o.num_beams < 1 || o.num_beams > 1024)
    return invalid_argument("generate: num_beams must be in [1, 1024], found " + std::to_string(o.num_beams));
  if (o.num_return_sequences < 1 || o.num_return_sequences > o.num_beams)
    return invalid_argument(
        "generate: num_return_sequences must be in [1, num_beams = " + std::to_string(o.num_beams) +
        "], found " + std::to_string(o.num_return_sequences));
  if (o.max_new_tokens < 1)
    return invalid_argument("generate: max_new_tokens must be >= 1, found " +
                            std::to_string(o.max_new_tokens));
  if (o.min_length < 0 || o.no_repeat_ngram_size < 0 || !std::isfinite(o.length_penalty))
    return invalid_argument(
        "generate: min_length and no_repeat_ngram_size must be >= 0 and length_penalty finite");
  if (ids.desc.rank() != 2 || (ids.desc.dtype() != DType::i32 && ids.desc.dtype() != DType::i64) ||
      ids.desc.dim(0) < 1)
    return invalid_argument("generate: input 'input_ids': expected i32 or i64 [B, N], found " +
                            ids.desc.to_string());
  if (m.lm) {
    if (mask != nullptr)
      return invalid_argument("generate: " + m.model->arch() +
                              " is a causal LM without an attention_mask input");
    return models::generate_causal_lm(*m.lm, *m.model, *m.step, ids, o, kv_cache_dtype(m.options));
  }
  if (mask != nullptr && g.padding_from_tokens)
    return invalid_argument("generate: " + m.model->arch() + " takes padding from input_ids == pad (" +
                            std::to_string(g.pad) + "); it has no attention_mask input");
  const int64_t start = o.decoder_start_token_id >= 0 ? o.decoder_start_token_id : g.decoder_start;
  if (start >= g.tgt_vocab)
    return invalid_argument("generate: decoder_start_token_id " + std::to_string(start) +
                            " is outside the target vocabulary of " + std::to_string(g.tgt_vocab));
  const int64_t batch = ids.desc.dim(0), n = ids.desc.dim(1), k = o.num_beams, rows = batch * k;
  const int64_t steps = std::min(o.max_new_tokens, g.max_decoder_length);  // fairseq caps so too

  // Encoder once: cross-attention K/V for every decoder layer.
  std::vector<NamedTensorRef> enc_in = {{"input_ids", ids}};
  if (mask != nullptr) enc_in.push_back({"attention_mask", *mask});
  Session& enc = mask != nullptr ? *m.encoder_masked : *m.encoder_plain;
  LR_ASSIGN_OR_RETURN(std::vector<NamedTensor> enc_out, enc.run(enc_in));

  // The source mask per beam row: attention_mask, or ids != pad (fairseq), or all ones.
  LR_ASSIGN_OR_RETURN(Tensor enc_mask, zeros(DType::u8, {rows, n}));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i) {
      uint8_t on = 1;
      if (mask != nullptr) {
        LR_ASSIGN_OR_RETURN(const int64_t x, int_at(*mask, b * n + i));
        on = x != 0;
      } else if (g.padding_from_tokens && !g.source_unmasked) {
        LR_ASSIGN_OR_RETURN(const int64_t x, int_at(ids, b * n + i));
        on = x != g.pad;
      }
      for (int64_t j = 0; j < k; ++j) enc_mask.data<uint8_t>()[(b * k + j) * n + i] = on;
    }
  // Per layer: key, value, repeated per beam (in the cache dtype); then the selection keys.
  const DType cache_dtype = kv_cache_dtype(m.options);
  std::vector<Tensor> cross;
  for (NamedTensor& t : enc_out) {
    LR_ASSIGN_OR_RETURN(Tensor r, repeat_rows(t.tensor, k));
    if (cache_dtype == DType::bf16 && int64_t(cross.size()) < 2 * g.decoder_layers) {
      LR_ASSIGN_OR_RETURN(r, to_bf16(r));
    }
    cross.push_back(std::move(r));
  }

  models::BeamSearch search(batch, start, models::beam_rules(o, g.tgt_vocab, g.pad, g.eos, int(k), steps));
  GenerateResult result;
  int64_t slots = std::min(kFirstCacheSlots, steps);
  result.step_shapes = 1;
  std::vector<Tensor> past;  // per layer: key, value [R, H, S, hd]; per selection group [R, 1, S, ds]
  for (int64_t i = 0; i < 2 * g.decoder_layers; ++i) {
    LR_ASSIGN_OR_RETURN(Tensor z, zeros(cache_dtype, {rows, g.heads, slots, g.head_dim}));
    past.push_back(std::move(z));
  }
  for (int64_t i = 0; i < g.selection_groups; ++i) {
    LR_ASSIGN_OR_RETURN(Tensor z, zeros(DType::f32, {rows, 1, slots, g.selection_dim}));
    past.push_back(std::move(z));
  }
  LR_ASSIGN_OR_RETURN(Tensor tokens, zeros(DType::i64, {rows, 1}));
  LR_ASSIGN_OR_RETURN(Tensor position, zeros(DType::i64, {1}));
  const std::vector<std::string> names = step_input_names(g.decoder_layers, g.selection_groups);

  for (int64_t t = 0; t < steps && !search.done(); ++t) {
    if (t == slots) {  // full: double the capacity (rows copied once)
      const int64_t grown = std::min(2 * slots, steps);
      std::vector<int64_t> same(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) same[size_t(r)] = r;
      for (Tensor& p : past) {
        LR_ASSIGN_OR_RETURN(p, gather_rows(p, same, grown));
      }
      slots = grown;
      result.step_shapes++;
    }
    const std::vector<int64_t> last = search.last_tokens();
    std::copy(last.begin(), last.end(), tokens.data<int64_t>());
    position.data<int64_t>()[0] = g.position_offset + t;
    LR_ASSIGN_OR_RETURN(Tensor write_slot, zeros(DType::u8, {1, 1, slots, 1}));
    write_slot.data<uint8_t>()[t] = 1;
    LR_ASSIGN_OR_RETURN(Tensor slot_mask, zeros(DType::u8, {rows, slots}));
    for (int64_t r = 0; r < rows; ++r) std::fill_n(slot_mask.data<uint8_t>() + r * slots, t + 1, uint8_t(1));

    std::vector<NamedTensorRef> in = {{names[0], tokens.view()},
                                      {names[1], position.view()},
                                      {names[2], write_slot.view()},
                                      {names[3], slot_mask.view()},
                                      {names[4], enc_mask.view()}};
    for (int64_t i = 0; i < g.decoder_layers; ++i) {
      const size_t base = 5 + size_t(4 * i);
      in.push_back({names[base], past[size_t(2 * i)].view()});
      in.push_back({names[base + 1], past[size_t(2 * i + 1)].view()});
      in.push_back({names[base + 2], cross[size_t(2 * i)].view()});
      in.push_back({names[base + 3], cross[size_t(2 * i + 1)].view()});
    }
    for (int64_t i = 0; i < g.selection_groups; ++i) {
      const size_t base = 5 + size_t(4 * g.decoder_layers + 2 * i);
      in.push_back({names[base], past[size_t(2 * g.decoder_layers + i)].view()});
      in.push_back({names[base + 1], cross[size_t(2 * g.decoder_layers + i)].view()});
    }
    LR_ASSIGN_OR_RETURN(std::vector<NamedTensor> out, m.step->run(in));
    // Outputs: present.<i>.key, present.<i>.value per layer, present_select.<g>.key per
    // selection group, then logits [R, 1, V].
    const Tensor& logits = out.back().tensor;
    if (o.on_step_logits) {
      LR_ASSIGN_OR_RETURN(Tensor flat,
                          Tensor::from_bytes(TensorDesc(DType::f32, {rows, g.tgt_vocab}), logits.bytes()));
      o.on_step_logits(t, flat);
    }
    search.advance(t, logits.data<float>());
    result.steps = t + 1;
    const bool reorder = !search.identity_order();
    for (size_t i = 0; i < past.size(); ++i) {
      if (reorder) {
        LR_ASSIGN_OR_RETURN(past[i], gather_rows(out[i].tensor, search.source_rows(), slots));
      } else {
        past[i] = std::move(out[i].tensor);
      }
    }
  }
  result.cache_slots = slots;
  for (const Tensor& t : past) result.cache_bytes += t.nbytes();
  for (const Tensor& t : cross) result.cache_bytes += t.nbytes();
  search.take_results(o.num_return_sequences, &result.sequences, &result.scores);
  return result;
}

Result<GenerateResult> generate(std::shared_ptr<const Model> model, const SessionOptions& options,
                                const TensorView& input_ids, const TensorView* attention_mask,
                                const GenerateOptions& generate_options) {
  LR_ASSIGN_OR_RETURN(std::unique_ptr<Generator> g, Generator::create(std::move(model), options));
  return g->generate(input_ids, attention_mask, generate_options);
}

}  // namespace longrun
