#!/usr/bin/env bash
# Runs the benchmarks behind docs/performance.md and writes their JSON lines into one results
# file (default docs/performance.jsonl); tools/bench/perf_doc.py turns that file into the page.
#
#   tools/bench/perf_run.sh [OUT.jsonl]
#
# It runs, in order:
#   1. `longrun-bench machine`: the machine check (what the core delivered before the run);
#   2. `longrun-bench models` on every preset (each family with its baseline) at N = $N on
#      $THREADS threads, saving each model file, and with --pytorch eager PyTorch on the same
#      weights (tools/bench/pytorch_models.py) when $PYTHON imports torch, else without it;
#   3. `longrun-bench ops` at the same thread count when OPS=1.
# Settings (environment):
#   BENCH    the longrun-bench binary (default: build/default/tools/longrun-bench, else build/ci/...)
#   N        sequence length (default 4096)          THREADS  thread count (default 2)
#   REPEAT   timed runs per row (default 5)           WARMUP   warm-up runs (default 1)
#   PRESETS  comma-separated presets (default: all, `longrun-bench models --list`)
#   PYTHON   the Python that runs PyTorch (default /usr/bin/python3)
#   OPS      1: also run `longrun-bench ops --threads $THREADS`
# The full set takes tens of minutes at N = 4096; run it on an otherwise idle machine.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/docs/performance.jsonl}
N=${N:-4096}
THREADS=${THREADS:-2}
REPEAT=${REPEAT:-5}
WARMUP=${WARMUP:-1}
PRESETS=${PRESETS:-}
PYTHON=${PYTHON:-/usr/bin/python3}
OPS=${OPS:-0}

if [[ -z ${BENCH:-} ]]; then
  for b in "$root/build/default/tools/longrun-bench" "$root/build/ci/tools/longrun-bench"; do
    if [[ -x $b ]]; then BENCH=$b; break; fi
  done
fi
if [[ -z ${BENCH:-} || ! -x $BENCH ]]; then
  echo "perf_run.sh: no longrun-bench binary; build it (cmake --build --preset default --target longrun-bench)" \
    "or set BENCH=/path/to/longrun-bench" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$out")"

echo "perf_run.sh: $BENCH, N = $N, $THREADS threads, $REPEAT runs after $WARMUP warm-up -> $out" >&2
"$BENCH" machine --json "$tmp/machine.jsonl"

models=(models --n "$N" --threads "$THREADS" --repeat "$REPEAT" --warmup "$WARMUP" --save-models "$tmp/models")
[[ -n $PRESETS ]] && models+=(--preset "$PRESETS")
if "$PYTHON" -c 'import torch' 2>/dev/null; then
  models+=(--pytorch)
else
  echo "perf_run.sh: $PYTHON cannot import torch; skipping the eager PyTorch rows" >&2
fi
LONGRUN_PYTHON=$PYTHON "$BENCH" "${models[@]}" --json "$tmp/models.jsonl"

parts=("$tmp/machine.jsonl" "$tmp/models.jsonl")
if [[ $OPS == 1 ]]; then
  "$BENCH" ops --threads "$THREADS" --json "$tmp/ops.jsonl"
  parts+=("$tmp/ops.jsonl")
fi
cat "${parts[@]}" >"$out"
echo "perf_run.sh: wrote $(wc -l <"$out") lines to $out;" \
  "python3 tools/bench/perf_doc.py $out -o docs/performance.md makes the page" >&2
