"""Encoder-decoder oracle shared by the "bart" and "transformer" golden modules: the fairseq
TransformerEncoder/Decoder (= HF BART) forward and fairseq-style beam search, in plain
PyTorch float64. Written from docs/models.md#encoder-decoders and docs/checkpoints.md#source-layouts
(fairseq and transformers are not installed); independent of longrun's C++.

A model is described by a dict `spec` (built by the family modules from their configs):
  root               "model." (BART) or "" (fairseq)
  enc_tokens, dec_tokens, out_proj   parameter prefixes of the token tables / output projection
  logits_bias        BART final_logits_bias [1, V]
  src_vocab, tgt_vocab, dim, enc_layers, dec_layers, enc_heads, dec_heads, enc_ffn, dec_ffn
  act                "gelu" | "relu" | "gelu_tanh"
  enc_pre, dec_pre   pre-LN (normalize_before) with a final layer_norm per side
  layernorm_embedding, embed_scale
  positions          "arange2" (HF BART) | "learned" | "sinusoidal" (fairseq make_positions)
  max_src, max_tgt   position limits; pad, eos, start
  fairseq_padding    masks (and positions) from ids == pad; encoder zeroes pad rows

Semantics (post-LN layer: x = LN(x + f(x)); pre-LN: x = x + f(LN(x))):
  enc: x = scale * E[ids] + P;  LN_emb;  x *= non_pad (fairseq);  layers;  LN (pre-LN)
  dec: y = scale * E[dec] + P;  LN_emb;  layers (causal self-attn + fairseq pad mask,
       cross-attn with the source mask);  LN (pre-LN);  logits = y W^T (+ final_logits_bias)
  attention: q = (x Wq^T + bq) * hd^-0.5, masked logits = -inf, softmax, out_proj.

Generation (greedy = beam 1), fairseq SequenceGenerator semantics as documented in
models/include/longrun/models/generate.h:
  tokens start with [start]; at step s (0-based, s = tokens generated so far)
    lprobs = log_softmax(logits of the last position); lprobs[pad] = -inf;
    s < min_length: lprobs[eos] = -inf;  s == max_new_tokens - 1: only eos allowed;
    no_repeat_ngram n: tokens t that would repeat an n-gram of the hypothesis (start
    token included) get -inf;
    cand = beam_score[k] + lprobs[k, v] (step 0: beam 0 only); the best 2K (score
    descending, ties by flat index k * V + v ascending);
    candidates among the first K that end in eos are finished (while the sentence has
    fewer than K), score = cum / (s + 1) ** length_penalty; the first K candidates that do
    not end in eos continue; a sentence is done with K finished hypotheses.
  Results: the finished hypotheses sorted by score descending (stable), tokens without the
  start token, eos included.
"""

import math
from collections import OrderedDict

import numpy as np
import scipy.fft
import torch
import torch.nn.functional as F


def sinusoidal_table(rows, dim, pad):
    half = dim // 2
    f = torch.exp(torch.arange(half, dtype=torch.float64) * -(math.log(10000.0) / (half - 1)))
    a = torch.arange(rows, dtype=torch.float64)[:, None] * f[None, :]
    t = torch.cat([torch.sin(a), torch.cos(a)], dim=1)
    if dim % 2:
        t = torch.cat([t, torch.zeros(rows, 1, dtype=torch.float64)], dim=1)
    t[pad] = 0
    return t


def spectral_filter(x, keep):
    """IDCT_M(DCT_T(x)[:M]) along axis 1 (orthonormal, scipy), M = min(keep, T)."""
    m = min(keep, x.shape[1])
    c = scipy.fft.dct(x.numpy(), type=2, norm="ortho", axis=1)[:, :m]
    return torch.from_numpy(scipy.fft.idct(c, type=2, norm="ortho", axis=1))


def nearest_up(x, size):
    """F.interpolate(mode='nearest', size) along axis 1 with PyTorch's float32 index rule:
    src = min(floor(float32(dst) * float32(M / size)), M - 1) (docs/models.md#fourier-bart)."""
    m = x.shape[1]
    if m == size:
        return x
    scale = np.float32(m) / np.float32(size)
    src = np.minimum(np.floor(np.arange(size, dtype=np.float32) * scale).astype(np.int64), m - 1)
    return x[:, torch.from_numpy(src)]


def make_positions(ids, pad):
    m = (ids != pad).long()
    return torch.cumsum(m, dim=1) * m + pad


