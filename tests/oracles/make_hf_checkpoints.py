#!/usr/bin/python3
"""Writes Hugging Face-style directories of the bert / roberta / bart golden models
(tests/golden/models) for the importer's round-trip tests (tests/golden/checkpoints/hf_*/).

  /usr/bin/python3 tests/oracles/make_hf_checkpoints.py      # Debian torch 1.13

hf_bert/       config.json (model_type "bert", architectures ["BertForPreTraining"]; no
               mlm_head / add_pooling_layer: the importer infers them from the tensors) +
               model.safetensors with the "bert." prefix, the position_ids buffer (I64), an
               NSP head (cls.seq_relationship.*) and the tied decoder copies
               (cls.predictions.decoder.weight = word embeddings, decoder.bias = the bias).
hf_roberta/    config.json (model_type "roberta", RobertaForMaskedLM) + pytorch_model.bin
               written by torch.save: "roberta." prefix, position_ids buffer, and lm_head.decoder
               .weight / .bias sharing storage with the word embeddings / lm_head.bias (as an
               nn.Module's tied Parameters are saved).
hf_bart/       config.json (model_type "bart", BartForConditionalGeneration) + model.safetensors
               holding lm_head.weight and model.encoder/decoder.embed_tokens.weight (the tied
               copies) but no model.shared.weight: the importer re-creates it from a copy.

fairseq_transformer.pt
               transformer_base_tiny as a fairseq checkpoint: {"args": argparse.Namespace
               (transformer hyper-parameters plus training options the importer must drop),
               "model": state dict with fused in_proj_weight/bias (q, k, v stacked),
               encoder/decoder.version and embed_positions._float_tensor buffers, and
               decoder.output_projection.weight sharing the decoder table's storage,
               "optimizer_history": [...], "extra_state": {...}}.

fairseq_bart.pt / fairseq_fourier_bart.pt
               bart_tiny / fourier_bart_l2_r03 as fairseq BART checkpoints: "model." stripped,
               model.shared as encoder/decoder embed_tokens and decoder.output_projection (one
               storage), no final_logits_bias, version buffers, args with fairseq names (and
               dct_layers as the string "[2]", dct_percentage, as the official Fourier-BART).
fastformer_official.pt / fastformer_shared_official.pt
               fastformer_d64 / fastformer_d64_shared (share_layers: one encoders.0 layer) as
               the notebook's training loop would save them with DataParallel:
               torch.save({"model_state_dict": {"module." + name: tensor}, "epoch": 3}).
fastformer_d64.fastformer.json
               fastformer_d64's config as the official repository ships fastformer.json: its
               keys in its order (training-only ones, enable_fp16 as the string "False", no
               num_labels: the notebook hard-codes dense_linear's outputs).
hf_fourier_bart/
               fourier_bart_l2_r03 as a plain HF BART directory (config.json of model_type
               "bart" without the dct_* fields, which the importer gets from --set) +
               model.safetensors as save_pretrained writes it (model.shared.weight; one tied
               copy, lm_head.weight, kept).
hf_bert.fourier_l1_r05.n7_pad.io.safetensors
               hf_bert converted with --set filter_layers=[1] filter_ratio=0.5 is a fourier-bert
               with bert_tiny's weights, a model no golden holds: the bert oracle's outputs for
               it (float64, rounded once to f32; no debug intermediates) on a padded 2 x 7 batch,
               and the config it ran ("longrun.config").
fairseq_bart.n7_t5_pad.io.safetensors / fairseq_fourier_bart.n7_t5_pad.io.safetensors
               fairseq_bart.pt / fairseq_fourier_bart.pt converted are bart_tiny /
               fourier_bart_l2_r03 with final_logits_bias zeros (fairseq has none), models no
               golden holds: the seq2seq oracle's outputs for them on a padded 2 x 7 source and
               2 x 5 decoder ids (oracle_io; attention_mask for bart only).

Converting each must give back the golden model's tensors bit for bit, and the converted
model the golden's (or the io file's) outputs (tests/loader/convert_hf_test.cpp).
"""

import collections
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import bert  # noqa: E402
import safetensors_io  # noqa: E402
import seq2seq_bart  # noqa: E402
import seq2seq_common  # noqa: E402
import seq2seq_fourier_bart  # noqa: E402
import seq2seq_oracle  # noqa: E402
from safetensors_io import Tensor  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
MODELS = os.path.join(REPO, "tests", "golden", "models")
OUT = os.path.join(REPO, "tests", "golden", "checkpoints")
LONGRUN_ONLY = ("mlm_head", "add_pooling_layer")


