"""Fastformer text classifier (arch "fastformer"), in plain PyTorch.

Written from docs/models.md#fastformer (which follow the official notebook,
wuch15/Fastformer Fastformer.ipynb: FastSelfAttention, FastformerLayer with HF BERT's
BertSelfOutput / BertIntermediate / BertOutput inlined, FastformerEncoder, AttentionPooling,
Model); independent of longrun's C++. Module and attribute names reproduce the official
state-dict names, so `load_state_dict(strict=True)` checks the parameter table.

The forward pass runs in float64 from the stored float32 weights; the goldens are its outputs
rounded once to float32. `check_float32()` re-runs each case in float32 (the official
arithmetic, including the un-shifted exp of the pooler) and requires agreement to float32
rounding.

Semantics reproduced:
  - mask = attention_mask, or (ids != 0) when none is given (the official Model);
    extended mask (1 - mask) * -10000 added to both score sets of every layer;
  - E = LayerNorm(word_embedding[ids] + position_embeddings[0..N-1]), eps 1e-12;
  - FastSelfAttention: Q, K; alpha = softmax_n((Q Wqa^T + bqa)^T / sqrt(hd) + bias); pooled
    query per head; P = K * q; beta likewise from key_att(P); pooled key k; U = Q * k (query =
    value); A = transform(U) + Q;
  - post-LN sublayers: X1 = LN(dense(A) + X), X2 = LN(output(gelu(intermediate(X1))) + X1);
  - AttentionPooling: a = exp(att_fc2(tanh(att_fc1(X)))) * mask, pooled = sum a X / (sum a + 1e-8);
  - logits = dense_linear(pooled);
  - share_layers (config flag; the paper's layer-wise sharing): encoders holds one layer, run
    num_hidden_layers times.
"""

import math
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn
from oracle_common import padding_mask, synthetic_weights, tensor_rng

ARCH = "fastformer"


class FastSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, h = cfg["hidden_size"], cfg["num_attention_heads"]
        self.heads, self.head_dim = h, d // h
        self.query = nn.Linear(d, d)
        self.query_att = nn.Linear(d, h)
        self.key = nn.Linear(d, d)
        self.key_att = nn.Linear(d, h)
        self.transform = nn.Linear(d, d)

    def split(self, x):
        b, n, _ = x.shape
        return x.view(b, n, self.heads, self.head_dim).permute(0, 2, 1, 3)  # [B, H, N, hd]

    def pool(self, scores, bias, values):
        """scores [B, N, H], bias [B, 1, N], values [B, N, D] -> [B, 1, D]."""
        w = torch.softmax(scores.transpose(1, 2) / math.sqrt(self.head_dim) + bias, dim=-1)  # [B, H, N]
        pooled = torch.matmul(w.unsqueeze(2), self.split(values))  # [B, H, 1, hd]
        return pooled.transpose(1, 2).reshape(values.shape[0], 1, -1)

    def forward(self, x, bias):
        q, k = self.query(x), self.key(x)
        pooled_q = self.pool(self.query_att(q), bias, q)
        p = k * pooled_q
        pooled_k = self.pool(self.key_att(p), bias, p)
        return self.transform(q * pooled_k) + q  # the values are the queries


class DenseLayerNorm(nn.Module):
    """HF BertSelfOutput / BertOutput: LayerNorm(dense(x) + residual) (dropout is identity)."""

    def __init__(self, d_in, d, eps):
        super().__init__()
        self.dense = nn.Linear(d_in, d)
        self.LayerNorm = nn.LayerNorm(d, eps=eps)

    def forward(self, x, residual):
        return self.LayerNorm(self.dense(x) + residual)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self = FastSelfAttention(cfg)
        self.output = DenseLayerNorm(cfg["hidden_size"], cfg["hidden_size"], cfg["layer_norm_eps"])


