"""Golden tables shared by the encoder-decoder family modules (seq2seq_bart.py,
seq2seq_transformer.py): seeded random weights and inputs, forward cases and generation
cases over seq2seq_oracle.Seq2Seq."""

import math
from collections import OrderedDict

import numpy as np

import seq2seq_oracle as oracle
from oracle_common import synthetic_weights, tensor_rng

# Generation goldens must not hinge on near-ties: every decision (adjacent candidate scores,
# final ranking) is at least this far apart in the float64 oracle, far above the f32 error.
MIN_MARGIN = 1e-3


def random_weights(sp, seed):
    d = sp["dim"]

    def token_tables_and_logit_bias(name, shape, rng):
        if len(shape) == 2 and shape[1] == d and ("embed_tokens" in name or "shared" in name or "output_projection" in name):
            # logits = y . row: std ~2 spreads the next-token distribution
            return rng.standard_normal(shape) * (0.3 if sp["embed_scale"] == 1.0 else 2.0 / math.sqrt(d))
        if name == "final_logits_bias":
            w = rng.uniform(-0.5, 0.5, shape)
            w[0, sp["eos"]] += 1.0  # so that hypotheses do end with eos
            return w
        return None

    return synthetic_weights(oracle.parameter_shapes(sp), seed, is_embedding=lambda name: name.endswith("embed_positions.weight"),
                             is_norm_scale=lambda name: "norm" in name and name.endswith(".weight"),
                             gain=lambda name: 2.0 if (".q_proj." in name or ".k_proj." in name) else 1.0,
                             embedding_std=lambda name: 0.5, special=token_tables_and_logit_bias)


def family_models(models, spec):
    return OrderedDict((name, (cfg, random_weights(spec(cfg), name))) for name, cfg in models.items())


def source(sp, model, case, batch, n, rows):
    """ids [B, N] (pad at padded positions) and the 0/1 mask. rows[b] = real tokens: > 0 right
    padding, < 0 left padding by |rows[b]|; None: no padding."""
    rng = tensor_rng(model, case, "inputs")
    ids = rng.integers(3, sp["src_vocab"], size=(batch, n))
    ids = np.where(ids == sp["pad"], sp["pad"] + 1 if sp["pad"] + 1 < sp["src_vocab"] else 3, ids)
    mask = np.ones((batch, n))
    for b, r in enumerate(rows or []):
        if r > 0:
            mask[b, r:] = 0
        elif r < 0:
            mask[b, : -r] = 0
    return np.where(mask > 0, ids, sp["pad"]), mask


def target(sp, model, case, batch, t):
    rng = tensor_rng(model, case, "decoder")
    ids = rng.integers(3, sp["tgt_vocab"], size=(batch, t))
    ids = np.where(ids == sp["pad"], 3 if sp["pad"] != 3 else 4, ids)
    ids[:, 0] = sp["start"]
    return ids


def family_cases(table, spec, cases):
    for case, model, batch, n, rows, t, ids_dtype, mask_dtype in cases:
        cfg, weights = table[model]
        sp = spec(cfg)
        ids, mask = source(sp, model, case, batch, n, rows)
        dec = target(sp, model, case, batch, t)
        m = oracle.Seq2Seq(sp, weights)
        out = m.forward(ids, mask if mask_dtype else None, dec)
        inputs = OrderedDict([("input_ids", (ids_dtype, ids)), ("decoder_input_ids", (ids_dtype, dec))])
        if mask_dtype is not None:
            inputs["attention_mask"] = (mask_dtype, mask)
        yield model, case, inputs, out


def family_generation(table, spec, cases, model_class=oracle.Seq2Seq):
    """Yields (model, case, inputs, options, sequences int64 [B, K, L] padded with -1,
    scores float64 [B, K]). model_class: the oracle (a Seq2Seq subclass for variants)."""
    for case, model, batch, n, rows, beams, max_new, min_len, no_repeat, lenpen in cases:
        cfg, weights = table[model]
        sp = spec(cfg)
        ids, mask = source(sp, model, case, batch, n, rows)
        m = model_class(sp, weights)
        use_mask = rows is not None and not sp["fairseq_padding"]
        results, margin = m.generate(ids, mask if use_mask else None, beams, max_new, min_len, no_repeat, lenpen)
        if not margin > MIN_MARGIN:
            raise AssertionError("%s.%s: a beam decision is a near-tie (%g); pick another case" % (model, case, margin))
        length = max(len(toks) for res in results for _, toks in res)
        seqs = np.full((batch, beams, length), -1, dtype=np.int64)
        scores = np.zeros((batch, beams))
        for b, res in enumerate(results):
            if len(res) != beams:
                raise AssertionError("%s.%s: sentence %d has %d hypotheses" % (model, case, b, len(res)))
            for k, (score, toks) in enumerate(res):
                seqs[b, k, : len(toks)] = toks
                scores[b, k] = score
        inputs = OrderedDict([("input_ids", ("i64", ids))])
        if use_mask:
            inputs["attention_mask"] = ("i64", mask)
        options = OrderedDict(num_beams=beams, max_new_tokens=max_new, min_length=min_len,
                              no_repeat_ngram_size=no_repeat, length_penalty=lenpen)
        yield model, case, inputs, options, seqs, scores
