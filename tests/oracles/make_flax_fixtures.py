#!/usr/bin/python3
"""Writes tests/golden/flax/: Flax msgpack checkpoints packed exactly as
flax.serialization.to_bytes does (flax/serialization.py), plus a JSON manifest per file that
lists every leaf (path, dtype, shape, hex bytes or scalar value) and the PyTorch layouts the
layout helpers must produce (computed here with numpy).

Flax itself is not installed here (and would pull in JAX), so the packing functions below
re-create flax.serialization's: _ndarray_to_bytes, _msgpack_ext_pack (ext 1 ndarray, 2 native
complex, 3 numpy scalar), _chunk / _np_convert_in_place and msgpack_serialize
(packb(..., default=_msgpack_ext_pack, strict_types=True)). The only deviation: MAX_CHUNK_SIZE
is a parameter (Flax: 2**30 bytes) so that a small fixture exercises the chunked form.
bfloat16 arrays (ml_dtypes in Flax) are held as uint16 bit patterns and named "bfloat16".

combiner_axial_causal.msgpack is the combiner_axial_causal golden model (tests/golden/models)
as the official JAX code would save it: the params tree of main.py's LanguageModel (the
native names split at "/" into nested modules) inside a flax.optim Optimizer state dict
{"target": params, "state": {"step", "param_states"}} (to_bytes(optimizer)); converting it
with the flax-combiner layout must give the golden tensors bit for bit
(tests/loader/convert_combiner_test.cpp). combiner_axial_causal.main_config.json is its config as
the TransformerConfig fields combiner/jax main.py sets, plus main.py's -model choice.

Needs the `msgpack` module (Debian python3-msgpack or `pip install --user msgpack`).
Run: /usr/bin/python3 tests/oracles/make_flax_fixtures.py
"""
import collections
import json
import os

import sys

import msgpack
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "flax")


class BF16:
    """A bfloat16 array stored as its uint16 bit patterns (what ml_dtypes' tobytes gives)."""

    def __init__(self, f32):
        bits = np.asarray(f32, dtype=np.float32).view(np.uint32)
        # round-to-nearest-even, as ml_dtypes does for finite values
        bits = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
        self.bits = (bits >> np.uint32(16)).astype(np.uint16)
        self.shape = self.bits.shape
        self.size = self.bits.size
        self.itemsize = 2
        self.name = "bfloat16"

    def reshape(self, *shape):
        r = BF16.__new__(BF16)
        r.bits = self.bits.reshape(*shape)
        r.shape, r.size, r.itemsize, r.name = r.bits.shape, r.bits.size, 2, "bfloat16"
        return r

    def __getitem__(self, sl):
        r = BF16.__new__(BF16)
        r.bits = self.bits[sl]
        r.shape, r.size, r.itemsize, r.name = r.bits.shape, r.bits.size, 2, "bfloat16"
        return r

    def tobytes(self, order="C"):
        return self.bits.tobytes(order)


def _dtype_name(arr):
    return arr.name if isinstance(arr, BF16) else arr.dtype.name


def _itemsize(arr):
    return arr.itemsize if isinstance(arr, BF16) else arr.dtype.itemsize


def _ndarray_to_bytes(arr):
    # flax: tpl = (arr.shape, arr.dtype.name, arr.tobytes('C')); msgpack.packb(tpl, use_bin_type=True)
    tpl = (arr.shape, _dtype_name(arr), arr.tobytes("C"))
    return msgpack.packb(tpl, use_bin_type=True)


def _msgpack_ext_pack(x):
    if isinstance(x, (np.ndarray, BF16)):
        return msgpack.ExtType(1, _ndarray_to_bytes(x))
    if isinstance(x, np.generic):
        return msgpack.ExtType(3, _ndarray_to_bytes(np.asarray(x)))
    if isinstance(x, complex):
        return msgpack.ExtType(2, msgpack.packb((x.real, x.imag)))
    return x


def _tuple_to_dict(tpl):
    return {str(i): x for i, x in enumerate(tpl)}


def _chunk(arr, max_chunk_size):
    chunksize = max(1, int(max_chunk_size / _itemsize(arr)))
    data = {"__msgpack_chunked_array__": True, "shape": _tuple_to_dict(arr.shape)}
    flatarr = arr.reshape(-1)
    chunks = [flatarr[i:i + chunksize] for i in range(0, flatarr.size, chunksize)]
    data["chunks"] = _tuple_to_dict(chunks)
    return data


