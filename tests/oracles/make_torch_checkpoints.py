"""Writes the torch.save fixtures of the checkpoint importer (tests/golden/checkpoints/).

  /usr/bin/python3 tests/oracles/make_torch_checkpoints.py      # Debian torch 1.13

lra_vanilla.official.pt      the lra_vanilla golden model (tests/golden/models) saved the way the
                             official LUMIA-Group/FourierTransformer LRA code does:
                             torch.save({"model_state_dict": state_dict}) in the zip format, with
                             storages tagged "cuda:0" (the training device). To exercise the
                             reader's view handling, W_q/W_k/W_v of each layer are slices of one
                             shared storage (storage_offset > 0) and every mlpblock weight is a
                             transposed (column-major, non-contiguous) view; values are unchanged.
lra_vanilla.legacy.pt        the same in the legacy format (_use_new_zipfile_serialization=False),
                             names with a DataParallel "module." prefix.
lra_vanilla.config.json      the model's config as the official lra_config dict (training-only
                             keys included, which the importer accepts and ignores).
fourier_lra_l12_r05.official.pt / fourier_lra_l12_r05.config.json
                             the fourier_lra_l12_r05 golden (filters before layers 1 and 2) as the
                             official code saves a DataParallel model: {"model_state_dict":
                             {"module." + name: tensor}}, zip, "cuda:0" tags; its lra_config as above.
fourier_lra_l12_r05.model_config.json
                             the same model's config as the official run_tasks.py builds it for
                             --model dct-0.5 --layers 1,2 (lra_config "model" dict, the
                             extra_attn_config entry, layers, mixed_precision, attn_type, and
                             max_seq_len rounded up to a power of two): the importer's official form.
fourier_lra_dual_l0_r02.official.pt / fourier_lra_dual_l0_r02.model_config.json
                             the Retrieval dual-encoder golden (ModelForSCDual) saved as above
                             (no module. prefix) and its run_tasks.py config, which has no key for
                             the dual head (the importer reads it from the classifier's width).
mixed.pt / mixed.legacy.pt   small tensors of every storage dtype (f64/f32/f16/bf16/i64/i32/i16/i8/
mixed.p4.pt                  u8/bool), a bare nn.Parameter (_rebuild_parameter), a 0-dim and an
                             empty tensor, nested dicts and lists; zip, legacy and pickle protocol 4.
mixed.expected.safetensors   the same tensors, contiguous, for bitwise comparison (bool as U8; f64,
                             i16, i8 as raw bytes in U8 tensors named "<name>@<dtype>").
namespace.pt                 a fairseq-like {"args": argparse.Namespace(...), "model": {...}}.
"""

import argparse
import collections
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "golden", "checkpoints")


def golden_state_dict(name="lra_vanilla"):
    tensors, meta = safetensors_io.read(os.path.join(ROOT, "tests", "golden", "models", name + ".safetensors"))
    sd = collections.OrderedDict()
    for name, t in tensors.items():
        assert t.code == "F32"
        sd[name] = torch.from_numpy(t.to_numpy().copy())
    return sd, json.loads(meta["longrun.config"])


def with_views(sd):
    """Same values; q/k/v share one storage per layer, mlpblock weights are transposed views."""
    out = collections.OrderedDict()
    for name, t in sd.items():
        out[name] = t
    for prefix in sorted({n.rsplit(".mha.", 1)[0] for n in sd if ".mha.W_q." in n}):
        for part in ("weight", "bias"):
            names = ["%s.mha.W_%s.%s" % (prefix, x, part) for x in "qkv"]
            fused = torch.cat([sd[n] for n in names], 0)
            rows = sd[names[0]].shape[0]
            for i, n in enumerate(names):
                out[n] = fused[i * rows:(i + 1) * rows]
    for name, t in sd.items():
        if ".mlpblock." in name and name.endswith(".weight"):
            out[name] = t.t().contiguous().t()
            assert not out[name].is_contiguous()
    for name in sd:
        assert torch.equal(out[name], sd[name])
    out._metadata = collections.OrderedDict([("", {"version": 1})])
    return out


def save_as_device(obj, path, device, **kw):
    """torch.save, with every storage's location tag reported as `device`."""
    real = torch.serialization.location_tag
    torch.serialization.location_tag = lambda storage: device
    try:
        torch.save(obj, path, **kw)
    finally:
        torch.serialization.location_tag = real


def official_config(cfg):
    lra = dict(cfg)
    lra.update({"dropout_prob": 0.1, "attention_dropout": 0.1, "attention_grad_checkpointing": False,
                "mixed_precision": True, "learn_pos_emb": True, "tied_weights": False, "attn_type": "softmax",
                "embedding_dim": cfg["transformer_dim"]})
    return lra


