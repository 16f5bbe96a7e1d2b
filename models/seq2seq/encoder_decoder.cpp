// The generic encoder-decoder: parameter table, full forward, generation graphs.
//
//   encoder:  x = embed_scale * E_src[ids] + P(ids)      (P per PositionKind)
//             x = LN_emb(x) if layernorm_embedding;  x *= non_pad (fairseq only)
//             x = layers(x, key mask);  x = LN(x) if pre-LN      -> last_hidden_state
//   decoder:  y = embed_scale * E_tgt[dec_ids] + P(dec_ids); LN_emb; layers (causal self-attn
//             + cross-attn on x with the source mask); LN if pre-LN
//             logits = y W_out^T (+ final_logits_bias)
#include "seq2seq/encoder_decoder.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "common/blocks.h"
#include "common/fourier_filter.h"

namespace longrun::models {
namespace {

std::string layer_prefix(const std::string& side, int64_t i) {
  return side + "layers." + std::to_string(i) + ".";
}

int64_t position_rows(const Seq2SeqSpec& s, int64_t max_positions) {
  return s.positions == PositionKind::learned_arange ? max_positions + 2 : max_positions + s.pad + 1;
}

// fairseq SinusoidalPositionalEmbedding.get_embedding: [sin(p f), cos(p f)] (halves
// concatenated), f_k = exp(-k ln(10000) / (half - 1)); a zero column for odd D; row pad zero.
// Computed in double and rounded once (fairseq computes the argument in f32, which differs by
// up to ~1e-5 at position 200; the trained weights do not depend on that rounding).
std::shared_ptr<const std::vector<float>> sinusoidal_table(int64_t rows, int64_t dim, int64_t pad) {
  auto t = std::make_shared<std::vector<float>>(size_t(rows * dim), 0.0f);
  const int64_t half = dim / 2;
  const double step = std::log(10000.0) / double(half - 1);
  for (int64_t p = 0; p < rows; ++p) {
    if (p == pad) continue;
    for (int64_t k = 0; k < half; ++k) {
      const double a = double(p) * std::exp(-double(k) * step);
      (*t)[size_t(p * dim + k)] = float(std::sin(a));
      (*t)[size_t(p * dim + half + k)] = float(std::cos(a));
    }
  }
  return t;
}

class EncoderDecoder final : public Seq2SeqArchitecture {
 public:
  explicit EncoderDecoder(Seq2SeqSpec s) : s_(std::move(s)) {
    if (s_.positions == PositionKind::sinusoidal_fairseq)
      sin_rows_ = position_rows(s_, std::max(s_.max_source_positions, s_.max_target_positions));
  }

  std::vector<ParamSpec> parameters() const override {
    std::vector<ParamSpec> t;
    std::set<std::string> seen;
    auto table = [&](const std::string& prefix, int64_t rows) {
      if (seen.insert(prefix).second) add_embedding(&t, prefix, rows, s_.dim);
    };
    table(s_.encoder_tokens, s_.src_vocab);
    table(s_.decoder_tokens, s_.tgt_vocab);
    for (const char* side : {"encoder.", "decoder."}) {
      const std::string p = s_.root + side;
      const bool enc = side[0] == 'e';
      if (s_.positions != PositionKind::sinusoidal_fairseq)
        table(p + "embed_positions",
              position_rows(s_, enc ? s_.max_source_positions : s_.max_target_positions));
      if (s_.layernorm_embedding) add_layer_norm(&t, p + "layernorm_embedding", s_.dim);
      for (int64_t i = 0; i < (enc ? s_.encoder_layers : s_.decoder_layers); ++i) {
        if (enc)
          add_encoder_layer(&t, layer_prefix(p, i), s_.encoder);
        else
          add_decoder_layer(&t, layer_prefix(p, i), s_.decoder);
        if (s_.selection.enabled && i % s_.selection.group_size == 0) {
          add_selection(&t, layer_prefix(p, i) + "self_attn", s_.dim, s_.selection);
          if (!enc) add_selection(&t, layer_prefix(p, i) + "encoder_attn", s_.dim, s_.selection);
        }
      }
      if ((enc ? s_.encoder : s_.decoder).normalize_before) add_layer_norm(&t, p + "layer_norm", s_.dim);
    }
    if (seen.insert(s_.output_projection).second)
      add_linear(&t, s_.output_projection, s_.tgt_vocab, s_.dim, false);
    if (s_.final_logits_bias) t.push_back({"final_logits_bias", {1, s_.tgt_vocab}, false});
    return t;
  }

