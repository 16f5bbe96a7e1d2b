#!/usr/bin/env python3
"""Compares two longrun-bench results files row by row: A's median against B's, and B / A.

usage: compare.py A.jsonl B.jsonl [--markdown] [--all]

Rows are matched on what identifies a measurement:
  op     op, shape, engine (backend/isa), threads     (and each peer of the row, as its own row)
  model  model, shape (N, batch), engine, threads     (and a non-preset peer such as pytorch-cpu)
  pool   gap_us, threads, chunks, chunk_us
  probe  probe, when (the machine check: its median, in its own unit)
A key seen several times in one file (runs appended to one file) takes the median of its
medians. B / A > 1: B took longer (or, for probes, measured more). Only rows in both files are
printed unless --all. Each file's provenance (commit, CPU, compiler, build type, date) is
printed first. Standard library only.
"""
import argparse
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_results import (PROVENANCE, engine, failed, fmt_ms, kind, markdown_table, median,  # noqa: E402
                           provenance_summary, records)


def measurements(path):
    """(key -> [median values], key -> failure text, order of keys, rows)."""
    values, failures, order, rows = {}, {}, [], []
    models = set()
    loaded = list(records(path))
    for _, r in loaded:
        if kind(r) == "model":
            models.add(r["model"])

    def add(key, v, fail=None):
        if key not in values:
            values[key] = []
            order.append(key)
        if fail:
            failures[key] = fail
        elif v is not None:
            values[key].append(v)

    for _, r in loaded:
        rows.append(r)
        k, threads = kind(r), r.get("threads")
        if k == "op":
            add(("op", r["op"], r["shape"], engine(r), threads), r.get("median_ms"), failed(r))
            if "peer" in r and not failed(r):
                add(("op", r["op"], r["shape"], r["peer"], threads), r.get("peer_median_ms"))
        elif k == "model":
            add(("model", r["model"], r["shape"], engine(r), threads), r.get("median_ms"), failed(r))
            if "peer" in r and r["peer"] not in models and not failed(r):
                add(("model", r["model"], r["shape"], r["peer"], threads), r.get("peer_median_ms"))
        elif k == "pool":
            shape = f"gap {r['gap_us']} us, {r['chunks']} x {r['chunk_us']} us"
            add(("pool", "pool", shape, "-", threads), r.get("median_ms"))
        elif k == "probe":
            add(("probe", r["probe"], r["when"], r.get("unit", ""), threads), r.get("median"))
    return values, failures, order, rows


def cell(values, failures, key):
    if key in failures and not values.get(key):
        return failures[key].split(":")[0]  # "skipped" / "error"
    return fmt_ms(median(values.get(key, [])))


def main():
    ap = argparse.ArgumentParser(
        description="Compares two `longrun-bench --json` results files: the median of each matching row "
        "in A and in B and the ratio B / A (> 1: B took longer).",
        epilog="Rows match on command/op/model, shape (N, batch), engine (backend/isa or peer) and threads.")
    ap.add_argument("a", metavar="A.jsonl")
    ap.add_argument("b", metavar="B.jsonl")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--all", action="store_true", help="also print rows found in only one file")
    args = ap.parse_args()

    va, fa, order_a, rows_a = measurements(args.a)
    vb, fb, order_b, rows_b = measurements(args.b)
    for name, path, rows in (("A", args.a, rows_a), ("B", args.b, rows_b)):
        p = provenance_summary(rows)
        facts = ", ".join(f"{f} {' | '.join(str(v) for v in p[f])}" for f in PROVENANCE if p[f])
        print(f"{name}: {path} ({len(rows)} lines; {facts or 'no provenance fields'})")
    print()

    keys = [k for k in order_a if k in vb or args.all] + [k for k in order_b if k not in va and args.all]
    head = ["kind", "name", "shape", "engine", "threads", "A", "B", "B/A"]
    table = []
    for key in keys:
        ma, mb = median(va.get(key, [])), median(vb.get(key, []))
        ratio = f"{mb / ma:.2f}" if ma and mb is not None else "-"
        kind_, name, shape, eng, threads = key
        if kind_ == "probe":  # shape = when, engine = unit
            shape, eng = f"when {shape}", f"({eng})"
        table.append([kind_, name, shape, eng, str(threads if threads is not None else "-"),
                      cell(va, fa, key), cell(vb, fb, key), ratio])
    if not table:
        print("no rows in common")
        return 1
    if args.markdown:
        print("\n".join(markdown_table(head, [[c.replace("*", "·") for c in row] for row in table])))
    else:
        widths = [max(len(r[i]) for r in table + [head]) for i in range(len(head))]
        right = {4, 5, 6, 7}
        for row in [head] + table:
            print("  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in
                            enumerate(zip(row, widths))).rstrip())
    print("\nA, B: median ms (probes: their unit); B/A > 1: B took longer.")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    sys.exit(main())
