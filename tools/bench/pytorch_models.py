#!/usr/bin/env python3
"""Times eager PyTorch on the same models, with the same weights, that `longrun-bench models`
benchmarks, so longrun's numbers (CPU now, CUDA later) have a framework baseline.

    build/dev/tools/longrun-bench models --n 512,1024 --save-models /tmp/models --json longrun.jsonl
    python3 tools/bench/pytorch_models.py /tmp/models/*.safetensors --n 512,1024 --threads 2 \\
        --longrun longrun.jsonl --json pytorch.jsonl

Each model file is a native longrun file (longrun.arch, longrun.config, canonical tensor
names). Its family's PyTorch oracle from tests/oracles/ (the modules listed in
make_model_goldens.FAMILIES, e.g. fourier_lra.py, fastformer.py) is built in float32 (or
--dtype) with those weights and run under torch.no_grad() on exactly longrun-bench's input_ids
[B, N] (the same 64-bit LCG and seeds, ids in [4, vocab - 1)) with an all-ones attention mask;
encoder-decoders (transformer, lasformer: seq2seq_oracle.Seq2Seq / seq2seq_lasformer.Lasformer,
weights cast to --dtype) also get longrun-bench's decoder_input_ids [B, N]. The oracles are
plain eager PyTorch written from the specification, not tuned implementations (Lasformer's
masks every unselected key of a dense attention, as the paper's own implementation did).
combiner files run tools/bench/combiner_torch.py instead (the bidirectional fixed / axial forms
written with block matmuls, checked against the per-query oracle by its --check): the oracle
walks every query in Python, a correctness reference and not a speed baseline; other
combiner forms are skipped.

Timing: W warm-up calls, then R timed calls (torch.cuda.synchronize() around each on CUDA);
median, min and max in milliseconds. Output: a table on stderr and one JSON object per line
(stdout, or --json FILE) with longrun-bench's keys: model, arch, shape, n, batch, backend
("pytorch-cpu" / "pytorch-cuda"), isa (null), threads, warmup, repeat, median_ms, min_ms,
max_ms, tokens_per_s, dtype, torch. With --longrun FILE (longrun-bench models --json output),
rows of the same model, N, batch and threads get peer ("longrun-<backend>"), peer_median_ms
and ratio = peer_median_ms / median_ms (> 1: PyTorch is faster).

Benchmark-only, like the op peers: never imported by longrun or its tests.
"""

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLES = os.path.join(HERE, "..", "..", "tests", "oracles")
sys.path.insert(0, ORACLES)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import combiner_torch  # noqa: E402
import make_model_goldens  # noqa: E402
import safetensors_io  # noqa: E402
import seq2seq_lasformer  # noqa: E402
import seq2seq_oracle  # noqa: E402

DECODER_SEED = 0x9E37  # models_command.cpp kDecoderSeed: decoder ids use seed + N + this


def bench_ids(count, vocab, seed):
    """models_command.cpp random_ids: a 64-bit LCG from 0x243F6A8885A308D3 + seed."""
    lo = 4 if vocab > 8 else 1
    span = max(1, vocab - 1 - lo)
    s = (0x243F6A8885A308D3 + seed) & 0xFFFFFFFFFFFFFFFF
    out = np.empty(count, dtype=np.int64)
    for i in range(count):
        s = (s * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        out[i] = lo + (s >> 33) % span
    return out


def seq2seq_runner(arch, cfg, weights, dtype, device):
    """(callable(ids, dec_ids)) for the encoder-decoder oracles, weights cast to dtype."""
    fam = oracle_for(arch)
    cls = seq2seq_lasformer.Lasformer if arch == "lasformer" else seq2seq_oracle.Seq2Seq
    m = cls(fam.spec(cfg), weights)
    m.w = {k: v.to(dtype=dtype, device=device) for k, v in m.w.items()}
    if hasattr(m, "sin"):
        m.sin = m.sin.to(dtype=dtype, device=device)

    def run(ids, dec_ids):
        memory, key_mask = m.encode(ids, None, {})
        return m.decode(dec_ids, memory, key_mask, {})

    return run


def oracle_for(arch):
    for fam in make_model_goldens.FAMILIES:
        if fam.ARCH == arch:
            return fam
    raise SystemExit("pytorch_models.py: no PyTorch oracle for arch '%s' (known: %s)"
                     % (arch, [f.ARCH for f in make_model_goldens.FAMILIES]))


def load(path):
    """(arch, config dict, weights name -> float32 ndarray) of a native model file."""
    tensors, meta = safetensors_io.read(path)
    if meta.get("longrun.format") != "1":
        raise SystemExit("%s: not a native longrun model file" % path)
    weights = {name: t.to_numpy().astype(np.float32) for name, t in tensors.items() if not name.startswith("__pad")}
    return meta["longrun.arch"], json.loads(meta["longrun.config"]), weights


def time_calls(fn, warmup, repeat, cuda):
    ms = []
    for i in range(warmup + repeat):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if cuda:
            torch.cuda.synchronize()
        if i >= warmup:
            ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms), min(ms), max(ms)


