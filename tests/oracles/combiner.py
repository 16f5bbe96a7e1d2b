"""Combiner language model (arch "combiner"), in plain PyTorch float64.

Written from docs/models.md#combiner (which follows google-research/combiner: the JAX
model and layers for the causal forms, the TF approx_attention.py for the bidirectional
ones); independent of longrun's C++ (which builds the attention from block matmuls, pooling
ops and one concatenated softmax). This oracle instead walks every query i = (u, t) and
lists its terms -- direct keys and summaries (logit, value) -- exactly as the docs/models.md#combiner
tables state, then takes one softmax over that list. Masked terms are simply absent.

Model (docs/models.md#combiner-lm, JAX net.py/main.py): Embed + Flax-WMT sinusoid (sin | cos halves),
pre-LN layers (eps 1e-6; q, k, v, out without bias; q / sqrt(hd); ReLU MLP with biases),
final LN, Dense(V). Inputs are padded with id 0 to a multiple of s (docs/models.md#combiner-padding); causal forms are
exact for real positions, bidirectional reference forms include the pads (TF), and
key_padding (docs/models.md#combiner-padding (b)) drops pads from direct terms, poolings and local expectations and
drops partitions without a real token.
"""

import math
from collections import OrderedDict

import numpy as np
import torch
from oracle_common import padding_mask, synthetic_weights, tensor_rng

ARCH = "combiner"
EPS = 1e-6

ATTN_MODULE = {"fixed": "_SelfAttSqrtn_0", "logsparse": "_SelfAttLogn_0", "axial": "_SelfAttAxialRowmajor_0",
               "mixture": "_AxialMixtureAtt_0"}


def layer_prefix(l):
    return "autoreg_model/transformer_layer_%d/" % l


def axial_projections(cfg):
    """Axial with row_summary 'proj' creates W1 (DenseGeneral_0) and W2 (DenseGeneral_1) before
    the output projection, which Flax's creation-order naming then calls DenseGeneral_2."""
    return cfg["attention"] == "axial" and cfg.get("row_summary", "proj") == "proj"


def parameter_shapes(cfg):
    d, h, m, v = cfg["emb_dim"], cfg["num_heads"], cfg["mlp_dim"], cfg["vocab_size"]
    hd = cfg["qkv_dim"] // h
    out = OrderedDict()
    out["Embed_0/embedding"] = (v, d)
    for l in range(cfg["num_layers"]):
        p = layer_prefix(l)
        a = p + ATTN_MODULE[cfg["attention"]] + "/"
        out[p + "LayerNorm_0/scale"] = (d,)
        out[p + "LayerNorm_0/bias"] = (d,)
        for k in ("query", "key", "value"):
            out[a + k + "/kernel"] = (d, h, hd)
        if axial_projections(cfg):
            out[a + "DenseGeneral_0/kernel"] = (h, hd, d)
            out[a + "LayerNorm_0/scale"] = (d,)
            out[a + "LayerNorm_0/bias"] = (d,)
            out[a + "DenseGeneral_1/kernel"] = (d, h, hd)
            out[a + "DenseGeneral_2/kernel"] = (h, hd, d)
        else:
            out[a + "DenseGeneral_0/kernel"] = (h, hd, d)
        out[p + "LayerNorm_1/scale"] = (d,)
        out[p + "LayerNorm_1/bias"] = (d,)
        out[p + "MlpBlock_0/Dense_0/kernel"] = (d, m)
        out[p + "MlpBlock_0/Dense_0/bias"] = (m,)
        out[p + "MlpBlock_0/Dense_1/kernel"] = (m, d)
        out[p + "MlpBlock_0/Dense_1/bias"] = (d,)
    out["autoreg_model/LayerNorm_0/scale"] = (d,)
    out["autoreg_model/LayerNorm_0/bias"] = (d,)
    out["autoreg_model/Dense_0/kernel"] = (d, v)
    out["autoreg_model/Dense_0/bias"] = (v,)
    return out


def random_weights(cfg, seed_name):
    """Float32 weights with O(1) activations and clearly non-uniform attention."""
    # Flax kernels are [in, out] (DenseGeneral: [in, heads, head_dim] or [heads, head_dim, out])
    def fan_in(name, shape):
        if len(shape) == 2 or "query" in name or "key" in name or "value" in name or \
                name.endswith("DenseGeneral_1/kernel"):
            return shape[0]
        return shape[0] * shape[1]

    return synthetic_weights(parameter_shapes(cfg), seed_name, is_embedding=lambda name: name.endswith("embedding"),
                             is_norm_scale=lambda name: name.endswith("/scale"),
                             gain=lambda name: 2.0 if ("/query/" in name or "/key/" in name) else 1.0,
                             fan_in=fan_in, embedding_std=lambda name: 1.0)


