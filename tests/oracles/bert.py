"""BERT-style post-LN encoders in plain PyTorch: arches "bert" (HF BertModel), "roberta" (HF
RobertaModel), "fourier-bert" and "fourier-roberta" (the same encoders with the Fourier
Transformer's spectral filter before chosen layers).

Written from the HF BertModel / RobertaModel semantics (docs/checkpoints.md#hugging-face-bert) and docs/models.md#spectral-filter
and docs/models.md#fourier-bart, independent of longrun's C++ and without the transformers library. Module and
attribute names reproduce the HF base-model state-dict names (heads: BertOnlyMLMHead's
`cls.predictions.*`, RobertaLMHead's `lm_head.*`, decoders tied to the word embeddings), so
`load_state_dict(strict=True)` checks the parameter table.

Semantics:
  - positions: bert arange(N); roberta cumsum(ids != pad) * (ids != pad) + pad
    (create_position_ids_from_input_ids);
  - X = LayerNorm(E_word[ids] + E_pos[positions] + E_type[token_type_ids or zeros]);
  - per layer: X = LN(X + Wo MHA(X, additive (1 - mask) * finfo.min));
    X = LN(X + W2 act(W1 X)), act = erf gelu | tanh gelu ("gelu_new") | relu;
  - pooled = tanh(pooler.dense(X[:, 0])); bert logits = LN(act(dense(X))) E_word^T + bias,
    roberta logits = LN(gelu(dense(X))) E_word^T + bias;
  - fourier-*: before layer i in filter_layers, with T' the current length (CLS included),
    M = min(ceil(T' r) in double, T' - 1) and X = [X[:, :1], IDCT_M(DCT_{T'-1}(X[:, 1:])[:M])];
    the attention mask is used only by the layers before the first filter layer.

The forward runs in float64 from the stored float32 weights; goldens are rounded once to f32.
"""

import math
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import fourier_lra  # the spectral filter (Makhoul DCT, checked against scipy) and ceil(T r)
from oracle_common import padding_mask, synthetic_weights, tensor_rng

ARCH = "bert"
ARCHES = ["bert", "roberta", "fourier-bert", "fourier-roberta"]


def activation(name):
    if name == "gelu":
        return F.gelu
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    if name == "relu":
        return F.relu
    raise ValueError(name)


def is_roberta(arch):
    return arch in ("roberta", "fourier-roberta")


# ---------------------------------------------------------------------------------------------
# The model, with the HF module names


class Embeddings(nn.Module):
    def __init__(self, cfg, roberta):
        super().__init__()
        d = cfg["hidden_size"]
        self.roberta, self.pad = roberta, cfg["pad_token_id"]
        self.word_embeddings = nn.Embedding(cfg["vocab_size"], d)
        self.position_embeddings = nn.Embedding(cfg["max_position_embeddings"], d)
        self.token_type_embeddings = nn.Embedding(cfg["type_vocab_size"], d)
        self.LayerNorm = nn.LayerNorm(d, eps=cfg["layer_norm_eps"])

    def forward(self, ids, types):
        if self.roberta:
            real = (ids != self.pad).long()
            pos = torch.cumsum(real, dim=1) * real + self.pad
        else:
            pos = torch.arange(ids.shape[1])[None, :].expand(ids.shape[0], -1)
        if types is None:
            types = torch.zeros_like(ids)
        x = self.word_embeddings(ids) + self.position_embeddings(pos) + self.token_type_embeddings(types)
        return self.LayerNorm(x)


class SelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)

    def split(self, x):
        b, t, d = x.shape
        return x.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x, mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        logits = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        if mask is not None:  # HF get_extended_attention_mask
            logits = logits + (1.0 - mask[:, None, None, :]) * torch.finfo(logits.dtype).min
        y = torch.matmul(torch.softmax(logits, dim=-1), v).transpose(1, 2)
        return y.reshape(x.shape)


class DenseLN(nn.Module):
    """BertSelfOutput / BertOutput: LN(dense(h) + residual)."""

    def __init__(self, d_in, d, eps):
        super().__init__()
        self.dense = nn.Linear(d_in, d)
        self.LayerNorm = nn.LayerNorm(d, eps=eps)

    def forward(self, h, residual):
        return self.LayerNorm(self.dense(h) + residual)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["hidden_size"]
        self.self = SelfAttention(d, cfg["num_attention_heads"])
        self.output = DenseLN(d, d, cfg["layer_norm_eps"])

    def forward(self, x, mask):
        return self.output(self.self(x, mask), x)