class Intermediate(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.dense = nn.Linear(cfg["hidden_size"], cfg["intermediate_size"])


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attention = Attention(cfg)
        self.intermediate = Intermediate(cfg)
        self.output = DenseLayerNorm(cfg["intermediate_size"], cfg["hidden_size"], cfg["layer_norm_eps"])

    def forward(self, x, bias, debug, index):
        a = self.attention.self(x, bias)
        debug["debug.layer%d.attention" % index] = a
        x1 = self.attention.output(a, x)
        h = torch.nn.functional.gelu(self.intermediate.dense(x1))  # exact erf GELU
        return self.output(h, x1)


class AttentionPooling(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["hidden_size"]
        self.att_fc1 = nn.Linear(d, d)
        self.att_fc2 = nn.Linear(d, 1)

    def forward(self, x, mask):
        alpha = torch.exp(self.att_fc2(torch.tanh(self.att_fc1(x))))  # no max-subtraction
        alpha = alpha * mask.unsqueeze(2)
        alpha = alpha / (torch.sum(alpha, dim=1, keepdim=True) + 1e-8)
        return torch.bmm(x.permute(0, 2, 1), alpha).reshape(x.shape[0], -1)


class Encoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["hidden_size"]
        self.num_layers = cfg["num_hidden_layers"]
        self.shared = cfg["share_layers"]
        count = min(self.num_layers, 1) if self.shared else self.num_layers
        self.encoders = nn.ModuleList([Layer(cfg) for _ in range(count)])
        self.position_embeddings = nn.Embedding(cfg["max_position_embeddings"], d)
        self.LayerNorm = nn.LayerNorm(d, eps=cfg["layer_norm_eps"])
        self.poolers = nn.ModuleList([AttentionPooling(cfg)])

    def forward(self, embs, mask, debug):
        bias = ((1.0 - mask) * -10000.0).unsqueeze(1)  # [B, 1, N]
        pos = torch.arange(embs.shape[1])[None, :].expand(embs.shape[0], -1)
        x = self.LayerNorm(embs + self.position_embeddings(pos))
        debug["debug.embeddings"] = x
        for i in range(self.num_layers):
            x = self.encoders[0 if self.shared else i](x, bias, debug, i)
            if i + 1 < self.num_layers:  # the last one is last_hidden_state
                debug["debug.layer%d.output" % i] = x
        return x, self.poolers[0](x, mask)


class Model(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.word_embedding = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"], padding_idx=0)
        self.fastformer_model = Encoder(cfg)
        self.dense_linear = nn.Linear(cfg["hidden_size"], cfg["num_labels"])

    def forward(self, ids, mask):
        """ids [B, N] int64, mask [B, N] float 0/1 or None -> outputs and debug intermediates."""
        if mask is None:
            mask = (ids != 0).to(self.dense_linear.weight.dtype)  # input_ids.bool().float()
        debug = OrderedDict()
        x, pooled = self.fastformer_model(self.word_embedding(ids), mask, debug)
        out = OrderedDict(last_hidden_state=x, pooled=pooled, logits=self.dense_linear(pooled))
        out.update(debug)
        return out


# ---------------------------------------------------------------------------------------------
# Random weights


def random_weights(cfg, seed_name):
    """Float32 weights for every tensor of the official state dict, scaled so that activations
    are O(1) and the three poolings are far from uniform (the official init, std 0.02, would
    give near-constant outputs)."""
    shapes = OrderedDict((k, tuple(v.shape)) for k, v in Model(cfg).state_dict().items())
    # the score projections get a larger gain so that alpha, beta and the pooler weights vary
    # strongly over n
    return synthetic_weights(shapes, seed_name, is_embedding=lambda name: "embedding" in name,
                             is_norm_scale=lambda name: "LayerNorm.weight" in name,
                             gain=lambda name: 6.0 if ("_att." in name or "att_fc2" in name) else 1.0)


# Optional config fields and their defaults (as longrun's parser fills them in).
DEFAULTS = dict(layer_norm_eps=1e-12, hidden_act="gelu", pooler_type="weightpooler", share_layers=False)


def build_model(cfg, weights, dtype=torch.float64):
    m = Model(dict(DEFAULTS, **cfg))
    m.load_state_dict({k: torch.from_numpy(v.astype(np.float64)) for k, v in weights.items()}, strict=True)
    return m.to(dtype).eval()


def forward(cfg, weights, ids, mask, dtype=torch.float64):
    """ids int array [B, N], mask float array [B, N] or None. Returns name -> ndarray."""
    m = build_model(cfg, weights, dtype)
    t_mask = None if mask is None else torch.from_numpy(np.asarray(mask, dtype=np.float64)).to(dtype)
    with torch.no_grad():
        out = m(torch.from_numpy(np.asarray(ids, dtype=np.int64)), t_mask)
    return OrderedDict((k, v.numpy()) for k, v in out.items())


# ---------------------------------------------------------------------------------------------
# Golden models and cases (D = 64, 2 layers, small vocabularies; sizes keep the files small)


def config(**kw):
    c = dict(vocab_size=40, hidden_size=64, num_attention_heads=4, num_hidden_layers=2, intermediate_size=96,
             max_position_embeddings=300, num_labels=4, layer_norm_eps=1e-12, hidden_act="gelu",
             pooler_type="weightpooler", share_layers=False)
    c.update(kw)
    return c


MODELS = OrderedDict(
    [
        # the official structure (own weights per layer), H = 4, hd = 16
        ("fastformer_d64", config()),
        # layer-wise sharing (one weight set run twice), H = 8, hd = 8
        ("fastformer_d64_shared", config(num_attention_heads=8, max_position_embeddings=128, num_labels=3,
                                         share_layers=True)),
    ]
)

# (case, model, batch, length, ids dtype, mask dtype or None, mask rows: real tokens per row
# (right padding) or an explicit 0/1 list; with no mask given, padded ids are 0 and the model
# derives the mask from them)
CASES = [
    ("n1", "fastformer_d64", 2, 1, "i64", "i64", [1, 1]),
    ("n7_pad", "fastformer_d64", 2, 7, "i64", "i64", [7, 4]),
    ("n5_emptyrow", "fastformer_d64", 2, 5, "i32", "u8", [[0, 1, 1, 0, 1], 0]),  # a row of padding pools to 0
    ("n129_ids0_nomask", "fastformer_d64", 2, 129, "i32", None, [129, 77]),
    ("n300_pad", "fastformer_d64", 1, 300, "i64", "u8", [281]),
    ("n7_pad", "fastformer_d64_shared", 2, 7, "i64", "i64", [6, 7]),
    ("n97_pad", "fastformer_d64_shared", 2, 97, "i32", "f32", [97, 50]),
]


def case_inputs(model_name, case_name, batch, n, mask_rows, vocab):
    rng = tensor_rng(model_name, case_name, "inputs")
    ids = rng.integers(1, vocab, size=(batch, n))  # 0 = padding
    mask = padding_mask(batch, n, mask_rows)
    return np.where(mask > 0, ids, 0), mask


def check_float32(cfg, weights, ids, mask, expected):
    """The same forward in float32 (the official arithmetic) stays within float32 rounding."""
    got = forward(cfg, weights, ids, mask, dtype=torch.float32)
    for k in ("last_hidden_state", "pooled", "logits"):
        a, b = got[k].astype(np.float64), expected[k]
        err = np.sqrt(np.sum((a - b) ** 2) / max(np.sum(b**2), 1e-300))
        if not err < 1e-5 and np.sum(b**2) > 0:
            raise AssertionError("float32 forward differs from float64 (%s): %g" % (k, err))


def models():
    """name -> (config dict, weights OrderedDict name -> float32 array)."""
    return OrderedDict((name, (cfg, random_weights(cfg, name))) for name, cfg in MODELS.items())


def cases(model_table):
    """Yields (model name, case name, inputs OrderedDict name -> (dtype, array), expected
    OrderedDict name -> float64 array)."""
    for case, model, batch, n, ids_dtype, mask_dtype, mask_rows in CASES:
        cfg, weights = model_table[model]
        ids, mask = case_inputs(model, case, batch, n, mask_rows, cfg["vocab_size"])
        given = None if mask_dtype is None else mask
        out = forward(cfg, weights, ids, given)
        check_float32(cfg, weights, ids, given, out)
        inputs = OrderedDict([("input_ids", (ids_dtype, ids))])
        if mask_dtype is not None:
            inputs["attention_mask"] = (mask_dtype, mask)
        yield model, case, inputs, out