def _np_convert_in_place(d, max_chunk_size):
    if isinstance(d, dict):
        for k, v in d.items():
            if isinstance(v, (np.ndarray, BF16)):
                if v.size * _itemsize(v) > max_chunk_size:
                    d[k] = _chunk(v, max_chunk_size)
            elif isinstance(v, dict):
                _np_convert_in_place(v, max_chunk_size)
    return d


def to_bytes(state_dict, max_chunk_size=2**30):
    _np_convert_in_place(state_dict, max_chunk_size)
    return msgpack.packb(state_dict, default=_msgpack_ext_pack, strict_types=True)


def manifest_leaves(tree, prefix=""):
    """The leaves the C++ reader must produce, in file order (chunked arrays reassembled)."""
    out = []
    for k, v in tree.items():
        path = f"{prefix}/{k}" if prefix else k
        if isinstance(v, dict):
            out += manifest_leaves(v, path)
        elif isinstance(v, (np.ndarray, BF16)):
            out.append({"path": path, "kind": "tensor", "dtype": _dtype_name(v), "shape": list(v.shape),
                        "hex": v.tobytes("C").hex(), "numpy_scalar": False})
        elif isinstance(v, np.generic):
            a = np.asarray(v)
            out.append({"path": path, "kind": "tensor", "dtype": a.dtype.name, "shape": [],
                        "hex": a.tobytes().hex(), "numpy_scalar": True})
        elif isinstance(v, bool):
            out.append({"path": path, "kind": "bool", "value": v})
        elif isinstance(v, int):
            out.append({"path": path, "kind": "int", "value": v})
        elif isinstance(v, float):
            out.append({"path": path, "kind": "float", "value": v})
        elif isinstance(v, str):
            out.append({"path": path, "kind": "string", "value": v})
        elif v is None:
            out.append({"path": path, "kind": "none"})
        else:
            raise TypeError(path)
    return out


def torch_layout(path, transform, arr, in_axes):
    """Expected output of the layout helper `transform`: flatten the first in_axes axes and
    the rest, then transpose (numpy, independently of the C++ code)."""
    rows = int(np.prod(arr.shape[:in_axes]))
    w = arr.reshape(rows, -1).T
    return {"path": path, "transform": transform, "shape": list(w.shape), "hex": np.ascontiguousarray(w).tobytes().hex()}


def write(name, tree, max_chunk_size=2**30, layouts=()):
    leaves = manifest_leaves(tree)  # before chunking mutates the tree
    data = to_bytes(tree, max_chunk_size)
    with open(os.path.join(OUT, name + ".msgpack"), "wb") as f:
        f.write(data)
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump({"file": name + ".msgpack", "bytes": len(data), "leaves": leaves, "layouts": list(layouts)},
                  f, indent=1)
        f.write("\n")
    print(f"{name}.msgpack: {len(data)} bytes, {len(leaves)} leaves")