def sinusoid(rows, d):
    """Flax WMT sinusoidal table: sin | cos halves, angle p * exp(-j ln(1e4) / (D/2 - 1))."""
    half = d // 2
    p = torch.arange(rows, dtype=torch.float64)[:, None]
    j = torch.arange(half, dtype=torch.float64)[None, :]
    ang = p * torch.exp(-j * math.log(1e4) / (half - 1))
    return torch.cat([torch.sin(ang), torch.cos(ang)], dim=1)


def layer_norm(x, scale, bias):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + EPS) * scale + bias


# ---------------------------------------------------------------------------------------------
# Per-query term lists (docs/models.md#combiner)


class Terms:
    """Heads q, k, v [B, H, L, hd] plus helpers to pool a partition and take its local
    expectation E_Omega = sum_{j in Omega} softmax_j(q_Omega . k_j) v_j (cached)."""

    def __init__(self, q, k, v, real, pooling):
        self.q, self.k, self.v = q, k, v
        self.real = real  # None (reference) or a list of bools per position (key_padding)
        self.pooling = pooling
        self.cache = {}

    def keep(self, positions):
        if self.real is None:
            return list(positions)
        return [p for p in positions if self.real[p]]

    def pool(self, x, positions):
        sel = x[:, :, positions, :]
        return sel.max(dim=2).values if self.pooling == "max" else sel.sum(dim=2)

    def local(self, qp, positions, values=None):
        logits = torch.einsum("bhk,bhjk->bhj", qp, self.k[:, :, positions, :])
        w = torch.softmax(logits, dim=-1)
        vals = self.v if values is None else values
        return torch.einsum("bhj,bhjk->bhk", w, vals[:, :, positions, :])

    def summary(self, omega, empty_average=None):
        """(key, value) of partition omega, pads dropped under key_padding; None when no
        position is left. empty_average (TF reference only): an empty partition keeps key 0
        and averages these positions uniformly (its pooled query is 0)."""
        pos = self.keep(omega)
        if not pos:
            if empty_average is None or self.real is not None:
                return None
            key = ("empty",) + tuple(empty_average)
            if key not in self.cache:
                zero = torch.zeros_like(self.q[:, :, 0, :])
                self.cache[key] = (zero, self.local(zero, list(empty_average)))
            return self.cache[key]
        key = tuple(pos)
        if key not in self.cache:
            self.cache[key] = (self.pool(self.k, pos), self.local(self.pool(self.q, pos), pos))
        return self.cache[key]

    def direct(self, i, j):
        return (self.k[:, :, j, :], self.v[:, :, j, :])


def joint(q_i, terms):
    """One softmax over the query's terms [(key, value)], logit q_i . key."""
    if not terms:
        return torch.zeros_like(q_i)
    logits = torch.stack([(q_i * k).sum(-1) for k, _ in terms], dim=-1)
    w = torch.softmax(logits, dim=-1)
    return sum(w[..., a : a + 1] * v for a, (_, v) in enumerate(terms))


def fixed_terms(T, i, s, n, causal):
    u, t = divmod(i, s)
    out = []
    own = range(u * s, u * s + (t + 1 if causal else s))
    out += [T.direct(i, j) for j in T.keep(own)]
    for r in range(u if causal else n):  # bidirectional TF: ALL segments, own one too
        sm = T.summary(list(range(r * s, r * s + s)))
        if sm is not None:
            out.append(sm)
    return out


def logsparse_terms(T, i, log_len):
    out = [T.direct(i, i)]
    for l in range(log_len):
        if (i >> l) & 1:
            c = 1 << l
            out.append(T.summary(list(range(((i >> l) - 1) * c, (i >> l) * c))))
    return out


