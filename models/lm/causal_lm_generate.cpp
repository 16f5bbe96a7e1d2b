// Causal-LM generation (lm/causal_lm_generate.h): every step runs the cached one-token step
// graph (CachedSteps) and feeds its logits to BeamSearch.
#include "lm/causal_lm_generate.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/architecture.h"
#include "lm/causal_lm.h"
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

Result<Tensor> gather_rows(const Tensor& in, const std::vector<int64_t>& rows, int64_t slots_out) {
  const TensorDesc& d = in.desc();
  const int64_t h = d.dim(1), s_in = d.dim(2), hd = d.dim(3);
  LR_ASSIGN_OR_RETURN(Tensor out,
                      Tensor::zeros(TensorDesc(d.dtype(), {int64_t(rows.size()), h, slots_out, hd})));
  const size_t es = dtype_size(d.dtype());
  const size_t block = size_t(s_in * hd) * es;
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t j = 0; j < h; ++j)
      std::memcpy(out.bytes().data() + size_t((int64_t(r) * h + j) * slots_out * hd) * es,
                  in.bytes().data() + size_t((rows[r] * h + j) * s_in * hd) * es, block);
  return out;
}

namespace {

constexpr int64_t kFirstCacheSlots = 16;

std::vector<std::string> step_names(const LmStepSpec& spec) {
  std::vector<std::string> n = spec.inputs;
  for (const LmStepSpec::Cache& c : spec.caches) n.push_back("past." + c.name);
  return n;
}

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// The host input `name` of lm/causal_lm.h at position p = u s + t with S slots.
Result<Tensor> step_input(const std::string& name, int64_t p, int64_t slots, const LmStepSpec& spec,
                          const std::vector<int64_t>& tokens) {
  const int64_t s = spec.segment, m = spec.summaries, u = p / s, t = p % s;
  auto mask = [&](std::initializer_list<int64_t> dims, int64_t size, auto keep) -> Result<Tensor> {
    LR_ASSIGN_OR_RETURN(Tensor x, Tensor::zeros(TensorDesc(DType::u8, std::vector<int64_t>(dims))));
    for (int64_t j = 0; j < size; ++j) x.data<uint8_t>()[j] = keep(j) ? 1 : 0;
    return x;
  };
  if (name == "ids") {
    LR_ASSIGN_OR_RETURN(Tensor x, Tensor::zeros(TensorDesc(DType::i64, {int64_t(tokens.size()), 1})));
    std::copy(tokens.begin(), tokens.end(), x.data<int64_t>());
    return x;
  }
  if (name == "position") {
    LR_ASSIGN_OR_RETURN(Tensor x, Tensor::zeros(TensorDesc(DType::i64, {1})));
    x.data<int64_t>()[0] = p;
    return x;
  }
  if (name == "write_slot") return mask({1, 1, slots, 1}, slots, [&](int64_t j) { return j == p; });
  if (name == "direct_keep")
    return mask({1, 1, 1, slots}, slots, [&](int64_t j) { return j >= u * s && j <= p; });
  if (name == "summary_keep") return mask({1, 1, 1, m}, m, [&](int64_t j) { return j < u; });
  if (name == "summary_write") return mask({1, 1, m, 1}, m, [&](int64_t j) { return j == u; });
  if (name == "segment_start") return mask({1, 1, 1, 1}, 1, [&](int64_t) { return t == 0; });
  if (name == "row_write") return mask({1, 1, s, 1}, s, [&](int64_t j) { return j == t; });
  if (name == "row_keep") return mask({1, 1, 1, s}, s, [&](int64_t j) { return j <= t; });
  if (name == "row_slots") return mask({1, 1, slots, 1}, slots, [&](int64_t j) { return j / s == u; });
  if (name == "column_keep")
    return mask({1, 1, 1, slots}, slots, [&](int64_t j) { return j % s == t && j / s < u; });
  // Mixture: row 0; per column c, its slots in rows < u; columns c != t below row 0; the
  // slots (r, t) of rows r < u when t > 0 (top-left) / t < s - 1 (top-right).
  if (name == "first_row") return mask({1, 1, 1, 1}, 1, [&](int64_t) { return u == 0; });
  if (name == "column_rows_keep")
    return mask({1, 1, s, slots}, s * slots, [&](int64_t j) {
      const int64_t col = j / slots, slot = j % slots;
      return slot % s == col && slot / s < u;
    });
  if (name == "prev_row_keep") return mask({1, 1, 1, s}, s, [&](int64_t c) { return u > 0 && c != t; });
  if (name == "top_left_keep")
    return mask({1, 1, 1, slots}, slots, [&](int64_t j) { return t > 0 && j % s == t && j / s < u; });
  if (name == "top_right_keep")
    return mask({1, 1, 1, slots}, slots, [&](int64_t j) { return t < s - 1 && j % s == t && j / s < u; });
  // Logsparse levels l < M (block 2^l): p starts / ends its block, the current block's
  // slots up to p, bit l of p set (block (p >> l) - 1 is a summary slot).
  if (name == "level_start")
    return mask({1, 1, m, 1}, m, [&](int64_t l) { return p % (int64_t(1) << l) == 0; });
  if (name == "level_end")
    return mask({1, 1, m, 1}, m, [&](int64_t l) { return (p + 1) % (int64_t(1) << l) == 0; });
  if (name == "level_use") return mask({1, 1, 1, m}, m, [&](int64_t l) { return (p >> l) & 1; });
  if (name == "level_keep")
    return mask({1, 1, m, slots}, m * slots, [&](int64_t j) {
      const int64_t l = j / slots, slot = j % slots;
      return slot >= (p >> l << l) && slot <= p;
    });
  return internal_error("causal LM step: unknown input '" + name + "'");
}

// The KV-cache step: caches per LmStepSpec, fed back each position; capacity S doubles when
// full (rows copied once), as generate.cpp's decoder steps.
class CachedSteps {
 public:
  CachedSteps(const LmStepSpec& spec, Session& step, int64_t rows, int64_t positions, DType grows_dtype)
      : spec_(spec),
        step_(step),
        rows_(rows),
        positions_(positions),
        grows_dtype_(grows_dtype),
        names_(step_names(spec)) {}

