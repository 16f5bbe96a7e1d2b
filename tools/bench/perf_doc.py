#!/usr/bin/env python3
"""Turns a longrun-bench results file into the performance page (docs/performance.md).

usage: perf_doc.py RESULTS.jsonl [RESULTS.jsonl ...] [-o docs/performance.md] [--summary]

The page says it is generated and by which command, lists the provenance the lines carry
(CPU, ISA, commit, compiler, build type, date, threads), then the tables:
  - models, per family (a baseline and the presets measured against it): each model at each
    N and thread count, median ms, tokens/s and ratio = baseline ms / model ms (> 1: faster);
  - eager PyTorch on the same weights (rows whose peer is pytorch-*), ratio = PyTorch ms /
    longrun ms, when present;
  - ops against their peers (ratio = peer ms / longrun ms), when present;
  - the machine check's probes and the pool's wake-up rows, when present;
  - the scaling sweep (`longrun-bench models --scale`, rows with "sweep": "scale"), when
    present: a table of time, tokens/s, peak RSS and arena per model and N, and an SVG plot
    of time and peak RSS against N (log-log) written beside the page (--scale-svg).
--summary prints only the compact table the top-level README shows: each model with its
baseline and eager PyTorch at each N and thread count, and the provenance in one line.
A key measured several times (several files, or runs appended to one) shows the median of its
medians. Standard library only.
"""
import argparse
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_results import engine, failed, fmt_ms, kind, median, provenance_summary, records  # noqa: E402
from bench_results import markdown_table as table  # noqa: E402


def fmt_ratio(v):
    return f"{v:.2f}" if v is not None else "-"


def fmt_rate(v):
    if v is None:
        return "-"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


class Cells:
    """Medians over repeated measurements of the same key, in first-seen order."""

    def __init__(self):
        self.values, self.order = {}, []

    def add(self, key, **fields):
        if key not in self.values:
            self.values[key] = {}
            self.order.append(key)
        for name, v in fields.items():
            if v is not None:
                self.values[key].setdefault(name, []).append(v)

    def get(self, key, name):
        return median(self.values.get(key, {}).get(name, []))

    def has(self, key):
        return key in self.values


def provenance_lines(rows):
    p = provenance_summary(rows)

    def one(field, label):
        vals = p[field]
        return f"- {label}: " + (", ".join(f"`{v}`" for v in vals) if vals else "not recorded")

    dates = sorted(p["date"])
    date = f"{dates[0]} to {dates[-1]}" if len(dates) > 1 else (dates[0] if dates else "not recorded")
    return [one("cpu", "CPU"), one("cpu_isa", "vector ISA (the cpu backend's best here)"),
            one("commit", "commit"), one("compiler", "compiler"), one("build_type", "build type"),
            f"- run started (UTC): {date}",
            "- threads: " + (", ".join(str(t) for t in sorted(p["threads"])) or "not recorded")]


def mib(v):
    return f"{v / 2**20:,.0f}" if v is not None else "-"


def scale_section(rows, svg_link):
    """The sweep's table: per model (baselines first, in the file's order) and N, its time,
    tokens/s, peak RSS against the bound, arena; skipped lengths with their reason."""
    if not rows:
        return []
    cells, failures, baseline_of, order = Cells(), {}, {}, []
    for r in rows:
        key = (r["model"], r["n"], r["threads"], engine(r))
        if r["model"] not in order:
            order.append(r["model"])
        if failed(r):
            failures[key] = failed(r)
            cells.add(key)
            continue
        if r.get("peer"):
            baseline_of[r["model"]] = r["peer"]
        cells.add(key, ms=r["median_ms"], ratio=r.get("ratio"), tps=r.get("tokens_per_s"), rss=r.get("peak_rss_bytes"),
                  bound=r.get("memory_bound_bytes"), arena=r.get("arena_bytes"), runs=r.get("repeat"))
    out = ["## Scaling with the sequence length", "",
           "`longrun-bench models --scale`: each D 512 family and its baseline at N = 4,096 to 65,536 "
           "(batch 1, f32, position tables of N rows), fewer timed runs at the longer lengths (runs "
           "column); vs baseline = baseline ms / model ms (> 1: the model is faster). Peak RSS is the process's resident high-water mark during the runs; `!` marks one "
           "above the bound weights + arena + inputs/outputs + 64 MiB. A length whose plan needs more "
           "memory than the machine has is skipped with the reason.", ""]
    if svg_link:
        out += [f"![time and peak RSS against N, log-log]({svg_link})", ""]
    head = ["model", "vs", "N", "threads", "runs", "median ms", "tokens/s", "vs baseline", "peak RSS MiB",
            "arena MiB"]
    body = []
    for k in sorted(cells.order, key=lambda k: (order.index(k[0]), k[2], k[3], k[1])):
        model, n, threads, eng = k
        base = baseline_of.get(model)
        is_base = model in baseline_of.values()
        vs = f"`{base}`" if base else "(baseline)" if is_base else "-"
        if k in failures:
            body.append([f"`{model}`", vs, n, threads, "-", failures[k], "", "", "", ""])
            continue
        rss, bound = cells.get(k, "rss"), cells.get(k, "bound")
        flag = "!" if rss is not None and bound is not None and rss > bound else ""
        body.append([f"`{model}`", vs, n, threads, cells.get(k, "runs"), fmt_ms(cells.get(k, "ms")),
                     fmt_rate(cells.get(k, "tps")), fmt_ratio(cells.get(k, "ratio")) if base else "baseline" if is_base else "-",
                     mib(rss) + flag, mib(cells.get(k, "arena"))])
    return out + table(head, body, right=(2, 3, 4, 5, 6, 7, 8, 9)) + [""]


