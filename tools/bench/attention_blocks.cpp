#include "attention_blocks.h"

#include <cmath>
#include <new>
#include <nlohmann/json.hpp>

#include "combiner/combiner_attention.h"
#include "common/blocks.h"

namespace longrun::bench {
namespace {

struct AttentionConfig {
  std::string form;
  models::combiner::RowSummaryMode row_summary = models::combiner::RowSummaryMode::proj;  // axial only
  int64_t heads = 8, head_dim = 64, segment = 128;
};

Result<AttentionConfig> parse(const std::string& json) {
  const std::string what = "--config (attention)";
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) return invalid_argument(what + ": expected a JSON object, found '" + json + "'");
  AttentionConfig c;
  for (const auto& [key, value] : j.items()) {
    if (key == "form") {
      if (!value.is_string()) return invalid_argument(what + ": field 'form': expected a string");
      c.form = value.get<std::string>();
    } else if (key == "row_summary") {
      const auto mode =
          value.is_string() ? models::combiner::parse_row_summary(value.get<std::string>()) : std::nullopt;
      if (!mode)
        return invalid_argument(
            what + ": field 'row_summary': expected \"proj\", \"none\" or \"wsum\", found " + value.dump());
      c.row_summary = *mode;
    } else if (key == "heads" || key == "head_dim" || key == "segment") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > 65536)
        return invalid_argument(what + ": field '" + key + "': expected an integer in [1, 65536], found " +
                                value.dump());
      (key == "heads" ? c.heads : key == "head_dim" ? c.head_dim : c.segment) = value.get<int64_t>();
    } else {
      return invalid_argument(what + ": unknown field '" + key +
                              "' (form, row_summary, heads, head_dim, segment)");
    }
  }
  if (c.form != "dense" && c.form != "fixed" && c.form != "axial")
    return invalid_argument(what + ": field 'form': expected \"dense\", \"fixed\" or \"axial\", found \"" +
                            c.form + "\"");
  if (c.row_summary != models::combiner::RowSummaryMode::proj && c.form != "axial")
    return invalid_argument(what + ": field 'row_summary' applies to form \"axial\" only");
  return c;
}

// Collects inputs and random weights while the graph is built.
struct Maker {
  GraphBuilder b;
  Workload w;
  uint32_t seed;
  ValueId input(const std::string& name, std::vector<int64_t> dims, float scale) {
    const TensorDesc d(DType::f32, std::move(dims));
    BufferPtr buf = random_f32(d.numel(), seed++, -scale, scale);
    w.inputs.push_back(TensorView{d, buf->data()});
    w.owners.push_back(buf);
    return b.input(name, d);
  }
  ValueId weight(const std::string& name, std::vector<int64_t> dims, float lo, float hi) {
    const TensorDesc d(DType::f32, std::move(dims));
    BufferPtr buf = random_f32(d.numel(), seed++, lo, hi);
    w.weight_bytes += d.nbytes();
    return b.weight(name, d, buf->data(), buf);
  }
};

}  // namespace

Status check_attention_config(const std::string& config_json) { return parse(config_json).status(); }

Result<Workload> attention_block(const std::string& config_json, int64_t batch, int64_t n, uint32_t seed) {
  LR_ASSIGN_OR_RETURN(const AttentionConfig cfg, parse(config_json));
  const int64_t h = cfg.heads, hd = cfg.head_dim, hh = h * hd;
  if (cfg.form != "dense" && n % cfg.segment != 0)
    return invalid_argument("attention " + cfg.form + ": N " + std::to_string(n) +
                            " is not a multiple of the segment " + std::to_string(cfg.segment));
  try {
    Maker m{{}, {}, seed};
    const float scale = float(1.0 / std::sqrt(double(hd)));
    const ValueId q = m.input("q", {batch, h, n, hd}, scale), k = m.input("k", {batch, h, n, hd}, 1.0f),
                  v = m.input("v", {batch, h, n, hd}, 1.0f);
    ValueId y = kNoValue;
    if (cfg.form == "dense") {
      y = m.b.attention({q, k, v}, {.scale = 1.0f}, "attention");
    } else {
      // The model's builder context; the row summary below binds its own weights, so the
      // store is empty.
      const models::WeightStore no_weights;
      const ModelOptions options;
      models::GraphContext c(m.b, no_weights, options);
      models::combiner::Form form;
      form.variant =
          cfg.form == "fixed" ? models::combiner::Variant::fixed : models::combiner::Variant::axial;
      form.causal = false;
      form.segment = cfg.segment;
      form.row_summary = cfg.row_summary;
      models::combiner::RowSummary row_summary;
      if (form.row_summary == models::combiner::RowSummaryMode::proj && cfg.form == "axial") {
        // K~ = W2 LN'(W1 R + x) as models/combiner/combiner.cpp builds it ([in, out] kernels).
        const ValueId x = m.input("x", {batch, n, hh}, 1.0f);
        const float a = float(1.0 / std::sqrt(double(hh)));
        const ValueId w1 = m.weight("W1", {hh, hh}, -a, a), w2 = m.weight("W2", {hh, hh}, -a, a);
        const ValueId gamma = m.weight("LN.scale", {hh}, 0.9f, 1.1f),
                      beta = m.weight("LN.bias", {hh}, -0.1f, 0.1f);
        row_summary = [&c, x, w1, w2, gamma, beta, h, hd, hh](ValueId r) {
          if (!c.ok()) return kNoValue;
          const TensorDesc rd = c.desc(r);  // [B, H, n, s, hd]
          const int64_t b = rd.dim(0), np = rd.dim(2) * rd.dim(3);
          const ValueId merged = models::reshape(c, models::transpose(c, r, {0, 2, 3, 1, 4}), {b, np, hh});
          const ValueId s1 = c.b.add({c.b.matmul({merged, w1}, {}, "W1"), x}, {}, "W1.residual");
          const ValueId s2 =
              c.b.matmul({c.b.layer_norm({s1, gamma, beta}, {.eps = 1e-6f}, "LN"), w2}, {}, "W2");
          return models::reshape(c, models::split_heads(c, s2, h, hd),
                                 {rd.dim(0), rd.dim(1), rd.dim(2), rd.dim(3), rd.dim(4)});
        };
      }
      y = models::combiner::combiner_attention(c, form, {.q = q, .k = k, .v = v}, row_summary, "attention",
                                               "");
    }
    m.b.output(y, "y");
    LR_ASSIGN_OR_RETURN(m.w.graph, m.b.build());
    return std::move(m.w);
  } catch (const std::bad_alloc&) {
    return out_of_memory("cannot allocate the inputs of attention " + cfg.form + " at N " +
                         std::to_string(n));
  }
}

}  // namespace longrun::bench