def parameter_shapes(sp):
    d = sp["dim"]
    p = OrderedDict()

    def table(name, rows):
        if name + ".weight" not in p:
            p[name + ".weight"] = (rows, d)

    def lin(name, o, i, bias=True):
        p[name + ".weight"] = (o, i)
        if bias:
            p[name + ".bias"] = (o,)

    def ln(name):
        p[name + ".weight"] = (d,)
        p[name + ".bias"] = (d,)

    table(sp["enc_tokens"], sp["src_vocab"])
    table(sp["dec_tokens"], sp["tgt_vocab"])
    for side in ("encoder", "decoder"):
        pre = sp["root"] + side + "."
        enc = side == "encoder"
        if sp["positions"] != "sinusoidal":
            mx = sp["max_src"] if enc else sp["max_tgt"]
            table(pre + "embed_positions", mx + 2 if sp["positions"] == "arange2" else mx + sp["pad"] + 1)
        if sp["layernorm_embedding"]:
            ln(pre + "layernorm_embedding")
        ffn = sp["enc_ffn"] if enc else sp["dec_ffn"]
        for i in range(sp["enc_layers"] if enc else sp["dec_layers"]):
            lp = "%slayers.%d." % (pre, i)
            for a in ("self_attn",) if enc else ("self_attn", "encoder_attn"):
                for w in ("q_proj", "k_proj", "v_proj", "out_proj"):
                    lin(lp + a + "." + w, d, d)
                ln(lp + a + "_layer_norm")
            lin(lp + "fc1", ffn, d)
            lin(lp + "fc2", d, ffn)
            ln(lp + "final_layer_norm")
        if sp["enc_pre" if enc else "dec_pre"]:
            ln(pre + "layer_norm")
    sel = sp.get("selection")  # Lasformer (seq2seq_lasformer.py): at the lowest layer of every group
    if sel:
        for side, n, kinds in (("encoder", sp["enc_layers"], ("self_attn",)),
                               ("decoder", sp["dec_layers"], ("self_attn", "encoder_attn"))):
            for i in range(0, n, sel["group_size"]):
                for a in kinds:
                    for w in ("select_q", "select_k"):
                        lin("%s%s.layers.%d.%s.%s" % (sp["root"], side, i, a, w), sel["dim"], d, sel["bias"])
    if sp["out_proj"] + ".weight" not in p:
        lin(sp["out_proj"], sp["tgt_vocab"], d, bias=False)
    if sp["logits_bias"]:
        p["final_logits_bias"] = (1, sp["tgt_vocab"])
    return p