  std::vector<ModelInput> inputs() const override {
    std::vector<ModelInput> in = {
        {"input_ids",
         true,
         {DType::i32, DType::i64},
         "[B, N] source token ids, N <= " + std::to_string(s_.max_source_positions)},
        {"decoder_input_ids",
         true,
         {DType::i32, DType::i64},
         "[B, T] target prefix (starting with the decoder start token), T <= " +
             std::to_string(max_decoder_length())},
    };
    if (!s_.padding_from_tokens)
      in.push_back(attention_mask_input("[B, N] 1 = token, 0 = padding (default: all ones)"));
    return in;
  }

  std::vector<std::string> outputs() const override { return {"last_hidden_state", "logits"}; }

  std::vector<std::string> debug_outputs() const override {
    std::vector<std::string> out = {"debug.encoder.embeddings"};
    for (int64_t i = 0; i < s_.encoder_layers; ++i) {
      if (is_filter_layer(i)) out.push_back("debug.encoder.layer" + std::to_string(i) + ".filtered");
      out.push_back("debug.encoder.layer" + std::to_string(i) + ".output");
    }
    out.push_back("debug.decoder.embeddings");
    for (int64_t i = 0; i < s_.decoder_layers; ++i)
      out.push_back("debug.decoder.layer" + std::to_string(i) + ".output");
    return out;
  }

  std::string config_json() const override { return s_.config_json; }

  std::optional<InputLengthLimit> max_input_length() const override {
    return InputLengthLimit{s_.max_source_positions, "max_source_positions of the config"};
  }

  GenerationSpec generation_spec() const override {
    return {.tgt_vocab = s_.tgt_vocab,
            .pad = s_.pad,
            .eos = s_.eos,
            .decoder_start = s_.decoder_start,
            .decoder_layers = s_.decoder_layers,
            .heads = s_.decoder.heads,
            .head_dim = s_.decoder.head_dim(),
            .position_offset = s_.positions == PositionKind::learned_arange ? 2 : s_.pad + 1,
            .max_decoder_length = max_decoder_length(),
            .padding_from_tokens = s_.padding_from_tokens,
            .source_unmasked = !s_.filter_layers.empty(),
            .selection_groups = selection_groups(),
            .selection_dim = s_.selection.enabled ? s_.selection.dim : 0};
  }

  void build(GraphContext& c) const override {
    const Source src = encode(c);
    if (!c.ok()) return;
    c.output(src.hidden, "last_hidden_state");
    const ValueId ids = c.input("decoder_input_ids");
    const TensorDesc& d = c.desc(ids);
    if (d.rank() != 2 || d.dim(0) != src.batch || d.dim(1) < 1 || d.dim(1) > max_decoder_length()) {
      c.fail(invalid_argument(
          "input 'decoder_input_ids': expected [" + std::to_string(src.batch) +
          ", T] (the batch of input_ids) with 1 <= T <= " + std::to_string(max_decoder_length()) +
          " (the decoder's position table), found " + d.to_string()));
      return;
    }
    DecoderSelfAttention self_template;
    ValueId y = decoder_embed(c, ids, kNoValue, &self_template.padding_mask);
    c.debug(y, "debug.decoder.embeddings");
    const std::string p = s_.root + "decoder.";
    SharedSelection shared;
    for (int64_t i = 0; i < s_.decoder_layers; ++i) {
      const std::string lp = layer_prefix(p, i);
      const auto [k, v] = cross_attention_kv(c, src.hidden, lp, s_.decoder);
      DecoderSelfAttention self = self_template;
      y = decoder_layer(c, y, lp, s_.decoder, self, {k, v, src.key_mask, src.hidden}, selector(c, i, shared));
      c.debug(y, "debug.decoder.layer" + std::to_string(i) + ".output");
    }
    c.output(lm_head(c, y), "logits");
  }