class Intermediate(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.dense = nn.Linear(cfg["hidden_size"], cfg["intermediate_size"])
        self.act = activation(cfg["hidden_act"])

    def forward(self, x):
        return self.act(self.dense(x))


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attention = Attention(cfg)
        self.intermediate = Intermediate(cfg)
        self.output = DenseLN(cfg["intermediate_size"], cfg["hidden_size"], cfg["layer_norm_eps"])

    def forward(self, x, mask):
        x = self.attention(x, mask)
        return self.output(self.intermediate(x), x)


class Encoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layer = nn.ModuleList([Layer(cfg) for _ in range(cfg["num_hidden_layers"])])


class Pooler(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.dense = nn.Linear(d, d)


class Transform(nn.Module):
    """BertPredictionHeadTransform: LN(act(dense(x)))."""

    def __init__(self, cfg):
        super().__init__()
        d = cfg["hidden_size"]
        self.dense = nn.Linear(d, d)
        self.LayerNorm = nn.LayerNorm(d, eps=cfg["layer_norm_eps"])


class Predictions(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.transform = Transform(cfg)
        self.bias = nn.Parameter(torch.zeros(cfg["vocab_size"]))


class BertHead(nn.Module):  # "cls"
    def __init__(self, cfg):
        super().__init__()
        self.predictions = Predictions(cfg)


class RobertaHead(nn.Module):  # "lm_head"
    def __init__(self, cfg):
        super().__init__()
        d = cfg["hidden_size"]
        self.dense = nn.Linear(d, d)
        self.layer_norm = nn.LayerNorm(d, eps=cfg["layer_norm_eps"])
        self.bias = nn.Parameter(torch.zeros(cfg["vocab_size"]))


class Model(nn.Module):
    def __init__(self, arch, cfg):
        super().__init__()
        self.cfg, self.roberta = cfg, is_roberta(arch)
        self.filter_layers = set(cfg.get("filter_layers", []))
        self.embeddings = Embeddings(cfg, self.roberta)
        self.encoder = Encoder(cfg)
        if cfg["add_pooling_layer"]:
            self.pooler = Pooler(cfg["hidden_size"])
        if cfg["mlm_head"]:
            if self.roberta:
                self.lm_head = RobertaHead(cfg)
            else:
                self.cls = BertHead(cfg)

    def spectral(self, x):
        """CLS kept out; M counts the CLS slot and caps at the T' - 1 filtered positions."""
        t = x.shape[1]
        keep = min(fourier_lra.filter_keep(t, self.cfg["filter_ratio"]), t - 1)
        return torch.cat([x[:, :1], fourier_lra.spectral_filter(x[:, 1:], keep)], dim=1)

    def logits(self, x):
        e = self.embeddings.word_embeddings.weight
        if self.roberta:
            h = self.lm_head
            return torch.matmul(h.layer_norm(F.gelu(h.dense(x))), e.t()) + h.bias
        p = self.cls.predictions
        t = p.transform.LayerNorm(activation(self.cfg["hidden_act"])(p.transform.dense(x)))
        return torch.matmul(t, e.t()) + p.bias

    def forward(self, ids, mask, types):
        debug = OrderedDict()
        x = self.embeddings(ids, types)
        debug["debug.embeddings"] = x
        first_filter = min(self.filter_layers) if self.filter_layers else len(self.encoder.layer)
        for i, layer in enumerate(self.encoder.layer):
            if i in self.filter_layers:
                x = self.spectral(x)
                debug["debug.layer%d.filtered" % i] = x
            x = layer(x, mask if i < first_filter else None)
            debug["debug.layer%d.output" % i] = x
        out = OrderedDict(last_hidden_state=x)
        if self.cfg["add_pooling_layer"]:
            out["pooled"] = torch.tanh(self.pooler.dense(x[:, 0]))
        if self.cfg["mlm_head"]:
            out["logits"] = self.logits(x)
        out.update(debug)
        return out


# ---------------------------------------------------------------------------------------------
# Random weights


def random_weights(arch, cfg, seed_name):
    """Float32 weights scaled so that activations are O(1) and attention is far from uniform."""
    shapes = OrderedDict(sorted((k, tuple(v.shape)) for k, v in Model(arch, cfg).state_dict().items()))
    return synthetic_weights(
        shapes, seed_name, is_embedding=lambda name: "_embeddings." in name,
        is_norm_scale=lambda name: ("LayerNorm" in name or "layer_norm" in name) and name.endswith(".weight"),
        gain=lambda name: 2.0 if (".query." in name or ".key." in name) else 1.0)


def forward(arch, cfg, weights, ids, mask, types, dtype=torch.float64):
    m = Model(arch, cfg)
    m.load_state_dict({k: torch.from_numpy(v.astype(np.float64)) for k, v in weights.items()}, strict=True)
    m = m.to(dtype).eval()
    t = lambda a: None if a is None else torch.from_numpy(np.asarray(a, dtype=np.int64))  # noqa: E731
    with torch.no_grad():
        mk = None if mask is None else torch.from_numpy(np.asarray(mask, dtype=np.float64)).to(dtype)
        out = m(t(ids), mk, t(types))
    return OrderedDict((k, v.numpy()) for k, v in out.items())


# ---------------------------------------------------------------------------------------------
# Golden models and cases (D = 64, H = 4, F = 96, V = 100: small files)


def _cfg(roberta, **kw):
    c = dict(vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
             hidden_act="gelu", max_position_embeddings=300, type_vocab_size=2, layer_norm_eps=1e-12,
             pad_token_id=0, add_pooling_layer=True, mlm_head=False,
             # training-only HF keys: accepted and ignored
             hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, initializer_range=0.02)
    if roberta:
        c.update(max_position_embeddings=304, type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1)
    c.update(kw)
    return c


# name -> (arch, config)
MODELS = OrderedDict(
    [
        # BertModel + pooler + BertOnlyMLMHead, two token types, erf gelu, eps 1e-12
        ("bert_tiny", ("bert", _cfg(False, mlm_head=True))),
        # RobertaModel without pooler + RobertaLMHead, padding-aware positions, eps 1e-5
        ("roberta_tiny", ("roberta", _cfg(True, add_pooling_layer=False, mlm_head=True))),
        # one filter before layer 1 (layer 0 masked, layer 1 not), r = 0.3, tanh gelu
        ("fourier_bert_l1_r03", ("fourier-bert", _cfg(False, hidden_act="gelu_new", filter_layers=[1],
                                                      filter_ratio=0.3))),
        # filters before layers 0 and 1 (the second sees the first's length), r = 0.5, relu,
        # pooler + lm_head
        ("fourier_roberta_l01_r05", ("fourier-roberta", _cfg(True, hidden_act="relu", mlm_head=True,
                                                             filter_layers=[0, 1], filter_ratio=0.5))),
    ]
)


def arch_of(model_name):
    return MODELS[model_name][0]


# (case, model, batch, length, ids dtype, mask dtype or None, mask rows (number of real tokens
# per row = right padding, or an explicit 0/1 list), token_type_ids dtype or None)
CASES = [
    ("n7_pad", "bert_tiny", 2, 7, "i64", "i64", [7, 4], "i64"),
    ("n1", "bert_tiny", 1, 1, "i32", None, None, None),
    ("n33_i32_types", "bert_tiny", 2, 33, "i32", "u8", [33, 20], "i32"),
    ("n257_nomask", "bert_tiny", 1, 257, "i64", None, None, None),
    ("n7_pad", "roberta_tiny", 2, 7, "i64", "i64", [7, 4], None),
    ("n13_leftpad_types", "roberta_tiny", 2, 13, "i32", "i32", [[0, 0, 0] + [1] * 10, [0, 1] * 6 + [1]], "i32"),
    ("n302_pad", "roberta_tiny", 1, 302, "i64", "f32", [290], None),
    ("n2", "fourier_bert_l1_r03", 1, 2, "i64", None, None, None),
    ("n7_pad", "fourier_bert_l1_r03", 2, 7, "i64", "i64", [7, 5], "i64"),
    ("n129_pad", "fourier_bert_l1_r03", 2, 129, "i32", "i32", [129, 77], "i32"),
    ("n299_nomask", "fourier_bert_l1_r03", 1, 299, "i64", None, None, None),
    ("n7_pad", "fourier_roberta_l01_r05", 2, 7, "i64", "i64", [7, 3], None),
    ("n66_leftpad", "fourier_roberta_l01_r05", 2, 66, "i32", "u8", [[0] * 9 + [1] * 57, 66], None),
    ("n301_pad", "fourier_roberta_l01_r05", 1, 301, "i64", "u8", [280], None),
]


def case_inputs(model_name, case_name, cfg, batch, n, mask_rows, with_types):
    rng = tensor_rng(model_name, case_name, "inputs")
    pad = cfg["pad_token_id"]
    ids = rng.integers(pad + 1, cfg["vocab_size"], size=(batch, n))  # never the pad id
    types = rng.integers(0, cfg["type_vocab_size"], size=(batch, n)) if with_types else None
    if mask_rows is None:
        return ids, None, types
    mask = padding_mask(batch, n, mask_rows)
    ids = np.where(mask > 0, ids, pad)
    return ids, mask, types


def check_float32(arch, cfg, weights, ids, mask, types, expected):
    """The same forward in float32 stays within float32 rounding of the float64 oracle."""
    got = forward(arch, cfg, weights, ids, mask, types, dtype=torch.float32)
    for k, b in expected.items():
        a = got[k].astype(np.float64)
        err = np.sqrt(np.sum((a - b) ** 2) / max(np.sum(b**2), 1e-300))
        if not err < 1e-5:
            raise AssertionError("float32 forward differs from float64 (%s): %g" % (k, err))


def models():
    """name -> (config dict, weights OrderedDict name -> float32 array)."""
    fourier_lra.check_filter_against_scipy()
    return OrderedDict((name, (cfg, random_weights(arch, cfg, name))) for name, (arch, cfg) in MODELS.items())


def cases(model_table):
    for case, model, batch, n, ids_dtype, mask_dtype, mask_rows, types_dtype in CASES:
        arch = arch_of(model)
        cfg, weights = model_table[model]
        ids, mask, types = case_inputs(model, case, cfg, batch, n, mask_rows, types_dtype is not None)
        out = forward(arch, cfg, weights, ids, mask, types)
        check_float32(arch, cfg, weights, ids, mask, types, out)
        inputs = OrderedDict([("input_ids", (ids_dtype, ids))])
        if mask_dtype is not None:
            inputs["attention_mask"] = (mask_dtype, mask)
        if types_dtype is not None:
            inputs["token_type_ids"] = (types_dtype, types)
        yield model, case, inputs, out