class Seq2Seq:
    def __init__(self, sp, weights):
        self.sp = sp
        self.w = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in weights.items()}
        if sp["positions"] == "sinusoidal":
            self.sin = sinusoidal_table(max(sp["max_src"], sp["max_tgt"]) + sp["pad"] + 1, sp["dim"], sp["pad"])

    def lin(self, x, name, bias=True):
        y = x @ self.w[name + ".weight"].T
        return y + self.w[name + ".bias"] if bias else y

    def ln(self, x, name):
        return F.layer_norm(x, (x.shape[-1],), self.w[name + ".weight"], self.w[name + ".bias"], 1e-5)

    def act(self, x):
        a = self.sp["act"]
        if a == "relu":
            return torch.relu(x)
        return F.gelu(x, approximate="tanh" if a == "gelu_tanh" else "none")

    def mha(self, xq, xkv, name, heads, causal, key_mask):
        """key_mask: bool [B, Nk], True = attend, or None."""
        b, nq, d = xq.shape
        nk = xkv.shape[1]
        hd = d // heads
        q = (self.lin(xq, name + ".q_proj") * hd**-0.5).reshape(b, nq, heads, hd).transpose(1, 2)
        k = self.lin(xkv, name + ".k_proj").reshape(b, nk, heads, hd).transpose(1, 2)
        v = self.lin(xkv, name + ".v_proj").reshape(b, nk, heads, hd).transpose(1, 2)
        s = q @ k.transpose(-1, -2)
        if causal:
            s = s.masked_fill(torch.ones(nq, nk, dtype=torch.bool).triu(1 + nk - nq), float("-inf"))
        if key_mask is not None:
            s = s.masked_fill(~key_mask[:, None, None, :], float("-inf"))
        y = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(b, nq, d)
        return self.lin(y, name + ".out_proj")

    def block(self, x, ln_name, pre, f):
        if pre:
            return x + f(self.ln(x, ln_name))
        return self.ln(x + f(x), ln_name)

    def embed(self, side, tokens, ids):
        sp = self.sp
        x = sp["embed_scale"] * self.w[tokens + ".weight"][ids]
        pre = sp["root"] + side + "."
        if sp["positions"] == "arange2":
            x = x + self.w[pre + "embed_positions.weight"][2 : 2 + ids.shape[1]][None]
        else:
            pos = make_positions(ids, sp["pad"])
            tab = self.sin if sp["positions"] == "sinusoidal" else self.w[pre + "embed_positions.weight"]
            x = x + tab[pos]
        if sp["layernorm_embedding"]:
            x = self.ln(x, pre + "layernorm_embedding")
        return x

    def encode(self, ids, mask, debug):
        sp = self.sp
        pre = sp["root"] + "encoder."
        x = self.embed("encoder", sp["enc_tokens"], ids)
        if sp["fairseq_padding"]:
            key_mask = ids != sp["pad"]
            x = x * key_mask[:, :, None].to(x.dtype)  # float64 here; tools/bench/pytorch_models.py casts
        else:
            key_mask = None if mask is None else torch.from_numpy(np.asarray(mask) != 0)
        debug["debug.encoder.embeddings"] = x
        filters = sp.get("filter_layers", [])
        global_terms = []  # Fourier-BART (docs/models.md#fourier-bart): pre-filter inputs, then the last pre-LN sum
        t0 = x.shape[1]
        for i in range(sp["enc_layers"]):
            lp = "%slayers.%d." % (pre, i)
            if filters and i >= min(filters):
                key_mask = None  # dropped from the first filter on, cross-attention included
            if i in filters:
                global_terms.append(x)
                x = spectral_filter(x, int(math.ceil(float(x.shape[1]) * float(sp["filter_ratio"]))))
                debug["debug.encoder.layer%d.filtered" % i] = x
            x = self.block(x, lp + "self_attn_layer_norm", sp["enc_pre"],
                           lambda h: self.mha(h, h, lp + "self_attn", sp["enc_heads"], False, key_mask))
            if i == sp["enc_layers"] - 1 and global_terms:
                h = x + self.lin(self.act(self.lin(x, lp + "fc1")), lp + "fc2")
                global_terms.append(h)
                h = global_terms[0] + sum(nearest_up(g, t0) for g in global_terms[1:])
                x = self.ln(h, lp + "final_layer_norm")
            else:
                x = self.block(x, lp + "final_layer_norm", sp["enc_pre"],
                               lambda h: self.lin(self.act(self.lin(h, lp + "fc1")), lp + "fc2"))
            debug["debug.encoder.layer%d.output" % i] = x
        if sp["enc_pre"]:
            x = self.ln(x, pre + "layer_norm")
        return x, key_mask

    def decode(self, dec_ids, memory, key_mask, debug):
        sp = self.sp
        pre = sp["root"] + "decoder."
        y = self.embed("decoder", sp["dec_tokens"], dec_ids)
        self_mask = (dec_ids != sp["pad"]) if sp["fairseq_padding"] else None
        debug["debug.decoder.embeddings"] = y
        for i in range(sp["dec_layers"]):
            lp = "%slayers.%d." % (pre, i)
            y = self.block(y, lp + "self_attn_layer_norm", sp["dec_pre"],
                           lambda h: self.mha(h, h, lp + "self_attn", sp["dec_heads"], True, self_mask))
            y = self.block(y, lp + "encoder_attn_layer_norm", sp["dec_pre"],
                           lambda h: self.mha(h, memory, lp + "encoder_attn", sp["dec_heads"], False, key_mask))
            y = self.block(y, lp + "final_layer_norm", sp["dec_pre"],
                           lambda h: self.lin(self.act(self.lin(h, lp + "fc1")), lp + "fc2"))
            debug["debug.decoder.layer%d.output" % i] = y
        if sp["dec_pre"]:
            y = self.ln(y, pre + "layer_norm")
        logits = self.lin(y, sp["out_proj"], bias=False)
        if sp["logits_bias"]:
            logits = logits + self.w["final_logits_bias"]
        return logits

    def forward(self, ids, mask, dec_ids):
        """-> OrderedDict of last_hidden_state, logits, debug.* (float64 numpy)."""
        debug = OrderedDict()
        with torch.no_grad():
            ids = torch.from_numpy(np.asarray(ids, dtype=np.int64))
            dec = torch.from_numpy(np.asarray(dec_ids, dtype=np.int64))
            x, km = self.encode(ids, mask, debug)
            logits = self.decode(dec, x, km, debug)
        out = OrderedDict(last_hidden_state=x, logits=logits)
        out.update(debug)
        return OrderedDict((k, v.numpy()) for k, v in out.items())

    # --- generation ------------------------------------------------------------------------

    def generate(self, ids, mask, beam, max_new, min_len=0, no_repeat=0, lenpen=1.0):
        """Returns (hyps per sentence: list of (score, tokens)), min decision margin)."""
        sp = self.sp
        torch_ids = torch.from_numpy(np.asarray(ids, dtype=np.int64))
        results, margin = [], float("inf")
        with torch.no_grad():
            for b in range(torch_ids.shape[0]):
                m = None if mask is None else np.asarray(mask)[b : b + 1]
                mem, km = self.encode(torch_ids[b : b + 1], m, {})
                res, mg = self._beam(mem, km, beam, max_new, min_len, no_repeat, lenpen)
                results.append(res)
                margin = min(margin, mg)
        return results, margin

    def _decision_margin(self, cand, order, k, v):
        """How far the step's decisions are from flipping: the eos candidates at the top-k
        boundary, and the k-th vs the (k+1)-th continuing (non-eos) candidate."""
        eos = self.sp["eos"]
        full = sorted(range(len(cand)), key=lambda j: (-cand[j], j))
        gaps = []
        if len(full) > k and (full[k - 1] % v == eos or full[k] % v == eos) and np.isfinite(cand[full[k]]):
            gaps.append(cand[full[k - 1]] - cand[full[k]])
        cont = [cand[j] for j in full if j % v != eos][: k + 1]
        if len(cont) == k + 1 and np.isfinite(cont[k]):
            gaps.append(cont[k - 1] - cont[k])
        gaps = [g for g in gaps if np.isfinite(g)]
        return min(gaps) if gaps else float("inf")

    def _beam(self, mem, km, k, max_new, min_len, no_repeat, lenpen):
        sp = self.sp
        v = sp["tgt_vocab"]
        hyps = [[sp["start"]]]
        scores = [0.0]
        finished = []
        margin = float("inf")
        for s in range(max_new):
            dec = torch.tensor(hyps, dtype=torch.long)
            n = dec.shape[0]
            logits = self.decode(dec, mem.expand(n, -1, -1), None if km is None else km.expand(n, -1), {})
            lp = torch.log_softmax(logits[:, -1], dim=-1).clone()
            lp[:, sp["pad"]] = float("-inf")
            if s < min_len:
                lp[:, sp["eos"]] = float("-inf")
            if s == max_new - 1:
                keep = lp[:, sp["eos"]].clone()
                lp[:] = float("-inf")
                lp[:, sp["eos"]] = keep
            if no_repeat > 0:
                for r, h in enumerate(hyps):
                    if len(h) + 1 >= no_repeat:
                        tail = h[len(h) - no_repeat + 1 :] if no_repeat > 1 else []
                        for i in range(len(h) - no_repeat + 1):
                            if h[i : i + no_repeat - 1] == tail:
                                lp[r, h[i + no_repeat - 1]] = float("-inf")
            cand = (torch.tensor(scores, dtype=torch.float64)[:, None] + lp).reshape(-1).numpy()
            order = sorted(range(len(cand)), key=lambda j: (-cand[j], j))[: 2 * k]
            margin = min(margin, self._decision_margin(cand, order, k, v))
            new_h, new_s = [], []
            for rank, j in enumerate(order):
                if not np.isfinite(cand[j]):
                    continue
                r, t = divmod(j, v)
                if t == sp["eos"]:
                    if rank < k and len(finished) < k:
                        finished.append((cand[j] / (s + 1) ** lenpen, hyps[r][1:] + [t]))
                elif len(new_h) < k:
                    new_h.append(hyps[r] + [t])
                    new_s.append(cand[j])
            if len(finished) >= k or not new_h:
                break
            hyps, scores = new_h, new_s
        finished.sort(key=lambda e: -e[0])
        fs = [e[0] for e in finished]
        for a, c in zip(fs, fs[1:]):
            margin = min(margin, a - c) if a != c else margin
        return finished, margin