  void build_generation_encoder(GraphContext& c) const override {
    const Source src = encode(c);
    const std::string p = s_.root + "decoder.";
    for (int64_t i = 0; i < s_.decoder_layers; ++i) {
      const auto [k, v] = cross_attention_kv(c, src.hidden, layer_prefix(p, i), s_.decoder);
      c.output(k, "cross." + std::to_string(i) + ".key");
      c.output(v, "cross." + std::to_string(i) + ".value");
    }
    for (int64_t g = 0; g < selection_groups(); ++g) {
      const std::string attn = layer_prefix(p, g * s_.selection.group_size) + "encoder_attn";
      const ValueId ks = selection_keys(c, src.hidden, attn, s_.selection);
      if (!c.ok()) return;
      c.output(reshape(c, ks, {src.batch, 1, c.desc(ks).dim(1), s_.selection.dim}),
               "cross_select." + std::to_string(g) + ".key");
    }
  }

  void build_decoder_step(GraphContext& c) const override {
    ValueId y = decoder_embed(c, c.input("decoder_input_ids"), c.input("decoder_position"), nullptr);
    const std::string p = s_.root + "decoder.";
    SharedSelection shared;
    std::vector<ValueId> present_select;
    for (int64_t i = 0; i < s_.decoder_layers; ++i) {
      const std::string n = std::to_string(i);
      DecoderSelfAttention self;
      self.past_k = c.input("past." + n + ".key");
      self.past_v = c.input("past." + n + ".value");
      self.write_slot = c.input("write_slot");
      self.slot_mask = c.input("slot_mask");
      const DecoderCrossAttention cross{c.input("cross." + n + ".key"), c.input("cross." + n + ".value"),
                                        c.input("encoder_mask")};
      y = decoder_layer(c, y, layer_prefix(p, i), s_.decoder, self, cross,
                        step_selector(c, i, shared, &present_select));
      c.output(self.present_k, "present." + n + ".key");
      c.output(self.present_v, "present." + n + ".value");
    }
    for (size_t g = 0; g < present_select.size(); ++g)
      c.output(present_select[g], "present_select." + std::to_string(g) + ".key");
    c.output(lm_head(c, y), "logits");
  }

 private:
  struct Source {
    ValueId hidden = kNoValue;
    ValueId key_mask = kNoValue;  // u8 [B, N] or kNoValue (no padding)
    int64_t batch = 0;
  };

  int64_t max_decoder_length() const { return s_.max_target_positions; }

  // The selection of the current group per attention kind ("self_attn", "encoder_attn").
  using SharedSelection = std::map<std::string, ValueId>;

  int64_t selection_groups() const {
    if (!s_.selection.enabled) return 0;
    return (s_.decoder_layers + s_.selection.group_size - 1) / s_.selection.group_size;
  }

  // Layer i's KeySelector in a decoder step (docs/models.md#lasformer incremental decoding): the new row's
  // selection key joins the cached ones ("past_select.<g>.key", written at the step's slot
  // like K/V) and the row selects among the valid slots; cross-attention selects among the
  // encoder's cached keys ("cross_select.<g>.key"). Other layers of the group reuse Sel.
  KeySelector step_selector(GraphContext& c, int64_t i, SharedSelection& shared,
                            std::vector<ValueId>* present_select) const {
    if (!s_.selection.enabled) return {};
    return [this, &c, i, &shared, present_select](const std::string& attn, ValueId xq, ValueId xk, bool,
                                                  ValueId key_mask) {
      const std::string kind = attn.substr(attn.rfind('.') + 1);
      ValueId& sel = shared[kind];
      if (i % s_.selection.group_size != 0 || !c.ok()) return sel;
      const std::string g = std::to_string(i / s_.selection.group_size);
      const int64_t ds = s_.selection.dim;
      ValueId cache = kNoValue;
      if (kind == "self_attn") {
        const int64_t rows = c.desc(xk).dim(0);
        const ValueId row = reshape(c, selection_keys(c, xk, attn, s_.selection), {rows, 1, 1, ds});
        cache = c.b.where({c.input("write_slot"), row, c.input("past_select." + g + ".key")}, {},
                          attn + ".selection.cache");
        present_select->push_back(cache);
      } else {
        cache = c.input("cross_select." + g + ".key");
      }
      if (!c.ok()) return kNoValue;
      const TensorDesc& d = c.desc(cache);
      const ValueId ks = reshape(c, cache, {d.dim(0), d.dim(2), ds});
      sel = select_with_keys(c, xq, ks, attn, s_.selection, false, key_mask);
      return sel;
    };
  }