  Status init() {
    slots_ = round_up(std::min(kFirstCacheSlots, positions_), spec_.segment);
    for (const LmStepSpec::Cache& c : spec_.caches) {
      const DType t = c.grows ? grows_dtype_ : DType::f32;
      LR_ASSIGN_OR_RETURN(
          Tensor z, Tensor::zeros(TensorDesc(t, {rows_, c.heads, c.grows ? slots_ : c.dim2, c.head_dim})));
      caches_.push_back(std::move(z));
    }
    return Status();
  }
  int64_t slots() const { return slots_; }
  int shapes() const { return shapes_; }
  int64_t bytes() const {
    int64_t n = 0;
    for (const Tensor& t : caches_) n += t.nbytes();
    return n;
  }

  // Feeds tokens[r] at position p; returns the logits [R, 1, V] (valid until the next call).
  Result<const float*> run(int64_t p, const std::vector<int64_t>& tokens) {
    if (p == slots_) {
      const int64_t grown = std::min(2 * slots_, round_up(positions_, spec_.segment));
      std::vector<int64_t> same(static_cast<size_t>(rows_));
      for (int64_t r = 0; r < rows_; ++r) same[size_t(r)] = r;
      for (size_t i = 0; i < caches_.size(); ++i)
        if (spec_.caches[i].grows) {
          LR_ASSIGN_OR_RETURN(caches_[i], gather_rows(caches_[i], same, grown));
        }
      slots_ = grown;
      ++shapes_;
    }
    std::vector<Tensor> host;
    for (const std::string& name : spec_.inputs) {
      LR_ASSIGN_OR_RETURN(Tensor x, step_input(name, p, slots_, spec_, tokens));
      host.push_back(std::move(x));
    }
    std::vector<NamedTensorRef> in;
    for (size_t i = 0; i < host.size(); ++i) in.push_back({names_[i], host[i].view()});
    for (size_t i = 0; i < caches_.size(); ++i) in.push_back({names_[host.size() + i], caches_[i].view()});
    LR_ASSIGN_OR_RETURN(out_, step_.run(in));
    return out_.back().tensor.data<float>();
  }

