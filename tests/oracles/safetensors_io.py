"""A tiny, dependency-free (numpy only) safetensors writer and reader for test goldens.

Deterministic bytes: tensors are laid out in sorted-name order with no gaps, the header JSON
has sorted keys and compact separators and is padded with trailing spaces to a multiple of
8 bytes, metadata values are strings. No randomness, no timestamps.

Tensors are passed as (code, shape, raw little-endian bytes) so that BF16 (which numpy lacks)
travels as raw uint16 bits. `Tensor.from_numpy` builds that triple for numpy arrays.
"""

import json
import struct

import numpy as np

# safetensors dtype code -> (numpy dtype of the raw storage, bytes per element)
_CODES = {
    "F32": ("<f4", 4),
    "F16": ("<f2", 2),
    "BF16": ("<u2", 2),  # raw bf16 bits
    "I32": ("<i4", 4),
    "I64": ("<i8", 8),
    "U8": ("u1", 1),
    "BOOL": ("u1", 1),
}


class Tensor:
    """One tensor: safetensors dtype code, shape and its raw little-endian bytes."""

    def __init__(self, code, shape, data):
        if code not in _CODES:
            raise ValueError("unsupported dtype code %r" % code)
        shape = tuple(int(d) for d in shape)
        n = 1
        for d in shape:
            if d < 0:
                raise ValueError("negative dim in %r" % (shape,))
            n *= d
        if len(data) != n * _CODES[code][1]:
            raise ValueError("%s%r needs %d bytes, got %d" % (code, shape, n * _CODES[code][1], len(data)))
        self.code = code
        self.shape = shape
        self.data = bytes(data)

    @staticmethod
    def from_numpy(arr, code):
        storage, _ = _CODES[code]
        a = np.asarray(arr).astype(storage, copy=False)  # (not ascontiguousarray: it makes 0-d arrays 1-d)
        return Tensor(code, a.shape, a.tobytes(order="C"))

    def to_numpy(self):
        """The raw storage as numpy (BF16 comes back as uint16 bits)."""
        storage, _ = _CODES[self.code]
        return np.frombuffer(self.data, dtype=storage).reshape(self.shape).copy()


def serialize(tensors, metadata=None):
    """tensors: dict name -> Tensor; metadata: dict str -> str. Returns bytes."""
    header = {}
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError("metadata must map str to str")
        header["__metadata__"] = dict(metadata)
    offset = 0
    names = sorted(tensors)
    for name in names:
        if name == "__metadata__" or not name:
            raise ValueError("bad tensor name %r" % name)
        t = tensors[name]
        header[name] = {"dtype": t.code, "shape": list(t.shape), "data_offsets": [offset, offset + len(t.data)]}
        offset += len(t.data)
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("utf-8")
    text += b" " * ((-(8 + len(text))) % 8)
    out = [struct.pack("<Q", len(text)), text]
    out.extend(tensors[name].data for name in names)
    return b"".join(out)


def write(path, tensors, metadata=None):
    with open(path, "wb") as f:
        f.write(serialize(tensors, metadata))


def parse(buf):
    """Inverse of serialize (accepts any valid layout). Returns (tensors dict, metadata dict)."""
    if len(buf) < 8:
        raise ValueError("file too small")
    (n,) = struct.unpack("<Q", buf[:8])
    if 8 + n > len(buf):
        raise ValueError("header length out of range")
    header = json.loads(buf[8 : 8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {}) or {}
    base = 8 + n
    tensors = {}
    end = 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b, e = info["data_offsets"]
        if b != end or e < b:
            raise ValueError("tensor %r: offsets not contiguous" % name)
        end = e
        tensors[name] = Tensor(info["dtype"], info["shape"], buf[base + b : base + e])
    if base + end != len(buf):
        raise ValueError("trailing bytes or truncated data")
    return tensors, metadata


def read(path):
    with open(path, "rb") as f:
        return parse(f.read())