def golden(name):
    tensors, meta = safetensors_io.read(os.path.join(MODELS, name + ".safetensors"))
    config = json.loads(meta["longrun.config"])
    return {k: t.to_numpy() for k, t in tensors.items()}, config


def write_config(d, config, model_type, architecture):
    hf = {k: v for k, v in config.items() if k not in LONGRUN_ONLY}
    hf.update(model_type=model_type, architectures=[architecture], transformers_version="4.30.0")
    with open(os.path.join(d, "config.json"), "w", encoding="utf-8") as f:
        json.dump(hf, f, indent=2, sort_keys=True)
        f.write("\n")


def f32(a):
    return Tensor.from_numpy(np.asarray(a, dtype=np.float32), "F32")


def hf_bert():
    w, config = golden("bert_tiny")
    d = os.path.join(OUT, "hf_bert")
    os.makedirs(d, exist_ok=True)
    out = {}
    for k, a in w.items():
        out[("" if k.startswith("cls.") else "bert.") + k] = f32(a)
    out["bert.embeddings.position_ids"] = Tensor.from_numpy(
        np.arange(config["max_position_embeddings"], dtype=np.int64)[None, :], "I64")
    out["cls.predictions.decoder.weight"] = f32(w["embeddings.word_embeddings.weight"])
    out["cls.predictions.decoder.bias"] = f32(w["cls.predictions.bias"])
    rng = np.random.default_rng(7)
    out["cls.seq_relationship.weight"] = f32(rng.standard_normal((2, config["hidden_size"])))
    out["cls.seq_relationship.bias"] = f32(np.zeros(2))
    safetensors_io.write(os.path.join(d, "model.safetensors"), out, {"format": "pt"})
    write_config(d, config, "bert", "BertForPreTraining")


def hf_roberta():
    w, config = golden("roberta_tiny")
    d = os.path.join(OUT, "hf_roberta")
    os.makedirs(d, exist_ok=True)
    sd = {}
    for k, a in w.items():
        sd[("" if k.startswith("lm_head.") else "roberta.") + k] = torch.from_numpy(np.array(a, dtype=np.float32))
    sd["roberta.embeddings.position_ids"] = torch.arange(config["max_position_embeddings"]).unsqueeze(0)
    sd["lm_head.decoder.weight"] = sd["roberta.embeddings.word_embeddings.weight"]  # same storage
    sd["lm_head.decoder.bias"] = sd["lm_head.bias"]
    torch.save(sd, os.path.join(d, "pytorch_model.bin"))
    write_config(d, config, "roberta", "RobertaForMaskedLM")


def hf_bart():
    w, config = golden("bart_tiny")
    d = os.path.join(OUT, "hf_bart")
    os.makedirs(d, exist_ok=True)
    out = {k: f32(a) for k, a in w.items() if k != "model.shared.weight"}
    for copy in ("model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight", "lm_head.weight"):
        out[copy] = f32(w["model.shared.weight"])
    safetensors_io.write(os.path.join(d, "model.safetensors"), out, {"format": "pt"})
    write_config(d, config, "bart", "BartForConditionalGeneration")


def fairseq_transformer():
    import argparse
    import collections
    w, config = golden("transformer_base_tiny")
    t = {k: torch.from_numpy(np.array(a, dtype=np.float32)) for k, a in w.items()}
    sd = collections.OrderedDict()
    for k, v in t.items():
        for proj in ("self_attn", "encoder_attn"):
            for kind in ("weight", "bias"):
                q = ".%s.q_proj.%s" % (proj, kind)
                if k.endswith(q):
                    base = k[: -len(q)]
                    sd["%s.%s.in_proj_%s" % (base, proj, kind)] = torch.cat(
                        [t[base + ".%s.%s_proj.%s" % (proj, p, kind)] for p in "qkv"])
        if any(".%s.%s_proj." % (proj, p) in k for proj in ("self_attn", "encoder_attn") for p in "qkv"):
            continue
        sd[k] = v
    sd["decoder.output_projection.weight"] = sd["decoder.embed_tokens.weight"]  # tied: same storage
    for side in ("encoder", "decoder"):
        sd[side + ".version"] = torch.tensor([3.0])
        sd[side + ".embed_positions._float_tensor"] = torch.tensor([1.0])
    args = argparse.Namespace(arch="transformer", dropout=0.1, optimizer="adam", lr=[0.0005], seed=1,
                              criterion="label_smoothed_cross_entropy", label_smoothing=0.1,
                              **{k: v for k, v in config.items() if k not in ("src_vocab_size", "tgt_vocab_size")})
    ck = {"args": args, "model": sd, "optimizer_history": [{"num_updates": 10}], "extra_state": {"epoch": 2}}
    torch.save(ck, os.path.join(OUT, "fairseq_transformer.pt"))