  // After a step: row r continues `source[r]` (identity: no copy).
  Status reorder(const std::vector<int64_t>& source, bool identity) {
    for (size_t i = 0; i < caches_.size(); ++i) {
      if (identity) {
        caches_[i] = std::move(out_[i].tensor);
      } else {
        LR_ASSIGN_OR_RETURN(caches_[i], gather_rows(out_[i].tensor, source, out_[i].tensor.desc().dim(2)));
      }
    }
    return Status();
  }

 private:
  const LmStepSpec& spec_;
  Session& step_;
  int64_t rows_, positions_, slots_ = 0;
  DType grows_dtype_;
  int shapes_ = 1;
  std::vector<std::string> names_;
  std::vector<Tensor> caches_;
  std::vector<NamedTensor> out_;
};

}  // namespace

Result<std::unique_ptr<Session>> causal_lm_step_session(std::shared_ptr<const Model> model,
                                                        const SessionOptions& options) {
  const auto* lm = dynamic_cast<const CausalLm*>(&model->architecture());
  if (lm == nullptr) return internal_error(model->arch() + ": generation needs a CausalLm architecture");
  std::vector<std::string> names = step_names(lm->step_spec());
  GraphFactory f = [model, names](std::span<const TensorDesc> descs) -> Result<Graph> {
    const auto& arch = dynamic_cast<const CausalLm&>(model->architecture());
    GraphBuilder b;
    const ModelOptions no_debug;
    GraphContext ctx(b, model->weights(), no_debug);
    for (size_t i = 0; i < names.size(); ++i) ctx.add_input(names[i], b.input(names[i], descs[i]));
    arch.build_step(ctx);
    ctx.finish();
    auto g = b.build();
    if (!g.ok()) return g.status().with_context(model->arch() + " cached step");
    return g;
  };
  return Session::create(std::move(f), names, options);
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

Result<GenerateResult> generate_causal_lm(const CausalLmSpec& spec, const Model& model, Session& step,
                                          const TensorView& ids, const GenerateOptions& o,
                                          DType cache_dtype) {
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
  BeamSearch search(batch, spec.pad, beam_rules(o, spec.vocab, spec.pad, eos, int(k), steps));
  GenerateResult result;
  LR_ASSIGN_OR_RETURN(Tensor last, Tensor::zeros(TensorDesc(DType::f32, {rows, spec.vocab})));
  const LmStepSpec step_spec = dynamic_cast<const CausalLm&>(model.architecture()).step_spec();
  if (cache_dtype != DType::f32 && cache_dtype != DType::bf16)
    return internal_error("causal LM generation: cache dtype must be f32 or bf16");
  CachedSteps cached(step_spec, step, rows, n + steps, cache_dtype);
  LR_RETURN_IF_ERROR(cached.init());
  for (int64_t p = 0; p + 1 < n; ++p) {  // prefill: the prompt's positions but the last
    std::vector<int64_t> col(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) col[size_t(r)] = seq[size_t(r)][size_t(p)];
    LR_RETURN_IF_ERROR(cached.run(p, col).status());
    LR_RETURN_IF_ERROR(cached.reorder({}, true));
  }
  for (int64_t t = 0; t < steps && !search.done(); ++t) {
    std::vector<int64_t> col(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) col[size_t(r)] = seq[size_t(r)].back();
    LR_ASSIGN_OR_RETURN(const float* logits, cached.run(n + t - 1, col));
    std::memcpy(last.data<float>(), logits, size_t(rows * spec.vocab) * sizeof(float));
    if (o.on_step_logits) o.on_step_logits(t, last);
    search.advance(t, last.data<float>());
    result.steps = t + 1;
    LR_RETURN_IF_ERROR(cached.reorder(search.source_rows(), search.identity_order()));
    const std::vector<int64_t> chosen = search.last_tokens();
    std::vector<std::vector<int64_t>> next(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      next[size_t(r)] = seq[size_t(search.source_rows()[size_t(r)])];
      next[size_t(r)].push_back(chosen[size_t(r)]);
    }
    seq = std::move(next);
  }
  result.step_shapes = cached.shapes();
  result.cache_slots = cached.slots();
  result.cache_bytes = cached.bytes();
  search.take_results(o.num_return_sequences, &result.sequences, &result.scores);
  return result;
}

}  // namespace longrun::models