def mixture_terms(T, i, s, n, causal):
    u, t = divmod(i, s)
    pos = lambda r, c: r * s + c  # noqa: E731
    out = []

    def add(sm):
        if sm is not None:
            out.append(sm)

    if causal:  # JAX: [col | row | prev_row | top_left | top_right]
        out += [T.direct(i, pos(r, t)) for r in range(u)]
        out += [T.direct(i, pos(u, c)) for c in range(t + 1)]
        if u > 0:
            for c in range(s):
                if c != t:
                    add(T.summary([pos(r, c) for r in range(u)]))
            if t > 0:
                for r in range(u):
                    add(T.summary([pos(r, c) for c in range(t)]))
            if t < s - 1:
                for r in range(u):
                    add(T.summary([pos(r, c) for c in range(t + 1, s)]))
        return out
    # TF bidir: [row | col (self again) | t2d | b2t | l2r | r2l]; empty partitions keep key 0
    # and average their whole column / row in the reference mode.
    out += [T.direct(i, j) for j in T.keep([pos(u, c) for c in range(s)])]
    out += [T.direct(i, j) for j in T.keep([pos(r, t) for r in range(n)])]
    for c in range(s):
        add(T.summary([pos(r, c) for r in range(u)], [pos(r, c) for r in range(n)]))
    for c in range(s):
        add(T.summary([pos(r, c) for r in range(u + 1, n)], [pos(r, c) for r in range(n)]))
    for r in range(n):
        add(T.summary([pos(r, c) for c in range(t)], [pos(r, c) for c in range(s)]))
    for r in range(n):
        add(T.summary([pos(r, c) for c in range(t + 1, s)], [pos(r, c) for c in range(s)]))
    return out


def axial_heads(T, x_ln, W, a, i_list, s, n, causal, hh, row_summary="proj"):
    """R (within-row attention), K~ (row_summary 'proj': W2 LN'(W1 R + x); 'none': k; 'wsum':
    the row attention's weighted sum of the keys), then per query the direct row terms and the
    column of row summaries (key K~[r, t], value R[r, t])."""
    q, k, v = T.q, T.k, T.v
    b, h, L, hd = q.shape
    R = torch.zeros_like(q)
    wsum = torch.zeros_like(q)
    for r in range(n):
        cols = T.keep(list(range(r * s, r * s + s)))
        if not cols:
            continue
        for t in range(s):
            R[:, :, r * s + t, :] = T.local(q[:, :, r * s + t, :], cols)
            wsum[:, :, r * s + t, :] = T.local(q[:, :, r * s + t, :], cols, values=k)
    if row_summary == "none":
        ksum = k.clone()
    elif row_summary == "wsum":
        ksum = wsum
    else:
        merged = R.permute(0, 2, 1, 3).reshape(b, L, hh)
        w1 = merged @ W[a + "DenseGeneral_0/kernel"].reshape(hh, -1) + x_ln
        ln = layer_norm(w1, W[a + "LayerNorm_0/scale"], W[a + "LayerNorm_0/bias"])
        ksum = (ln @ W[a + "DenseGeneral_1/kernel"].reshape(-1, hh)).reshape(b, L, h, hd).permute(0, 2, 1, 3)
    out = torch.zeros_like(q)
    for i in i_list:
        u, t = divmod(i, s)
        terms = [T.direct(i, j) for j in T.keep(range(u * s, u * s + (t + 1 if causal else s)))]
        for r in range(u if causal else n):
            p = r * s + t
            if T.real is None or T.real[p]:
                terms.append((ksum[:, :, p, :], R[:, :, p, :]))
        out[:, :, i, :] = joint(q[:, :, i, :], terms)
    return out, ksum


def attention(cfg, W, l, x_ln, real_rows):
    """Returns (output [B, L, D], summary keys for the debug output or None)."""
    a = layer_prefix(l) + ATTN_MODULE[cfg["attention"]] + "/"
    h = cfg["num_heads"]
    hh = cfg["qkv_dim"]
    hd = hh // h
    heads = lambda name: torch.einsum("bld,dhk->bhlk", x_ln, W[a + name + "/kernel"])  # noqa: E731
    q, k, v = heads("query") / math.sqrt(hd), heads("key"), heads("value")
    b, _, L, _ = q.shape
    kind, causal = cfg["attention"], cfg["causal"]
    s = 1 if kind == "logsparse" else cfg["max_seg_len"]
    n = L // s
    out = torch.zeros_like(q)
    summary = None
    # key_padding works per batch row (its pads differ); the reference mode shares one pass.
    rows = [None] if real_rows is None else list(range(b))
    for br in rows:
        sl = slice(None) if br is None else slice(br, br + 1)
        T = Terms(q[sl], k[sl], v[sl], None if br is None else real_rows[br], cfg.get("pooling", "max"))
        if kind == "axial":
            o, ks = axial_heads(T, x_ln[sl], W, a, range(L), s, n, causal, hh, cfg.get("row_summary", "proj"))
            out[sl] = o
            summary = ks if summary is None else torch.cat([summary, ks], 0)
            continue
        for i in range(L):
            if kind == "fixed":
                terms = fixed_terms(T, i, s, n, causal)
            elif kind == "logsparse":
                terms = logsparse_terms(T, i, math.ceil(math.log2(cfg["max_len"] - 1)))
            else:
                terms = mixture_terms(T, i, s, n, causal)
            out[sl][:, :, i, :] = joint(T.q[:, :, i, :], terms)
        if kind == "fixed":
            ks = torch.stack([T.pool(T.k, T.keep(range(r * s, r * s + s))) if T.keep(range(r * s, r * s + s))
                              else torch.zeros_like(T.k[:, :, 0, :]) for r in range(n)], dim=2)
        elif kind == "mixture":  # the pooled column-summary keys ("prev_row" / "t2d"), rows layout
            ks = torch.zeros_like(T.k)
            for i in range(L):
                u, t = divmod(i, s)
                sm = T.summary([r * s + t for r in range(u)]) if u > 0 else None
                if sm is not None:
                    ks[:, :, i, :] = sm[0]
        else:
            ks = None
        if ks is not None:
            summary = ks if summary is None else torch.cat([summary, ks], 0)
    y = torch.einsum("bhlk,hkd->bld", out, W[a + ("DenseGeneral_2" if axial_projections(cfg) else "DenseGeneral_0") +
                                              "/kernel"])
    return y, summary


