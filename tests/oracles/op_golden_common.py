"""Shared helpers for the op golden generators (make_op_goldens.py and op_golden_*.py).

A golden case is: op name, case name, the op's attrs (every field of the attrs struct in
ops/include/longrun/ops/attrs.h, with the same names), input tensors and the expected output.
Expected outputs are computed in float64 with numpy/scipy/torch from the *exact* stored
input values (f16/bf16 inputs are widened exactly), then rounded once to the output dtype.
"""

import zlib

import numpy as np
import torch

from safetensors_io import Tensor

INT64_MAX = 2**63 - 1

_CODE = {"f32": "F32", "f16": "F16", "bf16": "BF16", "i32": "I32", "i64": "I64", "u8": "U8"}

# Default attrs, mirroring attrs.h (every field listed so the JSON is complete).
DEFAULT_ATTRS = {
    "matmul": dict(trans_a=False, trans_b=False, alpha=1.0, beta=1.0, has_bias=False, has_c=False,
                   activation="none"),
    "scale": dict(scale=1.0, shift=0.0),
    "cast": dict(to="f32"),
    "softmax": dict(axis=-1, scale=1.0, causal=False, has_mask=False),
    "layer_norm": dict(eps=1e-5),
    "dct": dict(axis=-1, keep=0),
    "idct": dict(axis=-1, n=0),
    "spectral_filter": dict(axis=-2, keep=1, method="automatic"),
    "topk_mask": dict(k=1, axis=-1, output_scores=False),
    "topk_indices": dict(k=1, axis=-1),
    "matmul_topk": dict(k=1, alpha=1.0, causal=False, has_key_mask=False, has_row_k=False),
    "cummax": dict(axis=-1, reverse=False, exclusive=False),
    "cumsum": dict(axis=-1, reverse=False, exclusive=False),
    "segment_max": dict(axis=-2, segment=1),
    "upsample_nearest": dict(axis=-2, size=1),
    "concat": dict(axis=0),
    "slice": dict(axis=0, start=0, end=INT64_MAX, step=1),
    "pad": dict(axis=0, before=0, after=0, value=0.0),
    "transpose": dict(rank=0, perm=[]),
    "reshape": dict(rank=0, dims=[]),
    "roll": dict(axis=0, shift=0),
    "attention": dict(scale=1.0, causal=False, has_key_padding_mask=False),
    "sparse_attention": dict(scale=1.0),
    "axial_attention": dict(scale=1.0, segment=1, causal=False, has_key_padding_mask=False,
                            has_direct_state=False),
}
# Fields that are C++ `float` (per op): their JSON value is the exact f32 value (as a double),
# or the string "inf", "-inf" or "nan".
FLOAT_FIELDS = {
    "matmul": {"alpha", "beta"}, "matmul_topk": {"alpha"}, "scale": {"scale", "shift"}, "softmax": {"scale"}, "layer_norm": {"eps"},
    "pad": {"value"}, "attention": {"scale"}, "sparse_attention": {"scale"}, "axial_attention": {"scale"},
}


def f32v(x):
    """The f32 value nearest x, as a Python float (what a C++ float attr will hold)."""
    return float(np.float32(x))


class T:
    """A tensor to store: dtype name (as attrs.h/dtype.h: f32 f16 bf16 i32 i64 u8) and values.

    For float dtypes `vals` holds values already representable in the dtype (as float32
    arrays for f32/bf16, float16 for f16)."""

    def __init__(self, dtype, vals):
        self.dtype = dtype
        self.vals = vals

    @property
    def shape(self):
        return tuple(self.vals.shape)

    def f64(self):
        """Exact values as float64 (ints too)."""
        return np.asarray(self.vals, dtype=np.float64)

    def tensor(self):
        if self.dtype == "bf16":
            bits = torch.from_numpy(np.array(self.vals, dtype=np.float32, order="C")).to(torch.bfloat16)
            raw = bits.view(torch.int16).numpy().view(np.uint16)
            return Tensor.from_numpy(raw, "BF16")
        return Tensor.from_numpy(self.vals, _CODE[self.dtype])


def f32(x):
    return T("f32", np.asarray(x, dtype=np.float64).astype(np.float32))


def f16(x):
    return T("f16", np.asarray(x, dtype=np.float64).astype(np.float32).astype(np.float16))


def bf16(x):
    """Rounds to bfloat16 with torch (round to nearest even) and keeps the exact values."""
    t = torch.from_numpy(np.asarray(x, dtype=np.float64).astype(np.float32)).to(torch.bfloat16)
    return T("bf16", t.to(torch.float32).numpy())


def i32(x):
    return T("i32", np.asarray(x, dtype=np.int64).astype(np.int32))


def i64(x):
    return T("i64", np.asarray(x, dtype=np.int64))


def u8(x):
    return T("u8", np.asarray(x, dtype=np.int64).astype(np.uint8))


def as_dtype(dtype, x):
    return {"f32": f32, "f16": f16, "bf16": bf16, "i32": i32, "i64": i64, "u8": u8}[dtype](x)


def rng_for(op, case):
    """A fixed, per-case random generator (seed = crc32 of 'op/case')."""
    return np.random.default_rng(zlib.crc32(("%s/%s" % (op, case)).encode()))


class OpGoldens:
    """Collects the cases of one op."""

    def __init__(self, op):
        self.op = op
        self.cases = []
        self.tensors = {}

    def rng(self, case):
        return rng_for(self.op, case)

    def add(self, name, inputs, out, **attrs):
        if any(c["name"] == name for c in self.cases):
            raise ValueError("%s: duplicate case %r" % (self.op, name))
        if not name.replace("_", "").isalnum() or name != name.lower():
            raise ValueError("%s: case name %r must be lower-case [a-z0-9_]" % (self.op, name))
        full = dict(DEFAULT_ATTRS.get(self.op, {}))
        for k, v in attrs.items():
            if k not in full:
                raise KeyError("%s: unknown attr %r" % (self.op, k))
            full[k] = v
        for k in full:
            if k in FLOAT_FIELDS.get(self.op, ()):
                full[k] = f32v(full[k])
                if not np.isfinite(full[k]):  # JSON has no inf/nan: spelled as strings
                    full[k] = "nan" if np.isnan(full[k]) else ("inf" if full[k] > 0 else "-inf")
            elif isinstance(full[k], (bool, np.bool_)):
                full[k] = bool(full[k])
            elif isinstance(full[k], (int, np.integer)):
                full[k] = int(full[k])
            elif isinstance(full[k], list):
                full[k] = [int(v) for v in full[k]]
            elif not isinstance(full[k], str):
                raise TypeError("%s: attr %r has unexpected type %s" % (self.op, k, type(full[k])))
        for j, t in enumerate(inputs):
            self.tensors["%s/in%d" % (name, j)] = t.tensor()
        self.tensors["%s/out0" % name] = out.tensor()
        self.cases.append({"name": name, "op": self.op, "attrs": full, "inputs": len(inputs)})


def randn(rng, shape, scale=1.0):
    return rng.standard_normal(shape) * scale


def quantized(rng, shape, levels=5):
    """Small integers (many ties)."""
    return rng.integers(0, levels, size=shape).astype(np.float64)


def move_axis_last(x, axis):
    return np.moveaxis(x, axis, -1)