def log_ticks(lo, hi):
    """Powers of ten (and 2x, 5x when few) spanning [lo, hi]."""
    import math
    ticks = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10 ** e
            if lo <= v <= hi:
                ticks.append(v)
    return ticks if len(ticks) <= 10 else [v for v in ticks if str(v).lstrip("0.").startswith("1")]


def scale_svg(rows):
    """A self-contained SVG: median ms (left panel) and peak RSS MiB (right panel) against N,
    both log-log, one line per model (and thread count)."""
    import math
    from xml.sax.saxutils import escape
    series = {}
    for r in rows:
        if failed(r):
            continue
        label = r["model"] + (f" ({r['threads']}t)" if len({x["threads"] for x in rows}) > 1 else "")
        s = series.setdefault(label, {})
        s.setdefault(r["n"], []).append((r["median_ms"], r.get("peak_rss_bytes")))
    if not series:
        return None
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
              "#7f7f7f", "#bcbd22"]
    panel_w, panel_h, left, top, gap, legend_h = 420, 300, 70, 40, 90, 18 * ((len(series) + 1) // 2) + 20
    width, height = left + 2 * panel_w + gap + 20, top + panel_h + 50 + legend_h
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    ns = sorted({n for s in series.values() for n in s})
    for panel, (title, pick) in enumerate((("median ms per forward pass", 0), ("peak RSS, MiB", 1))):
        pts = {label: [(n, median([v[pick] for v in s[n] if v[pick] is not None]))
                       for n in sorted(s)] for label, s in series.items()}
        pts = {k: [(n, y / (2**20 if pick else 1)) for n, y in v if y] for k, v in pts.items()}
        ys = [y for v in pts.values() for _, y in v]
        if not ys:
            continue
        x0 = left + panel * (panel_w + gap)
        xlo, xhi = ns[0] / 1.2, ns[-1] * 1.2
        ylo, yhi = min(ys) / 1.5, max(ys) * 1.5

        def px(n):
            return x0 + (math.log(n) - math.log(xlo)) / (math.log(xhi) - math.log(xlo)) * panel_w

        def py(y):
            return top + panel_h - (math.log(y) - math.log(ylo)) / (math.log(yhi) - math.log(ylo)) * panel_h

        out.append(f'<text x="{x0 + panel_w / 2}" y="{top - 14}" text-anchor="middle" '
                   f'font-weight="bold">{escape(title)} against N (log-log)</text>')
        out.append(f'<rect x="{x0}" y="{top}" width="{panel_w}" height="{panel_h}" fill="none" stroke="#333"/>')
        for n in ns:
            out.append(f'<line x1="{px(n):.1f}" y1="{top}" x2="{px(n):.1f}" y2="{top + panel_h}" stroke="#ddd"/>')
            out.append(f'<text x="{px(n):.1f}" y="{top + panel_h + 16}" text-anchor="middle">{n}</text>')
        for y in log_ticks(ylo, yhi):
            out.append(f'<line x1="{x0}" y1="{py(y):.1f}" x2="{x0 + panel_w}" y2="{py(y):.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{x0 - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:,.0f}</text>' if y >= 1 else
                       f'<text x="{x0 - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
        out.append(f'<text x="{x0 + panel_w / 2}" y="{top + panel_h + 34}" text-anchor="middle">'
                   f'sequence length N</text>')
        for i, (label, v) in enumerate(pts.items()):
            if not v:
                continue
            c = colors[i % len(colors)]
            path = " ".join(f"{px(n):.1f},{py(y):.1f}" for n, y in v)
            out.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"/>')
            out += [f'<circle cx="{px(n):.1f}" cy="{py(y):.1f}" r="3" fill="{c}"/>' for n, y in v]
    for i, label in enumerate(series):
        c = colors[i % len(colors)]
        lx = left + (i % 2) * (panel_w + gap)
        ly = top + panel_h + 56 + 18 * (i // 2)
        out.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 24}" y2="{ly - 4}" stroke="{c}" stroke-width="2"/>')
        out.append(f'<text x="{lx + 30}" y="{ly}">{escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def model_section(rows):
    models = {r["model"] for r in rows}
    cells = Cells()
    baseline_of, arch_of, failures = {}, {}, {}
    pytorch = Cells()
    for r in rows:
        key = (r["model"], r["n"], r.get("batch", 1), r["threads"], engine(r))
        arch_of[r["model"]] = r.get("arch", "")
        if failed(r) and "--pytorch" in failed(r):
            pytorch.add(key + ("pytorch",), error=failed(r))
            continue
        if failed(r):
            failures[key] = failed(r)
            cells.add(key)
            continue
        cells.add(key, ms=r["median_ms"], tps=r.get("tokens_per_s"))
        peer = r.get("peer")
        if peer in models:
            baseline_of[r["model"]] = peer
            cells.add(key, base_ms=r.get("peer_median_ms"), ratio=r.get("ratio"))
        elif peer and peer.startswith("pytorch"):
            pytorch.add(key + (peer,), ms=r["median_ms"], peer_ms=r.get("peer_median_ms"), ratio=r.get("ratio"))

    # Families: each baseline with the models measured against it, in the file's order.
    families = []  # [(baseline, [variants])]
    for m in dict.fromkeys(k[0] for k in cells.order):
        if m in baseline_of:
            continue
        variants = [v for v in dict.fromkeys(k[0] for k in cells.order) if baseline_of.get(v) == m]
        families.append((m, variants))
    out = []
    if not families:
        return out
    out += ["## Models", "",
            "`longrun-bench models`: random weights, batch 1, each preset next to its baseline measured in "
            "the same run. ratio = baseline ms / model ms (> 1: the model is faster than its baseline). "
            "The presets' shapes are listed by `longrun-bench models --list`.", ""]
    for base, variants in families:
        title = f"### {base}" + (f" and what is measured against it" if variants else "")
        out += [title, ""]
        head = ["model", "arch", "N", "threads", "engine", "median ms", "tokens/s", "vs baseline"]
        body = []
        keys = [k for k in cells.order if k[0] in (base, *variants)]
        keys.sort(key=lambda k: (k[1], k[3], k[4], 0 if k[0] == base else 1 + variants.index(k[0])))
        for k in keys:
            model, n, batch, threads, eng = k
            if k in failures:
                body.append([model, arch_of[model], n, threads, eng, failures[k], "", ""])
                continue
            ratio = "baseline" if model == base else fmt_ratio(cells.get(k, "ratio"))
            body.append([f"`{model}`", arch_of[model], n, threads, eng, fmt_ms(cells.get(k, "ms")),
                         fmt_rate(cells.get(k, "tps")), ratio])
        out += table(head, body, right=(2, 3, 5, 6, 7)) + [""]

    if pytorch.order:
        out += ["## Eager PyTorch on the same weights", "",
                "`longrun-bench models --save-models DIR --pytorch` (tools/bench/pytorch_models.py): the same "
                "model file, ids, N and thread count in eager PyTorch. ratio = PyTorch ms / longrun ms "
                "(> 1: longrun is faster).", ""]
        head = ["model", "N", "threads", "longrun ms", "peer", "PyTorch ms", "ratio"]
        body = []
        for k in sorted(pytorch.order, key=lambda k: (k[1], k[3], pytorch.order.index(k))):
            model, n, batch, threads, eng, peer = k
            if pytorch.values[k].get("error"):
                body.append([f"`{model}`", "-", threads, "-", peer, pytorch.values[k]["error"][0], "-"])
                continue
            body.append([f"`{model}`", n, threads, fmt_ms(pytorch.get(k, "ms")), peer,
                         fmt_ms(pytorch.get(k, "peer_ms")), fmt_ratio(pytorch.get(k, "ratio"))])
        out += table(head, body, right=(1, 2, 3, 5, 6)) + [""]
    return out


def op_section(rows):
    cells, failures = Cells(), {}
    for r in rows:
        key = (r["op"], r["shape"], r["threads"], engine(r), r.get("peer", "-"))
        if failed(r):
            failures[key] = failed(r)
            cells.add(key)
            continue
        cells.add(key, ms=r["median_ms"], gflops=r.get("gflops"), gbps=r.get("gbps"),
                  peer_ms=r.get("peer_median_ms"), ratio=r.get("ratio"))
    if not cells.order:
        return []
    out = ["## Ops", "",
           "`longrun-bench ops`: each op at model-shaped sizes, with the peer libraries measured in the same "
           "run. ratio = peer ms / longrun ms (> 1: longrun is faster).", ""]
    head = ["op", "shape", "threads", "engine", "median ms", "GFLOP/s", "GB/s", "peer", "peer ms", "ratio"]
    body = []
    for k in cells.order:
        op, shape, threads, eng, peer = k
        if k in failures:
            body.append([op, shape.replace("*", "·"), threads, eng, failures[k], "", "", "", "", ""])
            continue
        body.append([op, shape.replace("*", "·"), threads, eng, fmt_ms(cells.get(k, "ms")),
                     fmt_rate(cells.get(k, "gflops")), fmt_rate(cells.get(k, "gbps")), peer,
                     fmt_ms(cells.get(k, "peer_ms")), fmt_ratio(cells.get(k, "ratio"))])
    return out + table(head, body, right=(2, 4, 5, 6, 8, 9)) + [""]


def probe_section(rows):
    cells, units = Cells(), {}
    for r in rows:
        cells.add((r["probe"], r["when"]), median=r.get("median"), min=r.get("min"), max=r.get("max"))
        units[r["probe"]] = r.get("unit", "")
    if not cells.order:
        return []
    out = ["## Machine check", "",
           "`longrun-bench machine`: what the core delivered around the run (clock, FMA throughput, L1 row "
           "gathers, an 8 MiB copy); a wide min-max spread means another tenant shared the core.", ""]
    body = [[p, when, f"{cells.get((p, when), 'median'):.3g}", f"{cells.get((p, when), 'min'):.3g}",
             f"{cells.get((p, when), 'max'):.3g}", units[p]] for p, when in cells.order]
    return out + table(["probe", "when", "median", "min", "max", "unit"], body, right=(2, 3, 4)) + [""]


def pool_section(rows):
    if not rows:
        return []
    out = ["## Thread pool wake-up", "", "`longrun-bench pool`: one parallel call after each idle gap.", ""]
    body = [[r["gap_us"], r["threads"], f"{r['chunks']} x {r['chunk_us']} us", fmt_ms(r.get("median_ms")),
             fmt_ms(r.get("ideal_ms")), r.get("join_p50_us"), r.get("join_p90_us")] for r in rows]
    return out + table(["gap us", "threads", "chunks", "median ms", "ideal ms", "join p50 us", "join p90 us"],
                       body, right=(0, 1, 3, 4, 5, 6)) + [""]


def summary(rows):
    """One row per model: its time, its baseline's and PyTorch's, and the two ratios."""
    models = {r["model"] for r in rows if kind(r) == "model"}
    own, base_of, torch = Cells(), {}, Cells()
    for r in rows:
        if kind(r) != "model" or failed(r):
            continue
        key = (r["model"], r["n"], r["threads"])
        own.add(key, ms=r["median_ms"])
        peer = r.get("peer")
        if peer in models:
            base_of[r["model"]] = peer
        elif peer and peer.startswith("pytorch"):
            torch.add(key, ms=r.get("peer_median_ms"))
    head = ["model", "vs", "N", "threads", "longrun ms", "baseline ms", "vs baseline", "PyTorch ms",
            "vs PyTorch"]
    body = []
    for key in own.order:
        model, n, threads = key
        ms = own.get(key, "ms")
        base = base_of.get(model)
        base_ms = own.get((base, n, threads), "ms") if base else None
        torch_ms = torch.get(key, "ms")
        body.append([f"`{model}`", f"`{base}`" if base else "(baseline)", n, threads, fmt_ms(ms),
                     fmt_ms(base_ms) if base else "-",
                     fmt_ratio(base_ms / ms) if base and base_ms and ms else "-",
                     fmt_ms(torch_ms) if torch_ms else "-",
                     fmt_ratio(torch_ms / ms) if torch_ms and ms else "-"])
    p = provenance_summary(rows)
    where = "; ".join(f"{label} {', '.join(str(v) for v in sorted(p[field], key=str))}"
                      for field, label in (("cpu", "CPU"), ("cpu_isa", "ISA"), ("commit", "commit"),
                                           ("compiler", "compiler"), ("build_type", "build"), ("date", "run")) if p[field])
    return "\n".join(table(head, body, right=(2, 3, 4, 5, 6, 7, 8)) + ["", where, ""])


def render(paths, rows, command, readme_link, svg_link=None):
    by_kind = {}
    for r in rows:
        by_kind.setdefault("scale" if r.get("sweep") == "scale" else kind(r), []).append(r)
    out = ["# Performance", "",
           "<!-- Generated file: edit tools/bench/perf_doc.py or rerun the benchmarks, not this page. -->", "",
           f"This page is generated by `{command}` from "
           + ", ".join(f"`{p}`" for p in paths)
           + ", the results file that `tools/bench/perf_run.sh` writes. Times are medians of repeated runs "
           "after warm-up runs; every ratio compares two engines measured in the same run on the same machine. "
           f"{readme_link} describes the benchmark tool and its fields.", "",
           "## Where these numbers come from", ""]
    out += provenance_lines(rows) + [""]
    out += model_section(by_kind.get("model", []))
    out += op_section(by_kind.get("op", []))
    out += probe_section(by_kind.get("probe", []))
    out += pool_section(by_kind.get("pool", []))
    out += scale_section(by_kind.get("scale", []), svg_link)
    return "\n".join(out).rstrip() + "\n"


def main():
    ap = argparse.ArgumentParser(
        description="Writes the performance page (Markdown) from longrun-bench --json results files.")
    ap.add_argument("results", nargs="+", metavar="RESULTS.jsonl")
    ap.add_argument("-o", "--output", default="-", help="Markdown file to write (default - = stdout)")
    ap.add_argument("--summary", action="store_true",
                    help="print only the compact model table of the top-level README")
    ap.add_argument("--scale-svg", metavar="FILE.svg",
                    help="where the scaling sweep's plot goes (default: performance-scaling.svg beside the "
                         "-o page; none when the page goes to stdout)")
    args = ap.parse_args()
    rows = []
    for path in args.results:
        rows += [r for _, r in records(path)]
    if not rows:
        sys.exit(f"perf_doc.py: no result lines in {', '.join(args.results)}")
    if args.summary:
        sys.stdout.write(summary(rows))
        return 0
    command = "python3 tools/bench/perf_doc.py " + " ".join(args.results) + \
        ("" if args.output == "-" else f" -o {args.output}")
    readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "README.md")
    out_dir = os.getcwd() if args.output == "-" else os.path.dirname(os.path.abspath(args.output))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    link = "`tools/bench/README.md`"  # a link only where the page lies inside the repository
    if os.path.commonpath([root, out_dir]) == root:
        link = f"[tools/bench/README.md]({os.path.relpath(readme, out_dir)})"
    scale_rows = [r for r in rows if r.get("sweep") == "scale"]
    svg_path = args.scale_svg or (None if args.output == "-" else os.path.join(out_dir, "performance-scaling.svg"))
    svg_link = None
    if scale_rows and svg_path:
        svg = scale_svg(scale_rows)
        if svg:
            os.makedirs(os.path.dirname(os.path.abspath(svg_path)), exist_ok=True)
            with open(svg_path, "w") as f:
                f.write(svg)
            svg_link = os.path.relpath(os.path.abspath(svg_path), out_dir).replace(os.sep, "/")
    page = render(args.results, rows, command, link, svg_link)
    if args.output == "-":
        sys.stdout.write(page)
    else:
        os.makedirs(out_dir, exist_ok=True)
        with open(args.output, "w") as f:
            f.write(page)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    sys.exit(main())
