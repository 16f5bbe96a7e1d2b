#!/usr/bin/env python3
"""Eager PyTorch timing baseline for the bidirectional Combiner LM (fixed and axial forms).

tests/oracles/combiner.py is the correctness oracle: it walks every query in Python, which
is right for goldens and useless as a speed peer. This module computes the same model
(docs/models.md#combiner-lm, docs/models.md#combiner-fixed TF sqrt_fixed_full, docs/models.md#combiner-axial TF axial_rowmajor with the 'proj' row summary,
key_padding false) the way a PyTorch user would write it: block matmuls in the rows / cols
layouts and one softmax over the concatenated slots. Padded inputs are not handled (the
benchmark's N is a multiple of s).

    python3 tools/bench/combiner_torch.py --check     # equals the oracle on small cases

Benchmark-only, like the op peers: never imported by longrun or its tests.
"""

import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "oracles"))

import combiner as oracle  # noqa: E402

EPS = oracle.EPS


def layer_norm(x, scale, bias):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], scale, bias, EPS)


def softmax_slots(logits, values):
    """One softmax over the concatenated slot groups; out = sum of weights @ values."""
    w = torch.softmax(torch.cat(logits, dim=-1), dim=-1)
    out, start = 0, 0
    for l, v in zip(logits, values):
        width = l.shape[-1]
        out = out + w[..., start:start + width] @ v
        start += width
    return out


def fixed_attention(q, k, v, s):
    """TF sqrt_fixed_full: the whole own segment and ALL n summaries (own one too)."""
    b, h, L, hd = q.shape
    n = L // s
    qr, kr, vr = (t.reshape(b, h, n, s, hd) for t in (q, k, v))
    qmax, kmax = qr.max(dim=3).values, kr.max(dim=3).values  # [B, H, n, hd]
    e = torch.softmax(qmax.unsqueeze(3) @ kr.transpose(-1, -2), dim=-1) @ vr  # [B, H, n, 1, hd]
    direct = qr @ kr.transpose(-1, -2)  # [B, H, n, s, s]
    summary = qr @ kmax.unsqueeze(2).transpose(-1, -2)  # [B, H, n, s, n]
    out = softmax_slots([direct, summary], [vr, e.reshape(b, h, 1, n, hd)])
    return out.reshape(b, h, L, hd)


def axial_attention(q, k, v, s, x_ln, w, a):
    """TF axial_rowmajor, row_summary 'proj': the whole own row and, per column, every row's
    summary key K~[r, t] = W2 LN'(W1 R[r, t] + x[r, t]) with value R[r, t]."""
    b, h, L, hd = q.shape
    n = L // s
    qr, kr, vr = (t.reshape(b, h, n, s, hd) for t in (q, k, v))
    direct = qr @ kr.transpose(-1, -2)  # [B, H, n, s, s]
    r = torch.softmax(direct, dim=-1) @ vr  # R, rows layout
    merged = r.permute(0, 2, 3, 1, 4).reshape(b, L, h * hd)
    w1 = merged @ w[a + "DenseGeneral_0/kernel"].reshape(h * hd, -1) + x_ln
    ln = layer_norm(w1, w[a + "LayerNorm_0/scale"], w[a + "LayerNorm_0/bias"])
    ksum = (ln @ w[a + "DenseGeneral_1/kernel"].reshape(-1, h * hd)).reshape(b, n, s, h, hd).permute(0, 3, 1, 2, 4)
    cols = lambda t: t.transpose(2, 3)  # noqa: E731  [B, H, s, n, hd]
    summary = cols(cols(qr) @ cols(ksum).transpose(-1, -2))  # [B, H, n, s, n]: slot r of (u, t)
    wts = torch.softmax(torch.cat([direct, summary], dim=-1), dim=-1)
    out = wts[..., :s] @ vr + cols(cols(wts[..., s:]) @ cols(r))
    return out.reshape(b, h, L, hd)