  // Layer i's KeySelector: the lowest layer of a group selects, the others reuse its Sel.
  KeySelector selector(GraphContext& c, int64_t i, SharedSelection& shared) const {
    if (!s_.selection.enabled) return {};
    return [this, &c, i, &shared](const std::string& attn, ValueId xq, ValueId xk, bool causal,
                                  ValueId key_mask) {
      ValueId& sel = shared[attn.substr(attn.rfind('.') + 1)];
      if (i % s_.selection.group_size == 0)
        sel = select_keys(c, xq, xk, attn, s_.selection, causal, key_mask);
      return sel;
    };
  }
  bool is_filter_layer(int64_t i) const {
    return std::find(s_.filter_layers.begin(), s_.filter_layers.end(), i) != s_.filter_layers.end();
  }

  // embed_scale * E[ids] + positions (+ layernorm_embedding). step_position: i64 [1] row of
  // the position table for a one-token step (kNoValue: the whole prefix). *padding_mask gets
  // the u8 [B, N] mask of the fairseq decoder (pads in the prefix), when asked.
  ValueId embed(GraphContext& c, const std::string& side, const std::string& tokens, ValueId ids,
                ValueId step_position, ValueId* non_pad) const {
    ValueId x = embedding(c, ids, tokens);
    if (s_.embed_scale != 1.0) x = c.b.scale({x}, {.scale = float(s_.embed_scale)}, side + "embed_scale");
    if (!c.ok()) return kNoValue;
    const std::string pos_prefix = side + "embed_positions";
    ValueId table = kNoValue;
    if (s_.positions == PositionKind::sinusoidal_fairseq) {
      // Rows this graph can index: pad + 1 + the prefix length, or for a one-token step
      // pad + 1 + the cache's slot count (generate.cpp: position = pad + 1 + slot).
      const ValueId span = step_position == kNoValue ? ids : c.input("slot_mask");
      if (!c.ok()) return kNoValue;
      const int64_t rows = std::min(sin_rows_, s_.pad + 1 + c.b.desc(span).dim(1));
      table = constant(c, pos_prefix + ".sinusoidal", TensorDesc(DType::f32, {rows, s_.dim}),
                       sinusoid_rows(rows));
    } else
      table = c.weight(pos_prefix + ".weight");
    ValueId pos_ids = step_position;
    if (pos_ids == kNoValue && s_.positions == PositionKind::learned_arange) {
      x = add_learned_positions(c, x, pos_prefix, 2);
    } else {
      if (pos_ids == kNoValue) {
        auto [pos, np] = make_positions(c, ids, s_.pad, vocab_of(tokens), side + "make_positions");
        pos_ids = pos;
        if (non_pad != nullptr) *non_pad = np;
      }
      x = c.b.add({x, c.b.embedding({table, pos_ids}, {}, pos_prefix)}, {}, pos_prefix + ".add");
    }
    if (s_.layernorm_embedding) x = layer_norm(c, x, side + "layernorm_embedding", kSeq2SeqLayerNormEps);
    return x;
  }

  int64_t vocab_of(const std::string& tokens) const {
    return tokens == s_.encoder_tokens ? s_.src_vocab : s_.tgt_vocab;
  }