def fairseq_bart(golden_name, out_name, arch, extra):
    import argparse
    w, c = golden(golden_name)
    t = {k: torch.from_numpy(np.array(a, dtype=np.float32)) for k, a in w.items()}
    sd = {}
    for k, v in t.items():
        if k.startswith("model.") and k != "model.shared.weight":
            sd[k[len("model."):]] = v
    shared = t["model.shared.weight"]
    for k in ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "decoder.output_projection.weight"):
        sd[k] = shared
    sd["encoder.version"] = torch.tensor([3.0])
    sd["decoder.version"] = torch.tensor([3.0])
    args = argparse.Namespace(
        arch=arch, encoder_embed_dim=c["d_model"], decoder_embed_dim=c["d_model"],
        encoder_layers=c["encoder_layers"], decoder_layers=c["decoder_layers"],
        encoder_attention_heads=c["encoder_attention_heads"], decoder_attention_heads=c["decoder_attention_heads"],
        encoder_ffn_embed_dim=c["encoder_ffn_dim"], decoder_ffn_embed_dim=c["decoder_ffn_dim"],
        max_source_positions=c["max_position_embeddings"], max_target_positions=c["max_position_embeddings"],
        activation_fn=c.get("activation_function", "gelu"), share_all_embeddings=True,
        encoder_learned_pos=True, decoder_learned_pos=True, layernorm_embedding=True,
        no_scale_embedding=not c.get("scale_embedding", False), dropout=0.1, lr=[3e-05], **extra)
    torch.save({"args": args, "model": sd, "optimizer_history": []}, os.path.join(OUT, out_name))


def fastformer_official(golden_name, out_name):
    w, _ = golden(golden_name)
    sd = {"module." + k: torch.from_numpy(np.array(a, dtype=np.float32)) for k, a in w.items()}
    torch.save({"model_state_dict": sd, "epoch": 3}, os.path.join(OUT, out_name))


def fastformer_json(golden_name, out_name):
    _, c = golden(golden_name)
    shipped = collections.OrderedDict(
        [("hidden_size", c["hidden_size"]), ("hidden_dropout_prob", 0.2), ("num_hidden_layers", c["num_hidden_layers"]),
         ("hidden_act", c["hidden_act"]), ("num_attention_heads", c["num_attention_heads"]),
         ("intermediate_size", c["intermediate_size"]), ("max_position_embeddings", c["max_position_embeddings"]),
         ("type_vocab_size", 2), ("vocab_size", c["vocab_size"]), ("layer_norm_eps", c["layer_norm_eps"]),
         ("initializer_range", 0.02), ("pooler_type", c["pooler_type"]), ("enable_fp16", "False")])
    with open(os.path.join(OUT, out_name), "w") as f:
        json.dump(shipped, f, indent=4)
        f.write("\n")


def hf_fourier_bart():
    w, config = golden("fourier_bart_l2_r03")
    d = os.path.join(OUT, "hf_fourier_bart")
    os.makedirs(d, exist_ok=True)
    out = {k: f32(a) for k, a in w.items()}
    out["lm_head.weight"] = f32(w["model.shared.weight"])
    safetensors_io.write(os.path.join(d, "model.safetensors"), out, {"format": "pt"})
    write_config(d, {k: v for k, v in config.items() if not k.startswith("dct_")}, "bart",
                 "BartForConditionalGeneration")


SEQ2SEQ = {"bart": seq2seq_bart, "fourier-bart": seq2seq_fourier_bart}