class CombinerLM(torch.nn.Module):
    """The JAX LanguageModel around the bidirectional fixed / axial forms; forward(ids, mask)
    returns the logits (mask is accepted for pytorch_models.py's call and must be all ones)."""

    def __init__(self, cfg, weights, dtype=torch.float32, device="cpu"):
        super().__init__()
        if cfg["attention"] not in ("fixed", "axial") or cfg["causal"] or cfg.get("key_padding"):
            raise ValueError("combiner_torch: only the bidirectional fixed / axial forms without key_padding")
        self.cfg = cfg
        self.w = {name: torch.as_tensor(t).to(dtype=dtype, device=device) for name, t in weights.items()}
        self.pe = oracle.sinusoid(cfg["max_len"], cfg["emb_dim"]).to(dtype=dtype, device=device)

    def forward(self, ids, mask=None):
        cfg, w = self.cfg, self.w
        s, heads, hh = cfg["max_seg_len"], cfg["num_heads"], cfg["qkv_dim"]
        hd = hh // heads
        b, L = ids.shape
        if L % s:
            raise ValueError("combiner_torch: N = %d is not a multiple of s = %d" % (L, s))
        x = w["Embed_0/embedding"][ids] + self.pe[:L]
        for l in range(cfg["num_layers"]):
            p = oracle.layer_prefix(l)
            a = p + oracle.ATTN_MODULE[cfg["attention"]] + "/"
            h = layer_norm(x, w[p + "LayerNorm_0/scale"], w[p + "LayerNorm_0/bias"])
            proj = lambda name: (h @ w[a + name + "/kernel"].reshape(-1, hh)).reshape(b, L, heads, hd).transpose(1, 2)  # noqa: E731
            q, k, v = proj("query") / math.sqrt(hd), proj("key"), proj("value")
            if cfg["attention"] == "fixed":
                y, out_kernel = fixed_attention(q, k, v, s), "DenseGeneral_0"
            else:
                y, out_kernel = axial_attention(q, k, v, s, h, w, a), "DenseGeneral_2"
            x = x + y.transpose(1, 2).reshape(b, L, hh) @ w[a + out_kernel + "/kernel"].reshape(hh, -1)
            h = layer_norm(x, w[p + "LayerNorm_1/scale"], w[p + "LayerNorm_1/bias"])
            hidden = torch.relu(h @ w[p + "MlpBlock_0/Dense_0/kernel"] + w[p + "MlpBlock_0/Dense_0/bias"])
            x = x + hidden @ w[p + "MlpBlock_0/Dense_1/kernel"] + w[p + "MlpBlock_0/Dense_1/bias"]
        last = layer_norm(x, w["autoreg_model/LayerNorm_0/scale"], w["autoreg_model/LayerNorm_0/bias"])
        return last @ w["autoreg_model/Dense_0/kernel"] + w["autoreg_model/Dense_0/bias"]


def check():
    """Both forms against the per-query oracle in float64 on small random models."""
    worst = 0.0
    for attention in ("fixed", "axial"):
        cfg = {"vocab_size": 37, "emb_dim": 32, "num_heads": 4, "qkv_dim": 32, "mlp_dim": 48, "num_layers": 2,
               "max_len": 48, "max_seg_len": 8, "attention": attention, "causal": False, "key_padding": False}
        weights = oracle.random_weights(cfg, "combiner_torch." + attention)
        ids = torch.randint(0, cfg["vocab_size"], (2, 40), generator=torch.Generator().manual_seed(5))
        want = oracle.forward(cfg, weights, ids.numpy(), None)["logits"]
        with torch.no_grad():
            got = CombinerLM(cfg, weights, torch.float64)(ids).numpy()
        err = float(abs(got - want).max() / abs(want).max())
        print("combiner_torch --check: %s max |diff| / max |logit| = %.2e" % (attention, err))
        worst = max(worst, err)
    return 0 if worst <= 1e-10 else 1


if __name__ == "__main__":
    if sys.argv[1:] != ["--check"]:
        print(__doc__)
        sys.exit(2)
    sys.exit(check())