def write_official_config(cfg, name):
    with open(os.path.join(OUT, name), "w") as f:
        json.dump(official_config(cfg), f, indent=1, sort_keys=True)
        f.write("\n")


def run_tasks_model_config(cfg):
    """The model_config of the official run_tasks.py, in its order: lra_config.py's "model"
    dict, extra_attn_config[--model], layers (--layers), mixed_precision, attn_type (--model),
    then max_seq_len rounded up to a power of two."""
    c = collections.OrderedDict(
        [("learn_pos_emb", True), ("tied_weights", False), ("embedding_dim", cfg["transformer_dim"]),
         ("transformer_dim", cfg["transformer_dim"]), ("transformer_hidden_dim", cfg["transformer_hidden_dim"]),
         ("head_dim", cfg["head_dim"]), ("num_head", cfg["num_head"]), ("num_layers", cfg["num_layers"]),
         ("vocab_size", cfg["vocab_size"]), ("max_seq_len", cfg["max_seq_len"]), ("dropout_prob", 0.1),
         ("attention_dropout", 0.1), ("pooling_mode", cfg["pooling_mode"]), ("num_classes", cfg["num_classes"])])
    if cfg["filter_layers"]:
        attn_type = "dct-%g" % cfg["filter_ratio"]
        c.update([("attention_grad_checkpointing", False), ("dct_percentage", cfg["filter_ratio"])])
        c["layers"] = list(cfg["filter_layers"])
    else:
        attn_type = "softmax"
        c["attention_grad_checkpointing"] = True
        c["layers"] = [0]
    c["mixed_precision"] = True
    c["attn_type"] = attn_type
    c["max_seq_len"] = int(2 ** math.ceil(math.log2(c["max_seq_len"])))
    return c


def write_run_tasks_config(cfg, name):
    with open(os.path.join(OUT, name), "w") as f:
        json.dump(run_tasks_model_config(cfg), f, indent=4)  # as run_tasks.py prints it
        f.write("\n")


def fourier_lra_dual_official():
    sd, cfg = golden_state_dict("fourier_lra_dual_l0_r02")
    path = os.path.join(OUT, "fourier_lra_dual_l0_r02.official.pt")
    save_as_device({"model_state_dict": sd}, path, "cuda:0")
    write_run_tasks_config(cfg, "fourier_lra_dual_l0_r02.model_config.json")


def fourier_lra_official():
    sd, cfg = golden_state_dict("fourier_lra_l12_r05")
    wrapped = collections.OrderedDict(("module." + k, v) for k, v in sd.items())
    path = os.path.join(OUT, "fourier_lra_l12_r05.official.pt")
    save_as_device({"model_state_dict": wrapped}, path, "cuda:0")
    write_official_config(cfg, "fourier_lra_l12_r05.config.json")
    write_run_tasks_config(cfg, "fourier_lra_l12_r05.model_config.json")
    back = torch.load(path, map_location="cpu", weights_only=True)["model_state_dict"]
    for k, v in sd.items():
        assert torch.equal(back["module." + k], v)


def mixed():
    torch.manual_seed(0)
    d = collections.OrderedDict()
    d["f64"] = torch.arange(6, dtype=torch.float64).reshape(2, 3) / 7
    d["f32"] = torch.randn(3, 4)
    d["f32_t"] = torch.randn(4, 3).t()  # non-contiguous
    d["f16"] = torch.randn(5).half()
    d["bf16"] = torch.randn(2, 2).bfloat16()
    d["i64"] = torch.arange(-3, 3, dtype=torch.int64)
    d["i32"] = torch.tensor([[1, -2], [3, -4]], dtype=torch.int32)
    d["i16"] = torch.tensor([-300, 300], dtype=torch.int16)
    d["i8"] = torch.tensor([-5, 7], dtype=torch.int8)
    d["u8"] = torch.tensor([0, 255, 7], dtype=torch.uint8)
    d["bool"] = torch.tensor([True, False, True])
    d["scalar"] = torch.tensor(2.5)
    d["empty"] = torch.zeros(0, 4)
    big = torch.randn(10)
    d["slice"] = big[3:7]  # storage_offset 3
    obj = {"weights": d, "param": torch.nn.Parameter(torch.randn(2, 3)), "list": [torch.ones(2), 3, "x"],
           "epoch": 7, "lr": 0.5, "name": "mixed"}
    expected = {}
    flat = dict(("weights." + k, v) for k, v in d.items())
    flat["param"] = obj["param"].detach()
    flat["list.0"] = obj["list"][0]
    for name, t in flat.items():
        t = t.contiguous()
        codes = {torch.float32: "F32", torch.float16: "F16", torch.int64: "I64", torch.int32: "I32",
                 torch.uint8: "U8", torch.bool: "U8"}
        if t.dtype == torch.bfloat16:
            expected[name] = safetensors_io.Tensor("BF16", t.shape, t.view(torch.int16).numpy().tobytes())
        elif t.dtype in codes:
            expected[name] = safetensors_io.Tensor(codes[t.dtype], t.shape, t.numpy().tobytes())
        else:
            raw = t.numpy().tobytes()
            expected["%s@%s" % (name, str(t.dtype).replace("torch.", ""))] = safetensors_io.Tensor(
                "U8", [len(raw)], raw)
    return obj, expected