def forward(cfg, weights, ids, mask):
    """ids [B, N] ints; mask [B, N] 0/1 or None. Returns OrderedDict of float64 numpy arrays."""
    W = {k: torch.tensor(v, dtype=torch.float64) for k, v in weights.items()}
    b, n = ids.shape
    s = 1 if cfg["attention"] == "logsparse" else cfg["max_seg_len"]
    L = -(-n // s) * s
    ids_p = np.zeros((b, L), dtype=np.int64)
    ids_p[:, :n] = ids
    real_rows = None
    if cfg["key_padding"]:
        m = np.zeros((b, L))
        m[:, :n] = 1 if mask is None else mask
        real_rows = [[bool(x) for x in row] for row in m]
    x = W["Embed_0/embedding"][torch.tensor(ids_p)] + sinusoid(L, cfg["emb_dim"])[None]
    out = OrderedDict()
    for l in range(cfg["num_layers"]):
        p = layer_prefix(l)
        h = layer_norm(x, W[p + "LayerNorm_0/scale"], W[p + "LayerNorm_0/bias"])
        a, summary = attention(cfg, W, l, h, real_rows)
        x = x + a
        h = layer_norm(x, W[p + "LayerNorm_1/scale"], W[p + "LayerNorm_1/bias"])
        hidden = torch.relu(h @ W[p + "MlpBlock_0/Dense_0/kernel"] + W[p + "MlpBlock_0/Dense_0/bias"])
        x = x + hidden @ W[p + "MlpBlock_0/Dense_1/kernel"] + W[p + "MlpBlock_0/Dense_1/bias"]
        if l == 0:
            out["debug.layer0.attention"] = a[:, :n]
            if summary is not None:
                out["debug.layer0.summary_keys"] = summary
            out["debug.layer0.output"] = x[:, :n]
    last = layer_norm(x, W["autoreg_model/LayerNorm_0/scale"], W["autoreg_model/LayerNorm_0/bias"])[:, :n]
    out["last_hidden_state"] = last
    out["logits"] = last @ W["autoreg_model/Dense_0/kernel"] + W["autoreg_model/Dense_0/bias"]
    return OrderedDict((k, v.numpy()) for k, v in out.items())


# ---------------------------------------------------------------------------------------------
# Models and cases


def _cfg(attention, causal, **kw):
    c = dict(vocab_size=40, emb_dim=64, num_heads=2, qkv_dim=32, mlp_dim=32, num_layers=2, max_len=320,
             max_seg_len=16, attention=attention, causal=causal, key_padding=False)
    c.update(kw)
    return c


MODELS = OrderedDict(
    [
        # causal forms (JAX)
        ("combiner_fixed_causal", _cfg("fixed", True)),
        # max_len - 1 = 256 is a power of two: the level-count bug of docs/models.md#combiner-logsparse hides [0, 256) from 256
        ("combiner_logsparse_causal", _cfg("logsparse", True, num_heads=4, max_len=257, max_seg_len=None)),
        ("combiner_axial_causal", _cfg("axial", True, num_heads=4, max_len=160, max_seg_len=8)),
        ("combiner_mixture_causal", _cfg("mixture", True, max_len=160, max_seg_len=8)),
        # bidirectional forms (TF), reference mode: pads take part
        ("combiner_fixed_bidir", _cfg("fixed", False, num_heads=4, max_len=64, max_seg_len=8)),
        ("combiner_axial_bidir", _cfg("axial", False, max_len=64, max_seg_len=8)),
        ("combiner_mixture_bidir_max", _cfg("mixture", False, max_len=64, max_seg_len=8, pooling="max")),
        ("combiner_mixture_bidir_sum", _cfg("mixture", False, num_heads=4, max_len=64, max_seg_len=8,
                                            pooling="sum")),
        # bidirectional, key_padding (docs/models.md#combiner-padding (b))
        ("combiner_fixed_bidir_kp", _cfg("fixed", False, max_len=64, max_seg_len=8, key_padding=True)),
        ("combiner_axial_bidir_kp", _cfg("axial", False, max_len=64, max_seg_len=8, key_padding=True)),
        # TF's other axial row summaries (no W1 / LN' / W2; the output projection is DenseGeneral_0)
        ("combiner_axial_bidir_none", _cfg("axial", False, max_len=64, max_seg_len=8, row_summary="none")),
        ("combiner_axial_causal_wsum", _cfg("axial", True, num_heads=4, max_len=160, max_seg_len=8,
                                            row_summary="wsum")),
        ("combiner_axial_causal_none", _cfg("axial", True, max_len=64, max_seg_len=8, row_summary="none")),
        ("combiner_mixture_bidir_sum_kp", _cfg("mixture", False, max_len=64, max_seg_len=8, pooling="sum",
                                               key_padding=True)),
    ]
)
for _c in MODELS.values():
    if _c["max_seg_len"] is None:
        del _c["max_seg_len"]

# (case, model, batch, length, ids dtype, mask dtype or None, mask rows: real tokens per row
# (right padding) or explicit 0/1 lists)
CASES = [
    ("n37", "combiner_fixed_causal", 2, 37, "i64", None, None),
    ("n300", "combiner_fixed_causal", 1, 300, "i32", None, None),
    ("n33", "combiner_logsparse_causal", 2, 33, "i64", None, None),
    ("n257", "combiner_logsparse_causal", 1, 257, "i64", None, None),
    ("n37", "combiner_axial_causal", 2, 37, "i64", None, None),
    ("n131", "combiner_axial_causal", 1, 131, "i64", None, None),
    ("n37", "combiner_mixture_causal", 2, 37, "i64", None, None),
    ("n131", "combiner_mixture_causal", 1, 131, "i32", None, None),
    ("n29", "combiner_fixed_bidir", 2, 29, "i64", None, None),
    ("n29", "combiner_axial_bidir", 2, 29, "i64", None, None),
    ("n40", "combiner_axial_bidir", 1, 40, "i64", None, None),
    ("n29", "combiner_mixture_bidir_max", 2, 29, "i64", None, None),
    ("n29", "combiner_mixture_bidir_sum", 2, 29, "i64", None, None),
    ("n48", "combiner_mixture_bidir_sum", 1, 48, "i64", None, None),
    ("n45_pad", "combiner_fixed_bidir_kp", 2, 45, "i64", "i64", [45, 19]),
    ("n40_holes", "combiner_fixed_bidir_kp", 1, 40, "i64", "u8", [[1] * 8 + [0] * 9 + [1] * 14 + [0] * 9]),
    ("n45_pad", "combiner_axial_bidir_kp", 2, 45, "i64", "f32", [45, 19]),
    ("n29", "combiner_axial_bidir_none", 2, 29, "i64", None, None),
    ("n37", "combiner_axial_causal_wsum", 2, 37, "i64", None, None),
    ("n37", "combiner_axial_causal_none", 1, 37, "i64", None, None),
    ("n45_pad", "combiner_mixture_bidir_sum_kp", 2, 45, "i64", "i32", [45, 19]),
    ("n37_nomask", "combiner_mixture_bidir_sum_kp", 1, 37, "i64", None, None),
]


def case_inputs(model_name, case_name, batch, n, mask_rows, vocab):
    rng = tensor_rng(model_name, case_name, "inputs")
    ids = rng.integers(1, vocab, size=(batch, n))
    if mask_rows is None:
        return ids, None
    mask = padding_mask(batch, n, mask_rows)
    return np.where(mask > 0, ids, 0), mask


def models():
    return OrderedDict((name, (cfg, random_weights(cfg, name))) for name, cfg in MODELS.items())


def cases(model_table):
    for case, model, batch, n, ids_dtype, mask_dtype, mask_rows in CASES:
        cfg, weights = model_table[model]
        ids, mask = case_inputs(model, case, batch, n, mask_rows, cfg["vocab_size"])
        out = forward(cfg, weights, ids, mask)
        inputs = OrderedDict([("input_ids", (ids_dtype, ids))])
        if mask_dtype is not None:
            inputs["attention_mask"] = (mask_dtype, mask)
        yield model, case, inputs, out