def oracle_case(out_name, arch, cfg, weights):
    """The float64 oracle of `arch` on one short padded batch, inputs drawn from out_name (which
    must name the case): bert family "n7_pad", 2 x 7 ids with rows of 7 and 4 tokens (token
    types where the model has two); encoder-decoder "n7_t5_pad", the same source (the attention
    mask only where the model takes one: fourier-bart pads by id) and 2 x 5 decoder ids.
    Returns ({input name: int array}, {output name: float64 array})."""
    family = SEQ2SEQ.get(arch)
    case = "n7_t5_pad" if family else "n7_pad"
    if "." + case + "." not in out_name:
        raise ValueError("%s: %s oracle io files are case %s" % (out_name, arch, case))
    if family:
        sp = family.spec(cfg)
        ids, mask = seq2seq_common.source(sp, out_name, case, 2, 7, [7, 4])
        dec = seq2seq_common.target(sp, out_name, case, 2, 5)
        with_mask = not sp["fairseq_padding"]
        out = seq2seq_oracle.Seq2Seq(sp, weights).forward(ids, mask if with_mask else None, dec)
        inputs = {"input_ids": ids, "decoder_input_ids": dec}
        if with_mask:
            inputs["attention_mask"] = mask
        return inputs, out
    with_types = cfg["type_vocab_size"] > 1
    ids, mask, types = bert.case_inputs(out_name, case, cfg, 2, 7, [7, 4], with_types)
    out = bert.forward(arch, cfg, weights, ids, mask, types)
    bert.check_float32(arch, cfg, weights, ids, mask, types, out)
    inputs = {"input_ids": ids, "attention_mask": mask}
    if with_types:
        inputs["token_type_ids"] = types
    return inputs, out


def oracle_io(out_name, golden_name, arch, filters=None, zeroed=(), generator="make_hf_checkpoints.py"):
    """The PyTorch oracle of `arch` on golden_name's weights (those in `zeroed` as zeros, as the
    importer writes them) under its config plus `filters`, for a converted model no golden
    holds: the inputs and outputs (float64 rounded once to f32; no debug intermediates) of
    oracle_case's batch and the config it ran ("longrun.config"), written to
    checkpoints/<out_name>."""
    torch.set_num_threads(1)  # deterministic reductions in the oracle (as make_model_goldens.py)
    w, config = golden(golden_name)
    unknown = set(zeroed) - set(w)
    if unknown:
        raise ValueError("%s has no %s" % (golden_name, sorted(unknown)))
    cfg = dict(config, **(filters or {}))
    weights = {k: np.zeros_like(a) if k in zeroed else a for k, a in w.items()}
    inputs, out = oracle_case(out_name, arch, cfg, weights)
    i64 = lambda a: Tensor.from_numpy(np.asarray(a, dtype=np.int64), "I64")  # noqa: E731
    tensors = {"input/" + k: i64(v) for k, v in inputs.items()}
    tensors.update(("expected/" + k, f32(v)) for k, v in out.items() if not k.startswith("debug."))
    meta = {"longrun.arch": arch, "longrun.config": json.dumps(cfg, sort_keys=True, separators=(",", ":")),
            "longrun.generator": "tests/oracles/" + generator}
    safetensors_io.write(os.path.join(OUT, out_name), tensors, meta)


def main():
    hf_bert()
    hf_roberta()
    hf_bart()
    fairseq_transformer()
    fastformer_official("fastformer_d64", "fastformer_official.pt")
    fastformer_official("fastformer_d64_shared", "fastformer_shared_official.pt")
    fastformer_json("fastformer_d64", "fastformer_d64.fastformer.json")
    hf_fourier_bart()
    oracle_io("hf_bert.fourier_l1_r05.n7_pad.io.safetensors", "bert_tiny", "fourier-bert",
              {"filter_layers": [1], "filter_ratio": 0.5})
    fairseq_bart("bart_tiny", "fairseq_bart.pt", "bart_base", {})
    fairseq_bart("fourier_bart_l2_r03", "fairseq_fourier_bart.pt", "bart_base_dct",
                 {"dct_layers": "[2]", "dct_percentage": 0.3, "dct_lowpass": True, "global_residual": True})
    # fairseq BART has no final_logits_bias: the converted models are the goldens with zeros there.
    for checkpoint, golden_name, arch in (("fairseq_bart", "bart_tiny", "bart"),
                                          ("fairseq_fourier_bart", "fourier_bart_l2_r03", "fourier-bart")):
        oracle_io(checkpoint + ".n7_t5_pad.io.safetensors", golden_name, arch, zeroed=("final_logits_bias",))
    print("wrote", ", ".join(os.path.join(OUT, n) for n in ("hf_bert", "hf_roberta", "hf_bart", "hf_fourier_bart")))


if __name__ == "__main__":
    main()
