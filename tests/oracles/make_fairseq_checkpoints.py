#!/usr/bin/python3
"""Writes fairseq-format checkpoints of golden models that make_hf_checkpoints.py does not
cover (tests/golden/checkpoints/), for the importer's round-trip tests
(tests/loader/convert_fairseq_test.cpp):

fairseq_roberta.pt
               roberta_tiny as fairseq's RobertaModel saves it (fairseq >= 0.10 names):
               {"args": argparse.Namespace(arch="roberta_base", ...), "model": state dict with
               encoder.sentence_encoder.{embed_tokens, embed_positions, layernorm_embedding,
               layers.{i}.{self_attn.{q,k,v,out}_proj, self_attn_layer_norm, fc1, fc2,
               final_layer_norm}}, encoder.sentence_encoder.version, encoder.lm_head.{dense,
               layer_norm, weight (the embedding table's storage), bias}, and a fine-tuning
               classification head (classification_heads.*, ignored by the importer)}. Layer 0
               uses the old fused in_proj_weight / in_proj_bias (q, k, v stacked).
               fairseq has no token-type table: the importer writes zeros there, every other
               tensor must equal the golden one bit for bit.
fairseq_roberta.fourier_l01_r05.n7_pad.io.safetensors
               fairseq_roberta.pt converted with --set filter_layers=[0, 1] filter_ratio=0.5 is a
               fourier-roberta with roberta_tiny's weights (token-type table zeros), a model no
               golden holds: the bert oracle's outputs for it on a padded 2 x 7 batch
               (make_hf_checkpoints.oracle_io).
fairseq_roberta.n7_pad.io.safetensors
               fairseq_roberta.pt converted as it is: roberta_tiny with the token-type table
               zeros, again a model no golden holds; the same oracle and batch.

The Lasformer (no public code) has fairseq names already; its round trip builds the
checkpoint at test time. fairseq itself does not run on Python 3.11 (docs/checkpoints.md#test-fixtures), so
the dicts are written with plain torch.save, as fairseq's checkpoint_utils does.

  /usr/bin/python3 tests/oracles/make_fairseq_checkpoints.py      # Debian torch 1.13
"""

import argparse
import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from make_hf_checkpoints import OUT, golden, oracle_io  # noqa: E402


def fairseq_roberta():
    w, c = golden("roberta_tiny")
    t = {k: torch.from_numpy(np.array(a, dtype=np.float32)) for k, a in w.items()}
    se = "encoder.sentence_encoder."
    sd = collections.OrderedDict()
    sd[se + "embed_tokens.weight"] = t["embeddings.word_embeddings.weight"]
    sd[se + "embed_positions.weight"] = t["embeddings.position_embeddings.weight"]
    for k in ("weight", "bias"):
        sd[se + "layernorm_embedding." + k] = t["embeddings.LayerNorm." + k]
    for i in range(c["num_hidden_layers"]):
        hf, fs = "encoder.layer.%d." % i, se + "layers.%d." % i
        for k in ("weight", "bias"):
            qkv = [t[hf + "attention.self.%s.%s" % (p, k)] for p in ("query", "key", "value")]
            if i == 0:  # old fairseq: one fused projection
                sd[fs + "self_attn.in_proj_" + k] = torch.cat(qkv)
            else:
                for p, x in zip("qkv", qkv):
                    sd[fs + "self_attn.%s_proj.%s" % (p, k)] = x
            sd[fs + "self_attn.out_proj." + k] = t[hf + "attention.output.dense." + k]
            sd[fs + "self_attn_layer_norm." + k] = t[hf + "attention.output.LayerNorm." + k]
            sd[fs + "fc1." + k] = t[hf + "intermediate.dense." + k]
            sd[fs + "fc2." + k] = t[hf + "output.dense." + k]
            sd[fs + "final_layer_norm." + k] = t[hf + "output.LayerNorm." + k]
    sd[se + "version"] = torch.tensor([2.0])
    for k in ("weight", "bias"):
        sd["encoder.lm_head.dense." + k] = t["lm_head.dense." + k]
        sd["encoder.lm_head.layer_norm." + k] = t["lm_head.layer_norm." + k]
    sd["encoder.lm_head.weight"] = sd[se + "embed_tokens.weight"]  # tied: the same storage
    sd["encoder.lm_head.bias"] = t["lm_head.bias"]
    D = c["hidden_size"]
    g = torch.Generator().manual_seed(5)
    head = "classification_heads.sentence_classification_head."
    sd[head + "dense.weight"] = torch.randn(D, D, generator=g)
    sd[head + "dense.bias"] = torch.zeros(D)
    sd[head + "out_proj.weight"] = torch.randn(3, D, generator=g)
    sd[head + "out_proj.bias"] = torch.zeros(3)
    pad = c["pad_token_id"]
    args = argparse.Namespace(
        arch="roberta_base", encoder_embed_dim=D, encoder_layers=c["num_hidden_layers"],
        encoder_attention_heads=c["num_attention_heads"], encoder_ffn_embed_dim=c["intermediate_size"],
        activation_fn=c["hidden_act"], max_positions=c["max_position_embeddings"] - pad - 1,
        dropout=0.1, attention_dropout=0.1, pooler_activation_fn="tanh", encoder_normalize_before=False,
        untie_weights_roberta=False, optimizer="adam", lr=[0.0006], task="masked_lm", criterion="masked_lm")
    torch.save({"args": args, "model": sd, "optimizer_history": [{"num_updates": 100}],
                "extra_state": {"epoch": 1}}, os.path.join(OUT, "fairseq_roberta.pt"))


def main():
    fairseq_roberta()
    zeroed = ("embeddings.token_type_embeddings.weight",)  # fairseq has no token-type table
    oracle_io("fairseq_roberta.n7_pad.io.safetensors", "roberta_tiny", "roberta", zeroed=zeroed,
              generator="make_fairseq_checkpoints.py")
    oracle_io("fairseq_roberta.fourier_l01_r05.n7_pad.io.safetensors", "roberta_tiny", "fourier-roberta",
              {"filter_layers": [0, 1], "filter_ratio": 0.5}, zeroed=zeroed, generator="make_fairseq_checkpoints.py")
    print("wrote", os.path.join(OUT, "fairseq_roberta.pt"))


if __name__ == "__main__":
    main()