def longrun_rows(path):
    rows = {}
    if path:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if "median_ms" in r:
                    rows[(r["model"], r["n"], r["batch"], r["threads"])] = r
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+", help="native model files (longrun-bench models --save-models DIR)")
    ap.add_argument("--n", default="512,1024", help="sequence lengths (default 512,1024)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (CPU)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default="-", help="JSON lines file (default - = stdout)")
    ap.add_argument("--longrun", help="longrun-bench models --json output to compare with")
    args = ap.parse_args()
    if args.repeat < 5:
        ap.error("--repeat: at least 5")

    torch.set_num_threads(args.threads)
    cuda = args.device.startswith("cuda")
    if cuda:
        if not torch.cuda.is_available():
            raise SystemExit("pytorch_models.py: --device %s: torch.cuda.is_available() is False" % args.device)
        # The oracles create position and CLS tensors with factory calls: place them on the GPU.
        if not hasattr(torch, "set_default_device"):
            raise SystemExit("pytorch_models.py: --device cuda needs torch >= 2.0 (set_default_device)")
        torch.set_default_device(args.device)
    dtype = getattr(torch, args.dtype)
    ns = [int(x) for x in args.n.split(",")]
    peers = longrun_rows(args.longrun)
    out = sys.stdout if args.json == "-" else open(args.json, "w")
    backend = "pytorch-" + ("cuda" if cuda else "cpu")
    print("pytorch_models.py: torch %s, %s, %s, threads %d; median of %d runs after %d warm-up runs"
          % (torch.__version__, args.device, args.dtype, args.threads, args.repeat, args.warmup), file=sys.stderr)

    for path in args.models:
        arch, cfg, weights = load(path)
        name = os.path.basename(path).rsplit(".safetensors", 1)[0]
        if arch == "combiner" and (cfg["causal"] or cfg["attention"] not in ("fixed", "axial")):
            print("%s: skipped (no block-matmul PyTorch combiner for this form; the oracle is a per-query "
                  "reference, not a timing baseline)" % name, file=sys.stderr)
            continue
        seq2seq = "src_vocab_size" in cfg
        if seq2seq:
            run = seq2seq_runner(arch, cfg, weights, dtype, args.device)
        elif arch == "combiner":
            model = combiner_torch.CombinerLM(cfg, weights, dtype, args.device)
        else:
            model = oracle_for(arch).build_model(cfg, weights, dtype=dtype).to(args.device)
        vocab = int(cfg.get("vocab_size", cfg.get("src_vocab_size", 2)))
        for n in ns:
            def ids_for(v, seed):
                return torch.from_numpy(bench_ids(args.batch * n, v, seed).reshape(args.batch, n)).to(args.device)
            ids = ids_for(vocab, args.seed + n)
            if seq2seq:
                dec = ids_for(int(cfg.get("tgt_vocab_size", vocab)), args.seed + n + DECODER_SEED)
                call = lambda: run(ids, dec)  # noqa: E731
            else:
                mask = torch.ones((args.batch, n), dtype=dtype, device=args.device)
                call = lambda: model(ids, mask)  # noqa: E731
            with torch.no_grad():
                med, lo, hi = time_calls(call, args.warmup, args.repeat, cuda)
            row = {"model": name, "arch": arch, "shape": "B=%d N=%d" % (args.batch, n), "n": n, "batch": args.batch,
                   "backend": backend, "isa": None, "threads": args.threads, "warmup": args.warmup,
                   "repeat": args.repeat, "median_ms": med, "min_ms": lo, "max_ms": hi,
                   "tokens_per_s": args.batch * n / (med * 1e-3), "dtype": args.dtype, "torch": torch.__version__}
            peer = peers.get((name, n, args.batch, args.threads))
            if peer:
                row["peer"] = "longrun-" + peer["backend"]
                row["peer_median_ms"] = peer["median_ms"]
                row["ratio"] = peer["median_ms"] / med
            print("%-24s N=%-6d %10.3f ms %10.0f tokens/s%s" % (
                name, n, med, row["tokens_per_s"],
                "  longrun %.3f ms, ratio %.2f" % (row["peer_median_ms"], row["ratio"]) if peer else ""), file=sys.stderr)
            out.write(json.dumps(row, sort_keys=False) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
