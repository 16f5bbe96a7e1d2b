"""Fourier Transformer, LRA encoder-only classifier (arch "fourier-lra"), in plain PyTorch.

Written from docs/models.md#lra-encoder (which follows the official code,
LUMIA-Group/FourierTransformer LRA/code/{model.py, attention.py, attention_dct.py,
model_wrapper.py}); independent of longrun's C++. Module and attribute names reproduce the
official state-dict names, so `load_state_dict(strict=True)` checks the parameter table.

The whole forward pass runs in float64 from the stored float32 weights (widened exactly); the
goldens are its outputs rounded once to float32. `check_float32()` re-runs a case in float32
with the FFT (Makhoul) DCT exactly as the official code computes it, to show that the float64
oracle and the float32 official arithmetic agree to float32 rounding.

Semantics reproduced (docs/models.md#lra-encoder and the official code):
  - append_cls: ids = [CLS = vocab_size - 1, ids[:, :T-1]], mask = [1, mask[:, :T-1]];
  - X = E_tok[ids] + E_pos[0..T-1]; the position table has 2^ceil(log2 max_seq_len) rows;
  - pre-LN layers (eps 1e-5, erf GELU); softmax attention logits QK^T/sqrt(hd) - 1e6 (1 - mask)
    where the mask is used only while the current length equals the mask's length;
  - filter layer: Z = LN1(X); S = [Z[:, :1], IDCT_M(DCT_{T-1}(Z[:, 1:])[:M])] with
    M = min(ceil(T * r), T - 1) in double; X = S + ff(MHA(S)) with no mask; then the FFN;
  - final: X = LN(X), times the mask only when the model has no filter layer;
  - pooled = X[:, 0]; logits = Linear -> ReLU -> Linear;
  - dual (ModelForSCDual, the Retrieval task): the one encoder over input 0 and input 1, then
    logits = Linear -> ReLU -> Linear of cat([p0, p1, p0 * p1, p0 - p1]) (SCHeadDual), with p the
    CLS row of each; the classifier's first Linear takes 4 D.
"""

import math
from collections import OrderedDict

import numpy as np
import scipy.fft
import torch
import torch.nn as nn
from oracle_common import padding_mask, synthetic_weights, tensor_rng

ARCH = "fourier-lra"

# Config keys (longrun.config) -- the official lra_config names plus the filter settings.
# filter_layers = [] gives the vanilla softmax-attention baseline.


def position_rows(max_seq_len):
    """The official run_tasks.py rounds max_seq_len up to a power of two for the table."""
    return int(2 ** math.ceil(math.log2(max_seq_len)))


def filter_keep(t, r):
    """M = ceil(T * r) in IEEE double, as the official math.ceil(T * self.dct_percentage)."""
    return int(math.ceil(float(t) * float(r)))


# ---------------------------------------------------------------------------------------------
# The spectral filter (docs/models.md#spectral-filter)


def dct2_ortho_makhoul(x):
    """Orthonormal DCT-II along the last axis by the FFT shuffle (docs/models.md#spectral-filter)."""
    n = x.shape[-1]
    v = torch.cat([x[..., ::2], x[..., 1::2].flip([-1])], dim=-1)
    vc = torch.fft.fft(v, dim=-1)
    k = torch.arange(n, dtype=x.dtype) * math.pi / (2 * n)
    vk = vc.real * torch.cos(k) + vc.imag * torch.sin(k)
    scale = torch.full((n,), math.sqrt(2.0 / n), dtype=x.dtype)
    scale[0] = math.sqrt(1.0 / n)
    return vk * scale