  Source encode(GraphContext& c) const {
    Source src;
    const InputLengthLimit limit = *max_input_length();
    const TokenInputs in = token_inputs(c, limit.tokens, limit.source);
    if (!c.ok()) return src;
    src.batch = in.batch;
    const std::string side = s_.root + "encoder.";
    ValueId non_pad = kNoValue;
    ValueId x = embed(c, side, s_.encoder_tokens, in.ids, kNoValue, &non_pad);
    if (s_.padding_from_tokens) {
      if (non_pad == kNoValue)
        non_pad = make_positions(c, in.ids, s_.pad, s_.src_vocab, side + "padding").second;
      src.key_mask = c.b.cast({non_pad}, {.to = DType::u8}, side + "padding_mask");
      // fairseq: "account for padding while computing the representation".
      x = c.b.mul({x, reshape(c, non_pad, {in.batch, in.length, 1})}, {}, side + "zero_pads");
    } else if (in.mask != kNoValue) {
      src.key_mask = mask_to_u8(c, in.mask);
    }
    c.debug(x, "debug.encoder.embeddings");
    std::vector<ValueId> global;  // Fourier-BART's global residual terms
    SharedSelection shared;
    for (int64_t i = 0; i < s_.encoder_layers; ++i) {
      const std::string lp = layer_prefix(side, i);
      if (is_filter_layer(i)) {
        src.key_mask = kNoValue;  // from the first filter on "not applicable anymore", cross-attn too
        global.push_back(x);
        x = filter_sequence(c, x, s_.filter_ratio, lp + "filter");
        c.debug(x, "debug.encoder.layer" + std::to_string(i) + ".filtered");
      }
      std::function<ValueId(ValueId)> before_final_norm;
      if (i == s_.encoder_layers - 1 && !global.empty())
        before_final_norm = [&](ValueId h) {
          return global_residual(c, global, h, in.length, lp + "global_residual");
        };
      x = encoder_layer(c, x, lp, s_.encoder, src.key_mask, before_final_norm, selector(c, i, shared));
      // A view: the last layer's output may also be last_hidden_state (a value is output once).
      if (c.ok()) {
        const TensorDesc& d = c.desc(x);
        c.debug(reshape(c, x, {d.dim(0), d.dim(1), d.dim(2)}),
                "debug.encoder.layer" + std::to_string(i) + ".output");
      }
    }
    if (s_.encoder.normalize_before) x = layer_norm(c, x, side + "layer_norm", kSeq2SeqLayerNormEps);
    src.hidden = x;
    return src;
  }

  ValueId decoder_embed(GraphContext& c, ValueId ids, ValueId step_position, ValueId* padding_mask) const {
    const std::string side = s_.root + "decoder.";
    ValueId non_pad = kNoValue;
    const ValueId y = embed(c, side, s_.decoder_tokens, ids, step_position, &non_pad);
    // fairseq masks pad keys of the target prefix (self_attn_padding_mask); HF BART does not.
    if (padding_mask != nullptr && s_.padding_from_tokens && non_pad != kNoValue)
      *padding_mask = c.b.cast({non_pad}, {.to = DType::u8}, side + "padding_mask");
    return y;
  }

  ValueId lm_head(GraphContext& c, ValueId y) const {
    const std::string p = s_.root + "decoder.";
    if (s_.decoder.normalize_before) y = layer_norm(c, y, p + "layer_norm", kSeq2SeqLayerNormEps);
    ValueId logits = linear(c, y, s_.output_projection, Activation::none, false);
    if (s_.final_logits_bias)
      logits = c.b.add({logits, c.weight("final_logits_bias")}, {}, "final_logits_bias");
    return logits;
  }

  Seq2SeqSpec s_;
  // The sinusoid table grows on demand like fairseq's (rows do not depend on the table's
  // size, so a graph uses the first rows of whatever table is current): a model holds rows
  // for the longest sequence it ran, not for max_*_positions (16 MiB at 8192 x 512).
  std::shared_ptr<const std::vector<float>> sinusoid_rows(int64_t rows) const {
    std::lock_guard<std::mutex> lock(sin_mutex_);
    if (sin_table_rows_ < rows) {
      int64_t grown = 64;
      while (grown < rows) grown *= 2;
      sin_table_rows_ = std::min(grown, sin_rows_);
      sin_table_ = sinusoidal_table(sin_table_rows_, s_.dim, s_.pad);
    }
    return sin_table_;
  }

  int64_t sin_rows_ = 0;  // the most rows a table may need (max positions)
  mutable std::mutex sin_mutex_;
  mutable std::shared_ptr<const std::vector<float>> sin_table_;
  mutable int64_t sin_table_rows_ = 0;
};

}  // namespace

Result<std::unique_ptr<Architecture>> make_encoder_decoder(Seq2SeqSpec spec) {
  return std::unique_ptr<Architecture>(new EncoderDecoder(std::move(spec)));
}

}  // namespace longrun::models
