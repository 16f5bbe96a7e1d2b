#!/usr/bin/env python3
"""Turns `longrun-bench ops|models --json FILE` output into Markdown tables (medians across runs).

usage: bench_table.py FILE.jsonl [FILE.jsonl ...] [--threads 1,2] [--paired]

One row per (op or model, shape); per thread count the median time and, for every peer or
baseline measured in the same run, its ratio (peer ms / longrun ms, > 1: longrun faster).
With several files (repeated runs of the same command), each cell is the median across the
runs: of the times, and of each peer's same-run ratios; the rate is the median run's.
--paired shows the round-by-round ratios of `ops --paired` (paired_ratio) instead.
The machine check lines of `ops --json` (records with "probe", machine_check.h) become a
line under the table: per probe and time (start, end), the median across the runs.
Plain Python 3, standard library only (a dev tool, never a runtime dependency).
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from bench_results import markdown_table, records  # noqa: E402  (tools/bench/bench_results.py)


def fmt_ms(ms):
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jsonl", nargs="+")
    ap.add_argument("--threads", default="1,2", help="thread counts to show (columns)")
    ap.add_argument("--paired", action="store_true",
                    help="ratios from paired_ratio (ops --paired) instead of ratio")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]

    probes = {}  # (when, probe) -> [median per file], in first-seen order
    units = {}
    runs = {}  # (name, shape) -> threads -> per file: {"ms", "rate", "peers": {peer: ratio}}
    order = []
    for run, path in enumerate(args.jsonl):
        for line_no, r in records(path):
            if "error" in r or "skipped" in r:
                continue
            if "probe" in r:
                probes.setdefault((r["when"], r["probe"]), []).append(r["median"])
                units[r["probe"]] = r["unit"]
                continue
            name = r.get("op") or r.get("model")
            key = (name, r["shape"])
            if key not in runs:
                runs[key] = {}
                order.append(key)
            per_run = runs[key].setdefault(r["threads"], {})
            cell = per_run.setdefault(run, {"ms": r["median_ms"], "peers": {}})
            if r.get("gflops"):
                cell["rate"] = f"{r['gflops']:.0f} GFLOP/s"
            elif r.get("tokens_per_s"):
                cell["rate"] = f"{r['tokens_per_s']:.0f} tok/s"
            elif r.get("gbps"):
                cell["rate"] = f"{r['gbps']:.1f} GB/s"
            if "peer" in r:
                if args.paired and "paired_ratio" not in r:
                    sys.exit(f"{path}:{line_no}: --paired: no paired_ratio (run ops --paired)")
                cell["peers"][r["peer"]] = r["paired_ratio" if args.paired else "ratio"]

    rows = {}  # (name, shape) -> threads -> the cell across runs
    for key, per_threads in runs.items():
        for t, per_run in per_threads.items():
            cells = sorted(per_run.values(), key=lambda c: c["ms"])
            mid = cells[(len(cells) - 1) // 2]
            peers = {}
            for p in mid["peers"]:
                ratios = [c["peers"][p] for c in cells if p in c["peers"]]
                peers[p] = statistics.median(ratios)
            rows.setdefault(key, {})[t] = {"ms": statistics.median(c["ms"] for c in cells),
                                           "rate": mid.get("rate", ""), "peers": peers}

    head = ["op / model", "shape"]
    for t in threads:
        head += [f"{t}t ms", f"{t}t rate", f"{t}t ratios"]
    body = []
    for key in order:
        out = [key[0], key[1].replace("*", "·")]
        for t in threads:
            c = rows[key].get(t)
            if c is None:
                out += ["", "", ""]
                continue
            ratios = ", ".join(f"{p} {v:.2f}" for p, v in c["peers"].items())
            out += [fmt_ms(c["ms"]), c.get("rate", ""), ratios]
        body.append(out)
    print("\n".join(markdown_table(head, body)))
    if probes:
        parts = {}
        for (when, probe), medians in probes.items():
            v = statistics.median(medians)
            parts.setdefault(when, []).append(f"{probe} {v:.3g} {units[probe]}")
        print()
        print("Machine check (`longrun-bench machine` probes, medians across the runs): " +
              "; ".join(f"{when}: " + ", ".join(p) for when, p in parts.items()) + ".")


if __name__ == "__main__":
    main()