def idct_ortho_makhoul(c):
    """Orthonormal DCT-III (inverse of dct2_ortho_makhoul) of length M = c.shape[-1]."""
    m = c.shape[-1]
    xv = c.clone()
    xv[..., 0] = xv[..., 0] * math.sqrt(m)
    xv[..., 1:] = xv[..., 1:] * math.sqrt(m / 2.0)
    vi = torch.cat([torch.zeros_like(xv[..., :1]), -xv[..., 1:].flip([-1])], dim=-1)
    k = torch.arange(m, dtype=c.dtype) * math.pi / (2 * m)
    vc = torch.complex(xv, vi) * torch.complex(torch.cos(k), torch.sin(k))  # e^{+i pi k / 2M}
    w = torch.fft.ifft(vc, dim=-1).real
    y = torch.zeros_like(w)
    y[..., ::2] = w[..., : m - m // 2]
    y[..., 1::2] = w.flip([-1])[..., : m // 2]
    return y


def spectral_filter(z, keep):
    """y = IDCT_M(DCT_N(z)[:M]) along axis 1 of z [B, N, D], M = min(keep, N)."""
    zt = z.transpose(1, 2)
    coef = dct2_ortho_makhoul(zt)[..., :keep]
    return idct_ortho_makhoul(coef).transpose(1, 2)


def check_filter_against_scipy():
    """The Makhoul filter equals scipy's dct/idct (type 2, ortho) in float64."""
    rng = np.random.default_rng(1)
    for n in (1, 2, 3, 6, 7, 64, 128, 299):
        for keep in sorted({1, max(1, n // 5), max(1, (n + 1) // 2), n}):
            x = rng.standard_normal((2, n, 3))
            ours = spectral_filter(torch.from_numpy(x), keep).numpy()
            ref = scipy.fft.idct(scipy.fft.dct(x, type=2, norm="ortho", axis=1)[:, :keep], type=2, norm="ortho", axis=1)
            err = np.max(np.abs(ours - ref))
            if not err < 1e-12:
                raise AssertionError("spectral filter N=%d keep=%d differs from scipy by %g" % (n, keep, err))


# ---------------------------------------------------------------------------------------------
# The model, with the official module names


class MHA(nn.Module):
    def __init__(self, dim, num_head, head_dim):
        super().__init__()
        self.num_head, self.head_dim = num_head, head_dim
        self.W_q = nn.Linear(dim, num_head * head_dim)
        self.W_k = nn.Linear(dim, num_head * head_dim)
        self.W_v = nn.Linear(dim, num_head * head_dim)
        self.ff = nn.Linear(num_head * head_dim, dim)

    def split(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.num_head, self.head_dim).transpose(1, 2)

    def forward(self, x, mask):
        """mask: [B, T] float of 0/1, or None (no masking)."""
        q, k, v = self.split(self.W_q(x)), self.split(self.W_k(x)), self.split(self.W_v(x))
        dot = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        if mask is not None:
            dot = dot - 1e6 * (1 - mask[:, None, None, :])
        attn = torch.softmax(dot, dim=-1)
        out = torch.matmul(attn, v).transpose(1, 2)
        return self.ff(out.reshape(out.shape[0], out.shape[1], -1))


class Layer(nn.Module):
    def __init__(self, cfg, is_filter):
        super().__init__()
        d, f = cfg["transformer_dim"], cfg["transformer_hidden_dim"]
        self.is_filter = is_filter
        self.ratio = cfg.get("filter_ratio")
        self.norm1 = nn.LayerNorm(d, eps=1e-5)
        self.mha = MHA(d, cfg["num_head"], cfg["head_dim"])
        self.norm2 = nn.LayerNorm(d, eps=1e-5)
        # indices 0 and 3 as the official Sequential(Linear, GELU, Dropout, Linear, Dropout)
        self.mlpblock = nn.Sequential(nn.Linear(d, f), nn.GELU(), nn.Identity(), nn.Linear(f, d))

    def forward(self, x, mask, debug, index):
        if self.is_filter:
            z = self.norm1(x)
            t = z.shape[1]
            keep = filter_keep(t, self.ratio)  # uses T including CLS; the slice caps at T-1
            zs = spectral_filter(z[:, 1:], min(keep, t - 1))
            s = torch.cat([z[:, :1], zs], dim=1)
            debug["debug.layer%d.filtered" % index] = s
            x = s + self.mha(s, None)  # residual is the filtered, normalised S; no mask
        else:
            use_mask = mask if mask.shape[1] == x.shape[1] else None  # "len(Q) == len(mask)"
            x = x + self.mha(self.norm1(x), use_mask)
        return x + self.mlpblock(self.norm2(x))


class Embeddings(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["transformer_dim"]
        self.word_embeddings = nn.Embedding(cfg["vocab_size"], d)
        self.position_embeddings = nn.Embedding(position_rows(cfg["max_seq_len"]), d)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])[None, :].expand(ids.shape[0], -1)
        return self.word_embeddings(ids) + self.position_embeddings(pos)


class Encoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.num_layers = cfg["num_layers"]
        self.has_filter = bool(cfg["filter_layers"])
        self.embeddings = Embeddings(cfg)
        for i in range(self.num_layers):
            setattr(self, "transformer_%d" % i, Layer(cfg, i in cfg["filter_layers"]))
        self.norm = nn.LayerNorm(cfg["transformer_dim"], eps=1e-5)

    def forward(self, ids, mask, debug):
        x = self.embeddings(ids)
        debug["debug.embeddings"] = x
        for i in range(self.num_layers):
            x = getattr(self, "transformer_%d" % i)(x, mask, debug, i)
            debug["debug.layer%d.output" % i] = x
        x = self.norm(x)
        return x if self.has_filter else x * mask[:, :, None]


class Head(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, f = cfg["transformer_dim"], cfg["transformer_hidden_dim"]
        width = 4 * d if cfg.get("dual") else d  # SCHeadDual reads [p0, p1, p0 * p1, p0 - p1]
        self.mlpblock = nn.Sequential(nn.Linear(width, f), nn.ReLU(), nn.Linear(f, cfg["num_classes"]))


def append_cls(ids, mask, vocab_size):
    cls = torch.full((ids.shape[0], 1), vocab_size - 1, dtype=torch.long)
    ids = torch.cat([cls, ids[:, :-1]], dim=1)
    mask = torch.cat([torch.ones_like(mask[:, :1]), mask[:, :-1]], dim=1)
    return ids, mask


class ModelForSC(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.model = Encoder(cfg)
        self.seq_classifer = Head(cfg)  # sic: the official name

    def forward(self, ids, mask):
        """ids [B, N] int64, mask [B, N] float 0/1 -> dict of outputs (+ debug intermediates)."""
        ids, mask = append_cls(ids, mask, self.cfg["vocab_size"])
        debug = OrderedDict()
        x = self.model(ids, mask, debug)
        pooled = x[:, 0]
        out = OrderedDict(last_hidden_state=x, pooled=pooled, logits=self.seq_classifer.mlpblock(pooled))
        out.update(debug)
        return out


class ModelForSCDual(nn.Module):
    """The Retrieval classifier: one encoder, two inputs (official model_wrapper.py)."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.model = Encoder(cfg)
        self.seq_classifer = Head(cfg)

    def forward(self, ids0, mask0, ids1, mask1):
        out, debug, pooled = OrderedDict(), OrderedDict(), []
        for k, (ids, mask) in enumerate(((ids0, mask0), (ids1, mask1))):
            ids, mask = append_cls(ids, mask, self.cfg["vocab_size"])
            d = OrderedDict()
            x = self.model(ids, mask, d)
            out["last_hidden_state_%d" % k] = x
            pooled.append(x[:, 0])
            debug.update(("%s_%d" % (name, k), v) for name, v in d.items())
        p0, p1 = pooled
        out["logits"] = self.seq_classifer.mlpblock(torch.cat([p0, p1, p0 * p1, p0 - p1], dim=-1))
        out.update(debug)
        return out


# ---------------------------------------------------------------------------------------------
# Parameters and random weights


def parameter_shapes(cfg):
    """The canonical parameter table for a config: name -> shape (official state-dict names)."""
    d, f = cfg["transformer_dim"], cfg["transformer_hidden_dim"]
    hh = cfg["num_head"] * cfg["head_dim"]
    p = OrderedDict()
    p["model.embeddings.word_embeddings.weight"] = (cfg["vocab_size"], d)
    p["model.embeddings.position_embeddings.weight"] = (position_rows(cfg["max_seq_len"]), d)
    for i in range(cfg["num_layers"]):
        pre = "model.transformer_%d." % i
        for ln in ("norm1", "norm2"):
            p[pre + ln + ".weight"] = (d,)
            p[pre + ln + ".bias"] = (d,)
        for w in ("W_q", "W_k", "W_v"):
            p[pre + "mha." + w + ".weight"] = (hh, d)
            p[pre + "mha." + w + ".bias"] = (hh,)
        p[pre + "mha.ff.weight"] = (d, hh)
        p[pre + "mha.ff.bias"] = (d,)
        p[pre + "mlpblock.0.weight"] = (f, d)
        p[pre + "mlpblock.0.bias"] = (f,)
        p[pre + "mlpblock.3.weight"] = (d, f)
        p[pre + "mlpblock.3.bias"] = (d,)
    p["model.norm.weight"] = (d,)
    p["model.norm.bias"] = (d,)
    p["seq_classifer.mlpblock.0.weight"] = (f, 4 * d if cfg.get("dual") else d)
    p["seq_classifer.mlpblock.0.bias"] = (f,)
    p["seq_classifer.mlpblock.2.weight"] = (cfg["num_classes"], f)
    p["seq_classifer.mlpblock.2.bias"] = (cfg["num_classes"],)
    return p


def random_weights(cfg, seed_name):
    """Float32 weights scaled so that activations are O(1) and attention is far from uniform
    (the official init, std 0.02 embeddings, would give near-constant outputs)."""
    return synthetic_weights(
        parameter_shapes(cfg), seed_name, is_embedding=lambda name: "embeddings" in name,
        is_norm_scale=lambda name: name.endswith(("norm1.weight", "norm2.weight")) or name == "model.norm.weight",
        gain=lambda name: 2.0 if (".W_q." in name or ".W_k." in name) else 1.0)


def build_model(cfg, weights, dtype=torch.float64):
    m = ModelForSCDual(cfg) if cfg.get("dual") else ModelForSC(cfg)
    m.load_state_dict({k: torch.from_numpy(v.astype(np.float64)) for k, v in weights.items()}, strict=True)
    return m.to(dtype).eval()


def forward(cfg, weights, ids, mask, dtype=torch.float64):
    """Runs the model; ids int array [B, N], mask float array [B, N] (dual: lists of the two).
    Returns name -> ndarray."""
    m = build_model(cfg, weights, dtype)

    def tensors(i, k):
        return (torch.from_numpy(np.asarray(i, dtype=np.int64)),
                torch.from_numpy(np.asarray(k, dtype=np.float64)).to(dtype))

    with torch.no_grad():
        if cfg.get("dual"):
            out = m(*tensors(ids[0], mask[0]), *tensors(ids[1], mask[1]))
        else:
            out = m(*tensors(ids, mask))
    return OrderedDict((k, v.numpy()) for k, v in out.items())


# ---------------------------------------------------------------------------------------------
# Golden models and cases (D = 64, H = 4, small vocabularies; sizes keep the files small)


def _cfg(**kw):
    c = dict(vocab_size=32, transformer_dim=64, transformer_hidden_dim=128, num_head=4, head_dim=16,
             num_layers=2, max_seq_len=300, num_classes=10, pooling_mode="CLS", filter_layers=[0],
             filter_ratio=0.2)
    c.update(kw)
    return c


# name -> config. The vanilla baseline is the same arch with filter_layers = [].
MODELS = OrderedDict(
    [
        # the released LRA setting: one filter at layer 0, r = 0.2
        ("fourier_lra_l0_r02", _cfg()),
        # filters at layers 1 and 2 (layer 0 masked; the second filter sees the first's length),
        # r = 0.5, and H * head_dim = 32 != D
        ("fourier_lra_l12_r05", _cfg(num_layers=3, max_seq_len=160, head_dim=8, num_classes=3,
                                     filter_layers=[1, 2], filter_ratio=0.5)),
        # the vanilla baseline: no filter layer, final LN times the mask
        ("lra_vanilla", _cfg(max_seq_len=130, num_classes=4, filter_layers=[], filter_ratio=0.2)),
        # the Retrieval task's dual encoder (ModelForSCDual) with the released filter setting,
        # and its softmax baseline
        ("fourier_lra_dual_l0_r02", _cfg(max_seq_len=140, num_classes=2, dual=True)),
        ("lra_vanilla_dual", _cfg(num_layers=1, max_seq_len=20, num_classes=2, filter_layers=[], dual=True)),
    ]
)

# (case, model, batch, length, ids dtype, mask dtype or None, mask rows given as the number of
# real tokens per row (right padding) or an explicit 0/1 list)
CASES = [
    ("n2_leftpad", "fourier_lra_l0_r02", 2, 2, "i64", "i64", [[0, 1], [1, 1]]),
    ("n7_pad", "fourier_lra_l0_r02", 2, 7, "i64", "i64", [7, 4]),
    ("n66_i32_nomask", "fourier_lra_l0_r02", 1, 66, "i32", None, None),  # (66-1)*0.2 is whole: M from T, not T-1, matters
    ("n129_pad", "fourier_lra_l0_r02", 2, 129, "i64", "f32", [129, 100]),
    ("n300_pad", "fourier_lra_l0_r02", 1, 300, "i64", "u8", [257]),
    ("n7_pad", "fourier_lra_l12_r05", 2, 7, "i64", "i64", [5, 7]),
    ("n129_pad", "fourier_lra_l12_r05", 2, 129, "i32", "i32", [120, 129]),
    ("n1", "lra_vanilla", 2, 1, "i64", "i64", [1, 1]),
    ("n7_pad", "lra_vanilla", 2, 7, "i64", "i64", [7, 3]),
    ("n129_pad", "lra_vanilla", 2, 129, "i64", "i64", [129, 64]),
]

# Dual-encoder cases: (case, model, batch, (N0, N1), ids dtype, mask dtype or None,
# (mask rows of input 0, mask rows of input 1) or None)
DUAL_CASES = [
    ("n7_pad", "fourier_lra_dual_l0_r02", 2, (7, 7), "i64", "i64", ([7, 4], [5, 7])),
    ("n129_n66", "fourier_lra_dual_l0_r02", 2, (129, 66), "i32", "f32", ([129, 90], [40, 66])),
    ("n2_nomask", "fourier_lra_dual_l0_r02", 1, (2, 3), "i64", None, None),
    ("n7_pad", "lra_vanilla_dual", 2, (7, 9), "i64", "u8", ([3, 7], [9, 6])),
]


def case_inputs(model_name, case_name, batch, n, mask_rows, vocab):
    rng = tensor_rng(model_name, case_name, "inputs")
    ids = rng.integers(1, vocab - 1, size=(batch, n))  # 0 = padding, vocab-1 = CLS
    if mask_rows is None:
        return ids, np.ones((batch, n))
    mask = padding_mask(batch, n, mask_rows)
    ids = np.where(mask > 0, ids, 0)
    return ids, mask


def check_float32(cfg, weights, ids, mask, expected):
    """The same forward in float32 (official arithmetic) stays within float32 rounding."""
    got = forward(cfg, weights, ids, mask, dtype=torch.float32)
    names = ("last_hidden_state", "logits")
    if cfg.get("dual"):
        names = ("last_hidden_state_0", "last_hidden_state_1", "logits")
    for k in names:
        a, b = got[k].astype(np.float64), expected[k]
        err = np.sqrt(np.sum((a - b) ** 2) / max(np.sum(b**2), 1e-300))
        if not err < 1e-5:
            raise AssertionError("float32 forward differs from float64 (%s): %g" % (k, err))


def models():
    """name -> (config dict, weights OrderedDict name -> float32 array)."""
    check_filter_against_scipy()
    return OrderedDict((name, (cfg, random_weights(cfg, name))) for name, cfg in MODELS.items())


def cases(model_table):
    """Yields (model name, case name, inputs OrderedDict name -> (dtype, array), expected
    OrderedDict name -> float64 array)."""
    for case, model, batch, n, ids_dtype, mask_dtype, mask_rows in CASES:
        cfg, weights = model_table[model]
        ids, mask = case_inputs(model, case, batch, n, mask_rows, cfg["vocab_size"])
        out = forward(cfg, weights, ids, mask)
        check_float32(cfg, weights, ids, mask, out)
        inputs = OrderedDict([("input_ids", (ids_dtype, ids))])
        if mask_dtype is not None:
            inputs["attention_mask"] = (mask_dtype, mask)
        yield model, case, inputs, out
    for case, model, batch, lengths, ids_dtype, mask_dtype, mask_rows in DUAL_CASES:
        cfg, weights = model_table[model]
        pairs = [case_inputs(model, "%s.%d" % (case, k), batch, lengths[k], None if mask_rows is None else mask_rows[k],
                             cfg["vocab_size"]) for k in (0, 1)]
        ids, mask = [p[0] for p in pairs], [p[1] for p in pairs]
        out = forward(cfg, weights, ids, mask)
        check_float32(cfg, weights, ids, mask, out)
        inputs = OrderedDict()
        for k in (0, 1):
            inputs["input_ids_%d" % k] = (ids_dtype, ids[k])
            if mask_dtype is not None:
                inputs["attention_mask_%d" % k] = (mask_dtype, mask[k])
        yield model, case, inputs, out
