#!/usr/bin/python3
"""Writes the op conformance goldens: tests/golden/ops/<op>.safetensors, one file per op in
ops/include/longrun/ops/op_list.inc.

Each file holds tensors "<case>/in<j>" and "<case>/out0" and the metadata key
"longrun.golden": a JSON list of {"name", "op", "attrs", "inputs"} (attrs use the field
names of ops/include/longrun/ops/attrs.h). Expected outputs come from numpy/scipy/torch in
float64 -- an oracle independent of the C++ kernels -- rounded once to the output dtype.

Run with Debian's python (torch 1.13, numpy, scipy):
    /usr/bin/python3 tests/oracles/make_op_goldens.py            # (re)write the goldens
    /usr/bin/python3 tests/oracles/make_op_goldens.py --check    # exit 1 if they differ
    /usr/bin/python3 tests/oracles/make_op_goldens.py --op dct   # only some ops
Everything is seeded; two runs produce byte-identical files. Test-only code: nothing in the
runtime imports or runs it.
"""

import argparse
import json
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import safetensors_io  # noqa: E402
from op_golden_layout import GENERATORS as LAYOUT  # noqa: E402
from op_golden_math import GENERATORS as MATH  # noqa: E402
from op_golden_spectral import GENERATORS as SPECTRAL  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
OP_LIST = os.path.join(REPO, "ops", "include", "longrun", "ops", "op_list.inc")
GOLDEN_DIR = os.path.join(REPO, "tests", "golden", "ops")

GENERATORS = {}
for table in (MATH, SPECTRAL, LAYOUT):
    GENERATORS.update(table)


def ops_in_list():
    ops = []
    with open(OP_LIST) as f:
        for line in f:
            m = re.match(r"\s*LR_OP\(\s*(\w+)\s*,", line)
            if m:
                ops.append(m.group(1))
    return ops


def build(op):
    """Returns the file bytes for one op."""
    torch.manual_seed(0)
    torch.set_num_threads(1)  # deterministic reductions in the oracle
    g = GENERATORS[op]()
    if not g.cases:
        raise RuntimeError("%s: no cases" % op)
    meta = {
        "longrun.golden": json.dumps(g.cases, sort_keys=True, separators=(",", ":"), allow_nan=False),
        "longrun.generator": "tests/oracles/make_op_goldens.py",
    }
    return safetensors_io.serialize(g.tensors, meta), len(g.cases)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="regenerate into a temp dir and compare")
    ap.add_argument("--out", default=GOLDEN_DIR, help="output folder (default tests/golden/ops)")
    ap.add_argument("--op", action="append", help="only this op (repeatable)")
    args = ap.parse_args()

    listed = ops_in_list()
    missing = [op for op in listed if op not in GENERATORS]
    extra = [op for op in GENERATORS if op not in listed]
    if missing or extra:
        print("op list mismatch: no generator for %s; generator for unlisted %s" % (missing, extra))
        return 1
    ops = args.op or listed
    for op in ops:
        if op not in listed:
            print("unknown op %r" % op)
            return 1
    np.seterr(all="ignore")  # inf/nan cases are intended

    if args.check:
        bad = 0
        with tempfile.TemporaryDirectory() as tmp:
            for op in ops:
                data, _ = build(op)
                path = os.path.join(GOLDEN_DIR, op + ".safetensors")
                with open(os.path.join(tmp, op + ".safetensors"), "wb") as f:
                    f.write(data)
                old = open(path, "rb").read() if os.path.exists(path) else None
                if old != data:
                    print("DIFFERS: %s" % os.path.relpath(path, REPO))
                    bad += 1
        if not args.op:
            known = {op + ".safetensors" for op in listed}
            for name in sorted(os.listdir(GOLDEN_DIR)) if os.path.isdir(GOLDEN_DIR) else []:
                if name.endswith(".safetensors") and name not in known:
                    print("STALE: tests/golden/ops/%s (op not in op_list.inc)" % name)
                    bad += 1
        print("check: %d of %d golden files differ" % (bad, len(ops)) if bad else "check: %d files identical" % len(ops))
        return 1 if bad else 0

    os.makedirs(args.out, exist_ok=True)
    total = 0
    for op in ops:
        data, n = build(op)
        path = os.path.join(args.out, op + ".safetensors")
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        total += len(data)
        print("%-18s %3d cases %8d bytes" % (op, n, len(data)))
    print("total %d bytes" % total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
