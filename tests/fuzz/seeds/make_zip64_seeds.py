#!/usr/bin/env python3
"""Writes the zip64 seeds of fuzz_torch_zip / fuzz_fairseq (tests/fuzz/seeds/zip64/): torch-like
archives with per-entry zip64 extra fields (as tests/loader/zip_archive_test.cpp builds them),
one honest, the others each with one lie the reader must refuse, so every zip64 and overlap
error path starts covered; and fairseq archives with an unknown global in args and in model.
Run from anywhere: python3 tests/fuzz/seeds/make_zip64_seeds.py"""
import os
import struct
import zlib

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zip64")
WIDE = 0xFFFFFFFF


def le(v, n):
    return v.to_bytes(n, "little")


def block(body, id_=1):
    return le(id_, 2) + le(len(body), 2) + body


def honest(i, size, local):
    return WIDE, WIDE, block(le(size, 8) + le(size, 8) + le(local, 8))


def make_zip64(members, central_for=honest):
    out, central = b"", b""
    for i, (name, data) in enumerate(members):
        local, name = len(out), name.encode()
        crc = zlib.crc32(data)
        lx = block(le(len(data), 8) + le(len(data), 8))
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 0, 0, 0, crc, WIDE, WIDE, len(name), len(lx))
        out += name + lx + data
        size32, local32, extra = central_for(i, len(data), local)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 0, 0, 0, crc, size32, size32,
                               len(name), len(extra), 0, 0, 0, 0, local32) + name + extra
    cd, n = len(out), len(members)
    out += central
    record = len(out)
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, len(central), cd)
    out += struct.pack("<IIQI", 0x07064B50, 0, record, 1)
    return out + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, WIDE, WIDE, 0)


def s(t):  # BINUNICODE
    return b"X" + le(len(t), 4) + t.encode()


def g(m, n):
    return b"c" + m.encode() + b"\n" + n.encode() + b"\n"


TENSOR = (g("torch._utils", "_rebuild_tensor_v2") + b"((" + s("storage") + g("torch", "FloatStorage") + s("0") +
          s("cpu") + b"K\x04tQK\x00(K\x04t(K\x01t\x89" + g("collections", "OrderedDict") + b")RtR")
ENUM = g("fairseq.dataclass.constants", "DatasetImpl") + b"(" + s("mmap") + b"tR"


def torch_zip(pickle, central_for=honest):
    return make_zip64([("archive/data.pkl", pickle), ("archive/data/0", bytes(16)), ("archive/version", b"3\n")],
                      central_for)


def fairseq(enum_in_model):
    model = g("collections", "OrderedDict") + b")R(" + s("w") + TENSOR + (s("x") + ENUM if enum_in_model else b"") + b"u"
    args = g("argparse", "Namespace") + b")\x81}(" + s("arch") + s("transformer") + s("dataset_impl") + ENUM + b"ub"
    return torch_zip(b"\x80\x02}(" + s("model") + model + s("args") + args + b"u.")


def lie(index, fn):  # central_for that lies about member `index` only
    return lambda i, size, local: fn(size, local) if i == index else honest(i, size, local)


STATE = b"\x80\x02" + g("collections", "OrderedDict") + b")R(" + s("w") + TENSOR + b"u."
seeds = {
    "honest.zip": torch_zip(STATE),
    "short_block.zip": torch_zip(STATE, lie(1, lambda n, o: (WIDE, WIDE, block(le(n, 8) + le(n, 8))))),
    "block_overruns.zip": torch_zip(STATE, lie(1, lambda n, o: (WIDE, WIDE, le(1, 2) + le(32, 2) + le(n, 8) * 2 + le(o, 8)))),
    "size_past_end.zip": torch_zip(STATE, lie(1, lambda n, o: (WIDE, WIDE, block(le(1 << 40, 8) * 2 + le(o, 8))))),
    "offset_outside.zip": torch_zip(STATE, lie(1, lambda n, o: (WIDE, WIDE, block(le(n, 8) * 2 + le(1 << 33, 8))))),
    "no_block.zip": torch_zip(STATE, lie(1, lambda n, o: (WIDE, o, b""))),
    "two_blocks.zip": torch_zip(STATE, lie(1, lambda n, o: (WIDE, WIDE, block(le(n, 8) * 2 + le(o, 8)) * 2))),
    "into_central_dir.zip": torch_zip(STATE, lie(2, lambda n, o: (WIDE, WIDE, block(le(n + 40, 8) * 2 + le(o, 8))))),
    "overlap.zip": torch_zip(STATE, lie(1, lambda n, o: (WIDE, WIDE, block(le(n + 60, 8) * 2 + le(o, 8))))),
    "fairseq_enum_in_args.zip": fairseq(False),
    "fairseq_enum_in_model.zip": fairseq(True),
}
os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
