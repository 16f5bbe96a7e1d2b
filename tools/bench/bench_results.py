"""Reads the JSON lines of `longrun-bench ops|models|pool|machine --json FILE` for compare.py and
perf_doc.py. Standard library only.

Every line is one of four kinds, told apart by its first key:
  op     `ops` rows: {"op", "shape", "n", "backend", "isa", "threads", ..., "median_ms", [peer ...]}
  model  `models` rows: {"model", "arch", "shape", "n", "batch", "backend", "isa", "threads", ...}
  probe  machine check: {"probe", "when", "isa", "rounds", "unit", "min", "median", "max", ...}
  pool   `pool` rows: {"gap_us", "threads", "chunks", "chunk_us", ..., "median_ms", ...}
and ends with the provenance fields of PROVENANCE (provenance.h), when the binary was new
enough to write them.
"""
import json
import statistics
import sys

PROVENANCE = ("commit", "cpu", "cpu_isa", "compiler", "build_type", "date")


def records(path):
    """Yields (line_no, record) for each non-blank line; exits naming the file and line when one
    is not a JSON object."""
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{line_no}: not JSON: {e}")
            if not isinstance(r, dict):
                sys.exit(f"{path}:{line_no}: not a JSON object")
            yield line_no, r


def kind(r):
    for k in ("op", "model", "probe"):
        if k in r:
            return k
    return "pool" if "gap_us" in r else "other"


def engine(r):
    """"cpu/avx512" (backend/isa), or the backend alone where it has no ISA; "/int8" (the
    precision) follows where a row has one other than f32."""
    return (r.get("backend", "?") + (f"/{r['isa']}" if r.get("isa") else "") +
            (f"/{r['precision']}" if r.get("precision", "f32") != "f32" else ""))


def failed(r):
    """The failure text of a row ("skipped: ..." or "error: ..."), else None."""
    for k in ("skipped", "error"):
        if k in r:
            return f"{k}: {r[k]}"
    return None


def provenance_summary(rows):
    """Per provenance field, its distinct values in first-seen order (threads: the thread
    counts of the rows)."""
    out = {}
    for field in PROVENANCE + ("threads",):
        seen = []
        for r in rows:
            v = r.get(field)
            if v is not None and v not in seen:
                seen.append(v)
        out[field] = seen
    return out


def median(values):
    return statistics.median(values) if values else None


def markdown_table(head, rows, right=()):
    """A Markdown table as a list of lines; the columns whose index is in `right` are
    right-aligned (numbers). A '|' inside a cell becomes '/'."""
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---:" if i in right else "---" for i in range(len(head))) + "|"]
    out += ["| " + " | ".join(str(c).replace("|", "/") for c in row) + " |" for row in rows]
    return out


def fmt_ms(ms):
    if ms is None:
        return "-"
    return f"{ms:#.3g}" if ms < 100 else f"{ms:.0f}"
