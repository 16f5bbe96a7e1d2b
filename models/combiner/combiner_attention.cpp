// The Combiner attention forms (docs/models.md#combiner). Notation as docs/models.md#combiner-lm: query i =
// (u, t) with row u = i div s, column t = i mod s; n = Np / s rows. Every form lists its slot groups (direct
// keys and summaries) and hands them to combine(), which runs ONE softmax per query.
#include "combiner/combiner_attention.h"

#include <limits>
#include <vector>

#include "common/blocks.h"

namespace longrun::models::combiner {

std::optional<RowSummaryMode> parse_row_summary(std::string_view name) {
  if (name == "proj") return RowSummaryMode::proj;
  if (name == "none") return RowSummaryMode::none;
  if (name == "wsum") return RowSummaryMode::wsum;
  return std::nullopt;
}

const char* row_summary_name(RowSummaryMode mode) {
  switch (mode) {
    case RowSummaryMode::none: return "none";
    case RowSummaryMode::wsum: return "wsum";
    case RowSummaryMode::proj: break;
  }
  return "proj";
}
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Shapes and the key-padding views every form needs. The cols layouts are transposes
// (copies, 2 x 16 MB each at N = 8192): made on first use, so a form that never reads one
// (fixed reads none, axial not v) does not pay for it.
struct Ctx {
  int64_t b = 0, h = 0, np = 0, hd = 0, s = 1, n = 0;
  ValueId q_rows = kNoValue, k_rows = kNoValue, v_rows = kNoValue;            // [B, H, n, s, hd]
  ValueId q_cols(GraphContext& c) const { return cols(c, q_rows, q_cols_); }  // [B, H, s, n, hd]
  ValueId k_cols(GraphContext& c) const { return cols(c, k_rows, k_cols_); }
  ValueId v_cols(GraphContext& c) const { return cols(c, v_rows, v_cols_); }
  // key_padding only (else kNoValue):
  ValueId keep_heads = kNoValue;  // [B, 1, n, s, 1]: clears pads of a rows-layout tensor
  ValueId keep_rows = kNoValue;   // [B, 1, n, 1, s]: key (u, c) of rows-layout logits
  ValueId keep_cols = kNoValue;   // [B, 1, s, 1, n]: key (r, t) of cols-layout logits
  ValueId real = kNoValue;        // f32 [B, n, s] 0/1
  ValueId key_mask = kNoValue;    // u8 [B, Np]

