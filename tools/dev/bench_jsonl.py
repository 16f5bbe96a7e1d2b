"""Reads the JSON lines of `longrun-bench ops|models --json FILE` for the tools in tools/dev/
(bench_table.py, ratio_spread.py): records(path) yields (line_no, record) for each non-blank
line and exits naming the file and line when one is not JSON. Standard library only."""
import json
import sys


def records(path):
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield line_no, json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{line_no}: not JSON: {e}")
