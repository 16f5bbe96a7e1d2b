"""Lasformer (arch "lasformer", docs/models.md#lasformer): the fairseq Transformer of
seq2seq_transformer.py with lightweight top-k key selection in encoder self-, decoder self-
and cross-attention. Written from docs/models.md#lasformer, in plain float64 PyTorch:

  Qs = Xq Wsq^T (+b)   Ks = Xk Wsk^T (+b)   As = Qs Ks^T / sqrt(ds) + masks (-inf)
  k_i = min(n_i, max(ceil(rho n_i - 1e-9), k_min)), n_i = unmasked keys of row i
  Sel_i = the k_i largest of As_i (ties: higher score, then lower index)
  attention (every head): softmax(q k^T / sqrt(hd) + M) v, M = 0 on Sel_i, -inf elsewhere
  the lowest layer of each group of r consecutive layers selects from its own attention
  inputs (Xq = the attention input, Xk = Xq or the encoder output); the others reuse it.

The -1e-9 keeps ceil(0.05 * 100) = 5 (0.05 * 100 is 5.000000000000001 in binary). Cases whose
selection boundary is within MIN_SELECTION_MARGIN of a tie are refused, so that float32
reproduces the same selection (exact ties of a zero query row excepted, see select; the f32 logits differ from these by ~1e-6 after two layers;
the margin keeps a 100x safety factor)."""

import math
from collections import OrderedDict

import numpy as np
import torch

import seq2seq_common as common
import seq2seq_oracle as oracle
import seq2seq_transformer

ARCH = "lasformer"

MIN_SELECTION_MARGIN = 1e-4


def selected_keys(sel, n):
    return min(n, max(math.ceil(sel["ratio"] * n - 1e-9), sel["min_keys"]))


def spec(cfg):
    sp = seq2seq_transformer.spec(cfg)
    sp["selection"] = dict(group_size=cfg.get("selection_group_size", 3), dim=cfg.get("selection_dim", 64),
                           ratio=cfg.get("selection_ratio", 0.05), min_keys=cfg.get("selection_min_keys", 10),
                           bias=cfg.get("selection_bias", False))
    return sp


class Lasformer(oracle.Seq2Seq):
    def __init__(self, sp, weights):
        super().__init__(sp, weights)
        self.shared = {}  # (side, attention kind) -> the group's selection mask [B, Nq, Nk]
        self.margin = float("inf")

    def select(self, xq, xk, name, causal, key_mask):
        sel = self.sp["selection"]
        qs = self.lin(xq, name + ".select_q", bias=sel["bias"])
        ks = self.lin(xk, name + ".select_k", bias=sel["bias"])
        s = qs @ ks.transpose(-1, -2) / math.sqrt(sel["dim"])
        b, nq, nk = s.shape
        valid = torch.ones(b, nq, nk, dtype=torch.bool)
        if causal:
            valid &= ~torch.ones(nq, nk, dtype=torch.bool).triu(1 + nk - nq)
        if key_mask is not None:
            valid &= key_mask[:, None, :]
        s = s.masked_fill(~valid, float("-inf"))
        counts = valid.sum(-1)
        order = torch.sort(s, dim=-1, descending=True, stable=True)
        keep = torch.zeros(b, nq, nk, dtype=torch.bool)
        for bi in range(b):
            for i in range(nq):
                n = int(counts[bi, i])
                k = selected_keys(sel, n)
                top = order.values[bi, i, :n]
                # A zero query (fairseq zeroes pad rows before layer 0) scores every key 0 in f32 as
                # well: an exact tie that both sides break by the lower index; not a near-tie.
                if k < n and not bool((top == top[0]).all()):
                    self.margin = min(self.margin, float(order.values[bi, i, k - 1] - order.values[bi, i, k]))
                keep[bi, i, order.indices[bi, i, :k]] = True
        return keep

    def generate(self, *args, **kw):
        # The oracle's beam search recomputes the whole prefix every step; row t of the causal
        # selection is the incremental selection of step t (keys <= t, k(t + 1)).
        out = super().generate(*args, **kw)
        if not self.margin > MIN_SELECTION_MARGIN:
            raise AssertionError("generation: a selection is a near-tie (%g); pick another case" % self.margin)
        return out

    def mha(self, xq, xkv, name, heads, causal, key_mask):
        parts = name.split(".")
        layer, kind = int(parts[-2]), parts[-1]
        side = parts[-4]
        if layer % self.sp["selection"]["group_size"] == 0:
            self.shared[(side, kind)] = self.select(xq, xkv, name, causal, key_mask)
        keep = self.shared[(side, kind)]
        b, nq, d = xq.shape
        nk = xkv.shape[1]
        hd = d // heads
        q = (self.lin(xq, name + ".q_proj") * hd**-0.5).reshape(b, nq, heads, hd).transpose(1, 2)
        k = self.lin(xkv, name + ".k_proj").reshape(b, nk, heads, hd).transpose(1, 2)
        v = self.lin(xkv, name + ".v_proj").reshape(b, nk, heads, hd).transpose(1, 2)
        sc = (q @ k.transpose(-1, -2)).masked_fill(~keep[:, None], float("-inf"))
        y = (torch.softmax(sc, dim=-1) @ v).transpose(1, 2).reshape(b, nq, d)
        return self.lin(y, name + ".out_proj")


