#!/usr/bin/env python3
"""How much the peer ratios of repeated `longrun-bench ops --paired --json` runs spread.

usage: ratio_spread.py FILE.jsonl [FILE.jsonl ...]

One Markdown row per (op, shape, threads, peer) seen in every file: across the runs, the
median (min-max) and spread (max / min) of the ratio of the two medians (ratio: ours timed
first, then the peer) and of the round-by-round ratio (paired_ratio). Last, the median
spread of each over all rows and in how many rows the paired one spread less: what says
whether pairing made the runs agree on a machine (tools/bench/README.md, Paired rounds).
Plain Python 3, standard library only (a dev tool, never a runtime dependency).
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from bench_results import records  # noqa: E402  (tools/bench/bench_results.py)


def summary(values):
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})", max(values) / min(values)


def main():
    paths = sys.argv[1:]
    if not paths or paths[0] in ("-h", "--help"):
        sys.exit(__doc__)
    rows = {}  # (op, shape, threads, peer) -> {"ratio": [...], "paired_ratio": [...]}
    for path in paths:
        for line_no, r in records(path):
            if "peer" not in r or "probe" in r:
                continue
            if "paired_ratio" not in r:
                sys.exit(f"{path}:{line_no}: no paired_ratio (run ops --paired)")
            cell = rows.setdefault((r["op"], r["shape"], r["threads"], r["peer"]),
                                   {"ratio": [], "paired_ratio": []})
            cell["ratio"].append(r["ratio"])
            cell["paired_ratio"].append(r["paired_ratio"])
    print("| op | shape | threads | peer | ratio | spread | paired | spread |")
    print("|---|---|---|---|---|---|---|---|")
    spreads, paired_spreads = [], []
    for (op, shape, threads, peer), cell in rows.items():
        if len(cell["ratio"]) != len(paths) or min(cell["ratio"] + cell["paired_ratio"]) <= 0:
            continue
        text, spread = summary(cell["ratio"])
        paired_text, paired_spread = summary(cell["paired_ratio"])
        spreads.append(spread)
        paired_spreads.append(paired_spread)
        print(f"| {op} | {shape.replace('*', '·')} | {threads} | {peer} | {text} | {spread:.2f} | "
              f"{paired_text} | {paired_spread:.2f} |")
    if spreads:
        tighter = sum(p < s for s, p in zip(spreads, paired_spreads))
        print(f"\n{len(spreads)} rows over {len(paths)} runs: median spread {statistics.median(spreads):.2f} "
              f"(ratio), {statistics.median(paired_spreads):.2f} (paired); paired spread less in {tighter}.")


if __name__ == "__main__":
    main()
