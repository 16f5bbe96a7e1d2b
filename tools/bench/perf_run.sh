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
# The PyTorch peer runs on OpenBLAS (below); install it first: tools/dev/deps.sh --bench-peers.
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
# Debian's torch calls the system libblas.so.3, which is the unoptimised reference BLAS unless
# OpenBLAS is the selected alternative; the peer runs on OpenBLAS's libblas (deps.sh
# --bench-peers installs it) with the same thread count, whatever the system default.
openblas=/usr/lib/x86_64-linux-gnu/openblas-pthread
if "$PYTHON" -c 'import torch' 2>/dev/null; then
  models+=(--pytorch)
  if [[ -e $openblas/libblas.so.3 ]]; then
    export LD_LIBRARY_PATH=$openblas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} OPENBLAS_NUM_THREADS=$THREADS
  else
    echo "perf_run.sh: OpenBLAS is not installed (tools/dev/deps.sh --bench-peers); PyTorch will" \
      "run on the system libblas.so.3, which may be the unoptimised reference BLAS" >&2
  fi
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