def _cfg(**kw):
    c = dict(src_vocab_size=100, tgt_vocab_size=90, encoder_embed_dim=64, encoder_ffn_embed_dim=128,
             decoder_ffn_embed_dim=128, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
             decoder_attention_heads=4, share_decoder_input_output_embed=True, max_source_positions=256,
             max_target_positions=64, selection_group_size=2, selection_dim=32, selection_ratio=0.05,
             selection_min_keys=10)
    c.update(kw)
    return c


MODELS = OrderedDict(
    [
        # Transformer-base shape, small: post-LN, sinusoidal, ReLU; one group of 2 layers per
        # stack (layer 1 reuses layer 0's selection), ds 32, rho 5 %, k_min 10
        ("lasformer_r2_tiny", _cfg()),
        # every layer selects (r 1), selection biases, ds 16, rho 10 %, k_min 4, pre-LN, 3 + 2 layers
        ("lasformer_r1_bias_preln", _cfg(encoder_layers=3, selection_group_size=1, selection_bias=True,
                                         selection_dim=16, selection_ratio=0.1, selection_min_keys=4,
                                         encoder_normalize_before=True, decoder_normalize_before=True)),
    ]
)

CASES = [
    ("n1_t1", "lasformer_r2_tiny", 1, 1, None, 1, "i64", None),
    ("n37_t12_pad", "lasformer_r2_tiny", 2, 37, [37, 20], 12, "i64", None),
    ("n64_t9_leftpad", "lasformer_r2_tiny", 2, 64, [64, -7], 9, "i32", None),
    ("n151_t33", "lasformer_r2_tiny", 1, 151, None, 33, "i64", None),
    ("n150_t40", "lasformer_r1_bias_preln", 1, 150, None, 40, "i64", None),
    ("n29_t17_pad", "lasformer_r1_bias_preln", 2, 29, [29, 11], 17, "i64", None),
]

GENERATION = [
    ("greedy", "lasformer_r2_tiny", 2, 41, [41, 30], 1, 24, 3, 0, 1.0),
    ("beam4", "lasformer_r2_tiny", 1, 57, None, 4, 20, 3, 0, 1.0),
    ("beam3_norepeat3", "lasformer_r1_bias_preln", 2, 35, [35, -6], 3, 20, 4, 3, 2.0),
]

# The selection projections: 4x the common init, so that selection logits spread over a few
# units and the top-k boundary stays far from ties.
SELECTION_GAIN = 4.0


def models():
    out = OrderedDict()
    for name, cfg in MODELS.items():
        w = common.random_weights(spec(cfg), name)
        for k in w:
            if ".select_" in k:
                w[k] = (w[k] * SELECTION_GAIN).astype(np.float32)
        out[name] = (cfg, w)
    return out


def cases(table):
    for case, model, batch, n, rows, t, ids_dtype, _ in CASES:
        cfg, weights = table[model]
        sp = spec(cfg)
        ids, _mask = common.source(sp, model, case, batch, n, rows)
        dec = common.target(sp, model, case, batch, t)
        m = Lasformer(sp, weights)
        out = m.forward(ids, None, dec)
        if not m.margin > MIN_SELECTION_MARGIN:
            raise AssertionError("%s.%s: a selection is a near-tie (%g); pick another case" % (model, case, m.margin))
        inputs = OrderedDict([("input_ids", (ids_dtype, ids)), ("decoder_input_ids", (ids_dtype, dec))])
        yield model, case, inputs, out


def generation_cases(table):
    return common.family_generation(table, spec, GENERATION, Lasformer)