def combiner_optimizer_tree(golden_name):
    """The golden model's weights as flax.optim's Optimizer state dict: target = the params
    tree, state = step + Adam moments (one leaf's worth: the importer must ignore them)."""
    tensors, _ = safetensors_io.read(os.path.join(OUT, "..", "models", golden_name + ".safetensors"))
    params = {}
    for name, t in tensors.items():
        node = params
        *modules, leaf = name.split("/")
        for m in modules:
            node = node.setdefault(m, {})
        node[leaf] = np.ascontiguousarray(t.to_numpy(), dtype=np.float32)
    emb = params["Embed_0"]["embedding"]
    state = {"step": 1200, "param_states": {"Embed_0": {"embedding": {
        "grad_ema": np.zeros_like(emb), "grad_sq_ema": np.full_like(emb, 1e-8)}}}}
    return {"target": params, "state": state}


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20261122)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    D, H, HD, R, FF, V = 8, 2, 4, 1, 16, 11

    # A Combiner-shaped tree (transformer_base.py: DenseGeneral q [emb, num_repeat, heads,
    # head_dim], k/v [emb, heads, head_dim], out [heads, head_dim, emb]) plus every leaf kind.
    q, k, v, o = f32(D, R, H, HD), f32(D, H, HD), f32(D, H, HD), f32(H, HD, D)
    dense = f32(D, FF)
    layer = {
        "query": {"kernel": q}, "key": {"kernel": k}, "value": {"kernel": v}, "out": {"kernel": o},
        "LayerNorm_0": {"scale": f32(D), "bias": f32(D)},
        "Dense_0": {"kernel": dense, "bias": f32(FF)},
        "head_bias": {"bias": f32(H, HD)},
    }
    tree = {
        "params": {
            "Embed_0": {"embedding": f32(V, D)},
            "autoreg_model": {"transformer_layer_0": layer, "LayerNorm_0": {"scale": f32(D), "bias": f32(D)}},
        },
        "dtypes": {
            "f64": rng.standard_normal((2, 3)),
            "f16": (np.arange(6, dtype=np.float16) / 8 - 0.25).reshape(3, 2),
            "bf16": BF16(np.array([1.0, -2.5, 0.15625, 3e38, 1e-3], dtype=np.float32)),
            "i8": np.array([-128, 0, 127], dtype=np.int8),
            "i16": np.array([-300, 300], dtype=np.int16),
            "i32": np.arange(-3, 3, dtype=np.int32).reshape(2, 3),
            "i64": np.array([-(2**40), 2**62], dtype=np.int64),
            "u8": np.array([0, 255], dtype=np.uint8),
            "u16": np.array([65535], dtype=np.uint16),
            "u32": np.array([4000000000], dtype=np.uint32),
            "u64": np.array([2**64 - 1], dtype=np.uint64),
            "bool": np.array([[True, False], [False, True]]),
            "empty": np.zeros((0, 3), dtype=np.float32),
            "rank0": np.array(2.5, dtype=np.float32),
        },
        "scalars": {
            "step": 1000, "neg": -5, "big": 2**63 + 1, "lr": 0.001, "flag": True, "off": False,
            "name": "combiner", "nothing": None,
            "count": np.int32(7), "loss": np.float32(0.5),
        },
        # a Python list as flax's _list_state_dict writes it
        "layers": {"0": {"w": f32(2)}, "1": {"w": f32(2)}},
        "empty_module": {},
    }
    lp = "params/autoreg_model/transformer_layer_0/"
    write("combiner_tree", tree, layouts=[
        torch_layout(lp + "query/kernel", "heads_in", q, 1),
        torch_layout(lp + "key/kernel", "heads_in", k, 1),
        torch_layout(lp + "value/kernel", "heads_in", v, 1),
        torch_layout(lp + "out/kernel", "heads_out", o, 2),
        torch_layout(lp + "Dense_0/kernel", "dense", dense, 1),
    ])

    # Chunked arrays: a 64-byte chunk limit (Flax: 2**30) splits [5, 7] f32 into 16 + 16 + 3
    # elements, a bf16 vector into 32-element chunks; small arrays stay plain.
    chunked = {
        "params": {
            "big": {"kernel": f32(5, 7)},
            "big_bf16": {"embedding": BF16(rng.standard_normal(40).astype(np.float32))},
            "small": {"bias": f32(3)},
        },
        "step": 3,
    }
    write("chunked", chunked, max_chunk_size=64)

    # The Hugging Face flax_model.msgpack naming (modeling_flax_bert: lists as "0", "1", ...).
    hf = {"bert": {"embeddings": {"word_embeddings": {"embedding": f32(V, D)},
                                  "LayerNorm": {"scale": f32(D), "bias": f32(D)}},
                   "encoder": {"layer": {"0": {"attention": {"self": {"query": {"kernel": dense[:, :D].copy(),
                                                                                "bias": f32(D)}}}}}}}}
    write("hf_bert_tiny", hf)

    tree = combiner_optimizer_tree("combiner_axial_causal")
    data = to_bytes(tree)
    with open(os.path.join(OUT, "combiner_axial_causal.msgpack"), "wb") as f:
        f.write(data)
    print(f"combiner_axial_causal.msgpack: {len(data)} bytes")

    main_config("combiner_axial_causal", "axial")


def main_config(golden_name, model):
    """<golden>.main_config.json: the golden's config as the fields combiner/jax main.py passes
    to TransformerConfig, in its order, plus its -model choice."""
    _, meta = safetensors_io.read(os.path.join(OUT, "..", "models", golden_name + ".safetensors"))
    c = json.loads(meta["longrun.config"])
    fields = [("model", model), ("vocab_size", c["vocab_size"]), ("output_vocab_size", c["vocab_size"]),
              ("num_heads", c["num_heads"]), ("num_layers", c["num_layers"]), ("max_len", c["max_len"]),
              ("emb_dim", c["emb_dim"]), ("qkv_dim", c["qkv_dim"]), ("mlp_dim", c["mlp_dim"]),
              ("max_seg_len", c["max_seg_len"]), ("dropout_rate", 0), ("attention_dropout_rate", 0.001),
              ("deterministic", True), ("seq_summary", "pool-max"), ("window_size", 3), ("share_param", False)]
    with open(os.path.join(OUT, golden_name + ".main_config.json"), "w") as f:
        json.dump(collections.OrderedDict(fields), f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