 private:
  static ValueId cols(GraphContext& c, ValueId rows, ValueId& cached) {
    if (cached == kNoValue) cached = swap_blocks(c, rows);
    return cached;
  }
  mutable ValueId q_cols_ = kNoValue, k_cols_ = kNoValue, v_cols_ = kNoValue;
};

Ctx make_ctx(GraphContext& c, const Heads& x, int64_t s, const std::string& name) {
  Ctx z;
  if (!c.ok()) return z;
  const TensorDesc& d = c.desc(x.q);
  z.b = d.dim(0), z.h = d.dim(1), z.np = d.dim(2), z.hd = d.dim(3), z.s = s, z.n = z.np / s;
  auto rows = [&](ValueId t) { return reshape(c, t, {z.b, z.h, z.n, z.s, z.hd}); };
  z.q_rows = rows(x.q), z.k_rows = rows(x.k), z.v_rows = rows(x.v);
  if (x.key_mask != kNoValue) {
    z.keep_heads = reshape(c, x.key_mask, {z.b, 1, z.n, z.s, 1});
    z.keep_rows = reshape(c, x.key_mask, {z.b, 1, z.n, 1, z.s});
    z.keep_cols =
        reshape(c, transpose(c, reshape(c, x.key_mask, {z.b, z.n, z.s}), {0, 2, 1}), {z.b, 1, z.s, 1, z.n});
    z.real = reshape(c, c.b.cast({x.key_mask}, {.to = DType::f32}, name + ".real"), {z.b, z.n, z.s});
    z.key_mask = x.key_mask;
  }
  return z;
}

// u8 "this partition holds a real token" from an f32 0/1 pooled mask.
ValueId nonempty(GraphContext& c, ValueId pooled_real, const std::string& name) {
  return c.b.cast({pooled_real}, {.to = DType::u8}, name + ".nonempty");
}

// --- Fixed (docs/models.md#combiner-fixed) -------------------------------------------------------
ValueId fixed(GraphContext& c, const Form& f, const Ctx& z, const std::string& name,
              const std::string& debug) {
  const bool kp = z.real != kNoValue;
  // Max-pooled query and key of every segment (pads excluded in key_padding mode), and the
  // local expectation E_r = sum_{j in segment r} softmax_j(qmax_r . k_j) v_j.
  auto pool = [&](ValueId rows, const std::string& what) {
    const ValueId x = masked(c, rows, {z.keep_heads}, -kInf, name + "." + what + ".pads");
    return c.b.segment_max({x}, {.axis = 3, .segment = z.s}, name + "." + what + "max");  // [B,H,n,1,hd]
  };
  ValueId qmax = pool(z.q_rows, "q"), kmax = pool(z.k_rows, "k");
  ValueId has_real = kNoValue;
  if (kp) {
    has_real = nonempty(c, c.b.segment_max({z.real}, {.axis = 2, .segment = z.s}), name);  // [B, n, 1]
    const ValueId keep = reshape(c, has_real, {z.b, 1, z.n, 1, 1});
    qmax = masked(c, qmax, {keep}, 0.0f, name + ".qmax.empty");
    kmax = masked(c, kmax, {keep}, 0.0f, name + ".kmax.empty");
  }
  const ValueId e = attend(c, qmax, z.k_rows, z.v_rows, {z.keep_rows}, name + ".local");  // [B,H,n,1,hd]
  if (!debug.empty()) c.debug(reshape(c, kmax, {z.b, z.h, z.n, z.hd}), debug + ".summary_keys");

  const int64_t n = z.n, s = z.s;
  SlotGroup direct{.key = z.k_rows, .value = z.v_rows, .name = "direct"};
  SlotGroup summary{.key = reshape(c, kmax, {z.b, z.h, 1, n, z.hd}),
                    .value = reshape(c, e, {z.b, z.h, 1, n, z.hd}),
                    .name = "summary"};
  if (f.causal) {
    // JAX: own segment up to t; every earlier segment r < u as one summary slot.
    direct.keeps = {
        keep_mask(c, name + ".direct.causal", {s, s}, [](int64_t, int64_t t, int64_t j) { return j <= t; })};
    summary.keeps = {keep_mask(c, name + ".summary.causal", {n, s, n},
                               [](int64_t u, int64_t, int64_t r) { return r < u; })};
  } else {
    // TF: the whole own segment and ALL n summaries (own segment counted twice).
    direct.keeps = {z.keep_rows};
    if (kp) summary.keeps = {reshape(c, has_real, {z.b, 1, 1, 1, n})};
  }
  return combine(c, z.q_rows, kNoValue, {direct, summary}, name);  // no cols-layout group
}

// --- Axial (docs/models.md#combiner-axial)  ------------------------------------------------------
// The fused attention op on the rows as a batch ([B, H * n, s, hd] is a view of the rows
// layout), optionally with each query's log-sum-exp ([B, H, Np]).
struct RowAttention {
  ValueId y = kNoValue, lse = kNoValue;
};
RowAttention rows_attention(GraphContext& c, const Ctx& z, ValueId values, bool causal, bool with_lse,
                            const std::string& name) {
  auto batch = [&](ValueId t) { return reshape(c, t, {z.b, z.h * z.n, z.s, z.hd}); };
  const ValueId y = c.b.attention({batch(z.q_rows), batch(z.k_rows), batch(values)},
                                  {.scale = 1.0f, .causal = causal, .with_lse = with_lse}, name);
  return {reshape(c, y, {z.b, z.h, z.n, z.s, z.hd}),
          with_lse ? reshape(c, c.b.output_of(y, 1), {z.b, z.h, z.np}) : kNoValue};
}

ValueId axial(GraphContext& c, const Form& f, const Ctx& z, const RowSummary& row_summary,
              const std::string& name, const std::string& debug) {
  // R[r, t]: full (non-causal) attention inside row r; K~ per f.row_summary: W2 LN'(W1 R + x)
  // ('proj'), k ('none') or the same row attention over the keys ('wsum').
  // Without key padding the row attentions are the fused attention op, and the direct keys'
  // softmax (bidirectional: R itself) is handed to axial_attention with its log-sum-exp.
  const bool kp = z.key_mask != kNoValue;
  RowAttention r;
  if (kp)
    r.y = attend(c, z.q_rows, z.k_rows, z.v_rows, {z.keep_rows}, name + ".row");
  else
    r = rows_attention(c, z, z.v_rows, false, !f.causal, name + ".row");
  const ValueId k_sum = f.row_summary == RowSummaryMode::none ? z.k_rows
                        : f.row_summary == RowSummaryMode::wsum
                            ? (kp ? attend(c, z.q_rows, z.k_rows, z.k_rows, {z.keep_rows}, name + ".row_wsum")
                                  : rows_attention(c, z, z.k_rows, false, false, name + ".row_wsum").y)
                            : row_summary(r.y);
  if (!c.ok()) return kNoValue;
  if (!debug.empty()) c.debug(reshape(c, k_sum, {z.b, z.h, z.np, z.hd}), debug + ".summary_keys");
  // One softmax per query (u, t) over the direct keys of row u (causal: j <= t) and the
  // summary slots r of column t, key K~[r, t] and value R[r, t] (causal: r < u; TF
  // bidirectional: every row, the own one included). Key padding (bidirectional only; the
  // causal forms mask by position) drops pads from both.
  auto flat = [&](ValueId t) { return reshape(c, t, {z.b, z.h, z.np, z.hd}); };
  AxialAttentionAttrs at{.scale = 1.0f, .segment = z.s, .causal = f.causal};
  std::vector<ValueId> in;
  if (kp) {
    in = {flat(z.q_rows), flat(z.k_rows), flat(z.v_rows), flat(k_sum), flat(r.y)};
    at.has_key_padding_mask = !f.causal;
    if (at.has_key_padding_mask) in.push_back(z.key_mask);
  } else {
    const RowAttention direct = f.causal ? rows_attention(c, z, z.v_rows, true, true, name + ".direct") : r;
    in = {flat(z.q_rows), flat(direct.y), direct.lse, flat(k_sum), flat(r.y)};
    at.has_direct_state = true;
  }
  return c.b.axial_attention(in, at, name + ".joint");
}

// --- Logsparse (docs/models.md#combiner-logsparse; causal only) ----------------------------------
// One key per slot and query: self, and for level l (block c = 2^l) with bit l of i set, key
// max_Omega k and value E_Omega of Omega = [((i>>l)-1) c, (i>>l) c). With one key per slot the
// logit is a row-wise dot product, (q * key) @ ones[hd, 1], and the value step a broadcast
// product: no per-query batched matmuls.
ValueId logsparse(GraphContext& c, const Form& f, const Heads& x, const std::string& name) {
  if (!c.ok()) return kNoValue;
  const TensorDesc& d = c.desc(x.q);
  const int64_t b = d.dim(0), h = d.dim(1), np = d.dim(2), hd = d.dim(3);
  const ValueId ones = constant_f32(c, name + ".ones", {hd, 1}, std::vector<float>(size_t(hd), 1.0f));
  auto dot = [&](ValueId key, const std::string& p) {  // [B, H, Np, 1]
    return matmul_nn(c, c.b.mul({x.q, key}, {}, p + ".qk"), ones, p + ".logits");
  };
  std::vector<ValueId> logits = {dot(x.k, name + ".self")}, values = {x.v};
  for (int64_t l = 0; l < f.log_len && (int64_t(1) << l) < np; ++l) {
    const int64_t blk = int64_t(1) << l, nb = (np + blk - 1) / blk;
    const std::string p = name + ".level" + std::to_string(l);
    // Pooled query/key per aligned block; the last block may be partial (zero padded for the
    // local expectation): no real query ever uses it, Omega is always a full earlier block.
    const ValueId qmax = c.b.segment_max({x.q}, {.axis = 2, .segment = blk}, p + ".qmax");  // [B,H,nb,hd]
    const ValueId kmax = c.b.segment_max({x.k}, {.axis = 2, .segment = blk}, p + ".kmax");
    auto blocks = [&](ValueId t) {
      return reshape(c, c.b.pad({t}, {.axis = 2, .after = nb * blk - np}), {b, h, nb, blk, hd});
    };
    const ValueId e =
        attend(c, reshape(c, qmax, {b, h, nb, 1, hd}), blocks(x.k), blocks(x.v), {}, p + ".local");
    // Query block m uses block m - 1: shift by one block, then repeat each block blk times.
    auto below = [&](ValueId t, const std::string& what) {
      const ValueId shifted = c.b.slice({c.b.pad({reshape(c, t, {b, h, nb, hd})}, {.axis = 2, .before = 1})},
                                        {.axis = 2, .start = 0, .end = nb});
      const ValueId each = c.b.upsample_nearest({shifted}, {.axis = 2, .size = nb * blk}, p + "." + what);
      return slice(c, each, 2, 0, np);  // [B, H, Np, hd]
    };
    const ValueId bit =
        keep_mask(c, p + ".bit", {np, 1}, [l](int64_t, int64_t i, int64_t) { return (i >> l) & 1; });
    logits.push_back(masked(c, dot(below(kmax, "key"), p), {bit}, -kInf, p + ".mask"));
    values.push_back(below(e, "value"));
  }
  const ValueId w =
      c.b.softmax({c.b.concat(logits, {.axis = -1}, name + ".slots")}, {.axis = -1}, name + ".softmax");
  ValueId y = kNoValue;
  for (size_t g = 0; g < values.size(); ++g) {
    const ValueId wg = c.b.slice({w}, {.axis = -1, .start = int64_t(g), .end = int64_t(g) + 1});
    const ValueId part = c.b.mul({wg, values[g]}, {}, name + ".values");
    y = y == kNoValue ? part : c.b.add({y, part}, {}, name + ".sum");
  }
  return y;
}

// --- Mixture (docs/models.md#combiner-mixture) ---------------------------------------------------
// The exclusive prefix pooling of q and k over the partitions "rows before/after u in column
// t" (rows = true) or "columns before/after t in row u", in rows layout [B, H, n, s, hd],
// plus (key_padding) which partitions hold a real token, u8 [B, n, s].
struct Pooled {
  ValueId q = kNoValue, k = kNoValue, nonempty = kNoValue;
};

Pooled pool_partitions(GraphContext& c, const Form& f, const Ctx& z, bool rows, bool reverse,
                       const std::string& name) {
  const int axis = rows ? 2 : 3;
  const float pad_fill = f.pooling == Pooling::max ? -kInf : 0.0f;
  Pooled p;
  auto pool = [&](ValueId x, const std::string& what) {
    x = masked(c, x, {z.keep_heads}, pad_fill, name + "." + what + ".pads");
    return exclusive_pool(c, x, axis, reverse, f.pooling, name + "." + what);
  };
  p.q = pool(z.q_rows, "q");
  p.k = pool(z.k_rows, "k");
  if (z.real != kNoValue) {
    p.nonempty = nonempty(c, exclusive_pool(c, z.real, axis - 1, reverse, Pooling::max, name + ".real"),
                          name);  // [B,n,s]
    const ValueId keep = reshape(c, p.nonempty, {z.b, 1, z.n, z.s, 1});
    p.q = masked(c, p.q, {keep}, 0.0f, name + ".q.empty");
    p.k = masked(c, p.k, {keep}, 0.0f, name + ".k.empty");
  }
  return p;
}

// Column summaries (partition (u, c) = rows before / after u in column c): key = pooled k,
// value = E with the pooled q, attending over those rows of column c. A rows-layout group.
SlotGroup column_summaries(GraphContext& c, const Form& f, const Ctx& z, bool reverse,
                           const std::string& name, const std::string& group, const std::string& debug) {
  const std::string p = name + "." + group;
  const Pooled pooled = pool_partitions(c, f, z, true, reverse, p);
  if (!debug.empty()) c.debug(reshape(c, pooled.k, {z.b, z.h, z.np, z.hd}), debug + ".summary_keys");
  const int64_t n = z.n, s = z.s;
  const bool ref_bidir = !f.causal && !f.key_padding;
  // Inner softmax over rows r of the partition; TF leaves the empty partition unmasked, so
  // its E is the plain average of the whole column (pooled q = 0).
  const ValueId inner = keep_mask(c, p + ".inner", {n, n}, [&](int64_t, int64_t u, int64_t r) {
    if (ref_bidir && u == (reverse ? n - 1 : 0)) return true;
    return reverse ? r > u : r < u;
  });
  const ValueId e =
      attend(c, swap_blocks(c, pooled.q), z.k_cols(c), z.v_cols(c), {inner, z.keep_cols}, p + ".local");
  SlotGroup g{.key = pooled.k, .value = swap_blocks(c, e), .name = group};
  if (f.causal)  // JAX: u > 0 and every column but the query's own (that one is direct).
    g.keeps = {keep_mask(c, p + ".causal", {n, s, s},
                         [](int64_t u, int64_t t, int64_t col) { return u > 0 && col != t; })};
  else if (pooled.nonempty != kNoValue)
    g.keeps = {reshape(c, pooled.nonempty, {z.b, 1, n, 1, s})};
  return g;
}

// Row summaries (partition (r, t) = columns before / after t in row r): key = pooled k,
// value = E over those columns of row r. A cols-layout group (slot r of query (u, t)).
SlotGroup row_summaries(GraphContext& c, const Form& f, const Ctx& z, bool reverse, const std::string& name,
                        const std::string& group) {
  const std::string p = name + "." + group;
  const Pooled pooled = pool_partitions(c, f, z, false, reverse, p);
  const int64_t n = z.n, s = z.s;
  const bool ref_bidir = !f.causal && !f.key_padding;
  const ValueId inner = keep_mask(c, p + ".inner", {s, s}, [&](int64_t, int64_t t, int64_t col) {
    if (ref_bidir && t == (reverse ? s - 1 : 0)) return true;
    return reverse ? col > t : col < t;
  });
  const ValueId e = attend(c, pooled.q, z.k_rows, z.v_rows, {inner, z.keep_rows}, p + ".local");
  SlotGroup g{.cols = true, .key = swap_blocks(c, pooled.k), .value = swap_blocks(c, e), .name = group};
  if (f.causal)  // JAX top-left (t > 0) / top-right (t < s - 1): rows r < u only.
    g.keeps = {keep_mask(c, p + ".causal", {s, n, n}, [&](int64_t t, int64_t u, int64_t r) {
      return r < u && (reverse ? t < s - 1 : t > 0);
    })};
  else if (pooled.nonempty != kNoValue)
    g.keeps = {reshape(c, transpose(c, pooled.nonempty, {0, 2, 1}), {z.b, 1, s, 1, n})};
  return g;
}

ValueId mixture(GraphContext& c, const Form& f, const Ctx& z, const std::string& name,
                const std::string& debug) {
  const int64_t n = z.n, s = z.s;
  SlotGroup col{.cols = true, .key = z.k_cols(c), .value = z.v_cols(c), .name = "col"};
  SlotGroup row{.key = z.k_rows, .value = z.v_rows, .name = "row"};
  if (f.causal) {
    // JAX _AxialMixtureAtt: [col(n) | row(s) | prev_row(s) | top_left(n) | top_right(n)].
    col.keeps = {
        keep_mask(c, name + ".col.causal", {n, n}, [](int64_t, int64_t u, int64_t r) { return r < u; })};
    row.keeps = {
        keep_mask(c, name + ".row.causal", {s, s}, [](int64_t, int64_t t, int64_t j) { return j <= t; })};
    return combine(
        c, z.q_rows, z.q_cols(c),
        {col, row, column_summaries(c, f, z, false, name, "prev_row", debug),
         row_summaries(c, f, z, false, name, "top_left"), row_summaries(c, f, z, true, name, "top_right")},
        name);
  }
  // TF axial_mixture_bidir: [row(s) | col(n) | t2d(s) | b2t(s) | l2r(n) | r2l(n)]; col
  // includes the query itself again.
  row.keeps = {z.keep_rows};
  col.keeps = {z.keep_cols};
  return combine(c, z.q_rows, z.q_cols(c),
                 {row, col, column_summaries(c, f, z, false, name, "t2d", debug),
                  column_summaries(c, f, z, true, name, "b2t", ""),
                  row_summaries(c, f, z, false, name, "l2r"), row_summaries(c, f, z, true, name, "r2l")},
                 name);
}

}  // namespace

ValueId combiner_attention(GraphContext& c, const Form& form, const Heads& heads,
                           const RowSummary& row_summary, const std::string& name, const std::string& debug) {
  if (form.variant == Variant::logsparse) return logsparse(c, form, heads, name);
  const Ctx z = make_ctx(c, heads, form.segment, name);
  ValueId y = kNoValue;
  switch (form.variant) {
    case Variant::fixed: y = fixed(c, form, z, name, debug); break;
    case Variant::axial: y = axial(c, form, z, row_summary, name, debug); break;
    default: y = mixture(c, form, z, name, debug); break;
  }
  return reshape(c, y, {z.b, z.h, z.np, z.hd});
}

}  // namespace longrun::models::combiner
