#!/usr/bin/python3
"""Writes the whole-model goldens: tests/golden/models/<model>.safetensors (weights) and
tests/golden/models/<model>.<case>.io.safetensors (inputs and expected outputs).

One module per model family (FAMILIES below); each exposes ARCH, models() -> {model name:
(config, weights)} and cases(models) -> (model, case, inputs, expected) tuples. Adding a family
is one import and one list entry. A module serving several arches also exposes ARCHES (the
list) and arch_of(model name).

Model files are native longrun files: the weights under the canonical (official) names, F32,
and __metadata__ {"format": "pt", "longrun.format": "1", "longrun.arch": ARCH,
"longrun.config": compact sorted-key JSON}. IO files hold "input/<name>" (the model inputs, in
the dtype the case names) and "expected/<output>" (F32: the model outputs and the "debug.*"
intermediates that longrun builds with ModelOptions::debug_outputs), with metadata
"longrun.model" (the model file's name), "longrun.arch" and "longrun.case".

Expected values come from the family's PyTorch oracle in float64, rounded once to float32.

Run with Debian's python (torch 1.13, numpy, scipy):
    /usr/bin/python3 tests/oracles/make_model_goldens.py           # (re)write the goldens
    /usr/bin/python3 tests/oracles/make_model_goldens.py --check   # exit 1 if any file differs
    /usr/bin/python3 tests/oracles/make_model_goldens.py --family fourier-lra
Everything is seeded; two runs produce byte-identical files. Test-only code.
"""

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import bert  # noqa: E402
import combiner  # noqa: E402
import fastformer  # noqa: E402
import fourier_lra  # noqa: E402
import safetensors_io  # noqa: E402
import seq2seq_bart  # noqa: E402
import seq2seq_fourier_bart  # noqa: E402
import seq2seq_lasformer  # noqa: E402
import seq2seq_transformer  # noqa: E402
from safetensors_io import Tensor  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
GOLDEN_DIR = os.path.join(REPO, "tests", "golden", "models")
GENERATOR = "tests/oracles/make_model_goldens.py"

FAMILIES = [fourier_lra, bert, fastformer, combiner, seq2seq_bart, seq2seq_transformer, seq2seq_fourier_bart,
            seq2seq_lasformer]

_CODES = {"f32": ("F32", np.float32), "i32": ("I32", np.int32), "i64": ("I64", np.int64), "u8": ("U8", np.uint8)}


def _tensor(dtype, values):
    code, np_dtype = _CODES[dtype]
    return Tensor.from_numpy(np.asarray(values).astype(np_dtype), code)


def model_file(arch, config, weights):
    meta = {
        "format": "pt",
        "longrun.format": "1",
        "longrun.arch": arch,
        "longrun.config": json.dumps(config, sort_keys=True, separators=(",", ":"), allow_nan=False),
        "longrun.generator": GENERATOR,
    }
    return safetensors_io.serialize({k: _tensor("f32", v) for k, v in weights.items()}, meta)


def io_file(arch, model, case, inputs, expected):
    tensors = {}
    for name, (dtype, values) in inputs.items():
        tensors["input/" + name] = _tensor(dtype, values)
    for name, values in expected.items():
        tensors["expected/" + name] = _tensor("f32", values)
    meta = {
        "longrun.model": model + ".safetensors",
        "longrun.arch": arch,
        "longrun.case": case,
        "longrun.generator": GENERATOR,
    }
    return safetensors_io.serialize(tensors, meta)


def arches(fam):
    return getattr(fam, "ARCHES", [fam.ARCH])


def arch_of(fam, model):
    return fam.arch_of(model) if hasattr(fam, "arch_of") else fam.ARCH


def generation_file(arch, model, case, inputs, options, sequences, scores):
    """<model>.<case>.gen.safetensors: "input/<name>", "expected/sequences" (I64 [B, K, L], the
    finished hypotheses best first, -1 after the end), "expected/scores" (F32 [B, K]) and the
    options as "longrun.generate" JSON metadata."""
    tensors = {"expected/sequences": Tensor.from_numpy(np.asarray(sequences, dtype=np.int64), "I64"),
               "expected/scores": _tensor("f32", scores)}
    for name, (dtype, values) in inputs.items():
        tensors["input/" + name] = _tensor(dtype, values)
    meta = {
        "longrun.model": model + ".safetensors",
        "longrun.arch": arch,
        "longrun.case": case,
        "longrun.generate": json.dumps(options, sort_keys=True, separators=(",", ":")),
        "longrun.generator": GENERATOR,
    }
    return safetensors_io.serialize(tensors, meta)


def build(families):
    """Returns {file name: bytes} for the given family modules."""
    torch.set_num_threads(1)  # deterministic reductions in the oracle
    files = {}
    for fam in families:
        table = fam.models()
        for name, (config, weights) in table.items():
            files[name + ".safetensors"] = model_file(arch_of(fam, name), config, weights)
        for model, case, inputs, expected in fam.cases(table):
            fname = "%s.%s.io.safetensors" % (model, case)
            if fname in files:
                raise ValueError("duplicate case %s" % fname)
            files[fname] = io_file(arch_of(fam, model), model, case, inputs, expected)
        for model, case, inputs, options, seqs, scores in getattr(fam, "generation_cases", lambda t: [])(table):
            fname = "%s.%s.gen.safetensors" % (model, case)
            if fname in files:
                raise ValueError("duplicate case %s" % fname)
            files[fname] = generation_file(arch_of(fam, model), model, case, inputs, options, seqs, scores)
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="regenerate in memory and compare with the committed files")
    ap.add_argument("--out", default=GOLDEN_DIR, help="output folder (default tests/golden/models)")
    ap.add_argument("--family", action="append", help="only this arch (repeatable)")
    args = ap.parse_args()

    families = FAMILIES
    if args.family:
        known = [a for f in FAMILIES for a in arches(f)]
        unknown = set(args.family) - set(known)
        if unknown:
            print("unknown family %s; known: %s" % (sorted(unknown), known))
            return 1
        families = [f for f in FAMILIES if set(arches(f)) & set(args.family)]
    files = build(families)

    if args.check:
        bad = 0
        for name, data in sorted(files.items()):
            path = os.path.join(GOLDEN_DIR, name)
            old = open(path, "rb").read() if os.path.exists(path) else None
            if old != data:
                print("DIFFERS: tests/golden/models/%s" % name)
                bad += 1
        if not args.family and os.path.isdir(GOLDEN_DIR):
            for name in sorted(os.listdir(GOLDEN_DIR)):
                if name.endswith(".safetensors") and name not in files:
                    print("STALE: tests/golden/models/%s (no generator writes it)" % name)
                    bad += 1
        print("check: %d files differ" % bad if bad else "check: %d files identical" % len(files))
        return 1 if bad else 0

    os.makedirs(args.out, exist_ok=True)
    total = 0
    for name, data in sorted(files.items()):
        path = os.path.join(args.out, name)
        with tempfile.NamedTemporaryFile("wb", dir=args.out, delete=False) as f:
            f.write(data)
        os.replace(f.name, path)
        total += len(data)
        print("%-48s %8d bytes" % (name, len(data)))
    print("total %d bytes in %d files" % (total, len(files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