def main():
    os.makedirs(OUT, exist_ok=True)
    sd, cfg = golden_state_dict()
    views = with_views(sd)
    save_as_device({"model_state_dict": views}, os.path.join(OUT, "lra_vanilla.official.pt"), "cuda:0")
    legacy = collections.OrderedDict(("module." + k, v) for k, v in views.items())
    save_as_device({"model_state_dict": legacy}, os.path.join(OUT, "lra_vanilla.legacy.pt"), "cuda:0",
                   _use_new_zipfile_serialization=False)
    write_official_config(cfg, "lra_vanilla.config.json")
    fourier_lra_official()
    fourier_lra_dual_official()

    obj, expected = mixed()
    torch.save(obj, os.path.join(OUT, "mixed.pt"))
    torch.save(obj, os.path.join(OUT, "mixed.legacy.pt"), _use_new_zipfile_serialization=False)
    torch.save(obj, os.path.join(OUT, "mixed.p4.pt"), pickle_protocol=4)
    safetensors_io.write(os.path.join(OUT, "mixed.expected.safetensors"), expected,
                         {"generator": "tests/oracles/make_torch_checkpoints.py"})

    ns = argparse.Namespace(arch="transformer", encoder_layers=2, dropout=0.1, share_all_embeddings=True)
    torch.save({"args": ns, "model": collections.OrderedDict([("encoder.version", torch.tensor([3.0]))]),
                "extra_state": {"epoch": 3}}, os.path.join(OUT, "namespace.pt"))

    # fairseq-like checkpoint with a fused attention projection, old layer_norms names, a
    # sinusoidal buffer, optimizer state and a training object from a module the importer does
    # not know (only --lenient reads it).
    import types
    meters = types.ModuleType("fairseq.logging.meters")

    class AverageMeter:
        def __init__(self):
            self.val = 1.5

    AverageMeter.__module__ = "fairseq.logging.meters"
    AverageMeter.__qualname__ = "AverageMeter"
    meters.AverageMeter = AverageMeter
    for parent in ("fairseq", "fairseq.logging"):
        sys.modules.setdefault(parent, types.ModuleType(parent))
    sys.modules["fairseq.logging.meters"] = meters
    torch.manual_seed(1)
    fused = torch.randn(12, 4)
    model = collections.OrderedDict([
        ("encoder.layers.0.self_attn.in_proj_weight", fused),
        ("encoder.layers.0.self_attn.in_proj_bias", torch.arange(12, dtype=torch.float32)),
        ("encoder.layers.0.layer_norms.0.weight", torch.ones(4)),
        ("encoder.layers.0.layer_norms.1.weight", torch.ones(4) * 2),
        ("encoder.embed_positions._float_tensor", torch.zeros(1)),
        ("encoder.version", torch.tensor([3.0]))])
    torch.save({"args": None, "cfg": {"model": {"arch": "transformer", "encoder_embed_dim": 4, "dropout": 0.1}},
                "model": model, "last_optimizer_state": {"state": {0: {"exp_avg": torch.zeros(3)}}},
                "extra_state": {"meters": AverageMeter()}}, os.path.join(OUT, "fairseq.pt"))

    # The oracle: torch's own safe loader accepts the model files (torch 1.13's lacks BINFLOAT,
    # which mixed*.pt use for "lr"), and every file loads back to the same values.
    for name in ("lra_vanilla.official.pt", "lra_vanilla.legacy.pt"):
        assert torch.load(os.path.join(OUT, name), map_location="cpu", weights_only=True) is not None
    for name in ("mixed.pt", "mixed.legacy.pt", "mixed.p4.pt"):
        loaded = torch.load(os.path.join(OUT, name))
        for k, v in obj["weights"].items():
            assert torch.equal(loaded["weights"][k], v), (name, k)
    back = torch.load(os.path.join(OUT, "lra_vanilla.legacy.pt"), map_location="cpu", weights_only=True)["model_state_dict"]
    for k, v in sd.items():
        assert torch.equal(back["module." + k], v)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
