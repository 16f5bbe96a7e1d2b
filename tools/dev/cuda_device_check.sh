#!/usr/bin/env bash
# The cuda backend's checks on a GPU machine, from a bundle made by tools/dev/cuda_bundle.sh:
# the conformance suite and the model goldens against the cuda backend, compute-sanitizer
# memcheck and racecheck over the golden op cases, and (with --bench) the device's copy and
# PyTorch SDPA ceilings, longrun-bench ops and models on the device, and eager PyTorch on the
# same models. One log per phase under $OUT (default /tmp/longrun-cuda-check); a summary table
# last. Exits non-zero when any phase failed.
#   tools/dev/cuda_device_check.sh [--bench] [--only PHASE,...]
set -uo pipefail
cd "$(dirname "$0")/../.."
bundle=${LONGRUN_BUNDLE:-.devrun}
out=${OUT:-/tmp/longrun-cuda-check}
mkdir -p "$out"
bench=0
only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bench) bench=1 ;;
    --only) only=",$2,"; shift ;;
    *) echo "usage: $0 [--bench] [--only PHASE,...]" >&2; exit 2 ;;
  esac
  shift
done
export LD_LIBRARY_PATH="$PWD/$bundle/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
# The tests read their goldens from the source path compiled into them.
src=$(cat "$bundle/source_dir")
if [[ ! -e "$src/tests/golden" ]]; then mkdir -p "$(dirname "$src")" && ln -sfn "$PWD" "$src"; fi
bin="$PWD/$bundle/bin"
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader || true
summary=()
failed=0
# phase NAME TIMEOUT_S CMD...: runs one phase, its output in $out/NAME.log.
phase() {
  local name=$1 limit=$2
  shift 2
  [[ -n "$only" && "$only" != *",$name,"* ]] && return 0
  local t0 rc
  t0=$(date +%s%N)
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  local dt
  dt=$(( ($(date +%s%N) - t0) / 1000000 ))
  [[ $rc -ne 0 ]] && failed=1
  summary+=("$(printf '%-14s rc=%-4s %7s ms  %s' "$name" "$rc" "$dt" "$(grep -E '^\[doctest\] (test cases|assertions)|Status:|ERROR SUMMARY' "$out/$name.log" | tr '\n' ' ' | cut -c1-150)")")
  echo "== $name (rc $rc, ${dt} ms): last lines"
  tail -n 25 "$out/$name.log" | cut -c1-400
}

LONGRUN_TEST_BACKEND=cuda LONGRUN_CONFORMANCE_REPORT=1 phase conformance 240 "$bin/longrun_conformance_tests"
LONGRUN_TEST_BACKEND=cuda phase models 180 "$bin/longrun_model_tests"
if [[ -n "$sanitizer" ]]; then
  LONGRUN_TEST_BACKEND=cuda phase memcheck 150 "$sanitizer" --tool memcheck --error-exitcode 3 \
    "$bin/longrun_conformance_tests" -tc='conformance.*' -tce='conformance.coverage'
  # topk's exact rank counting reads a row from shared memory per element: hours under
  # racecheck, so it is left out there (memcheck covers it).
  LONGRUN_TEST_BACKEND=cuda phase racecheck 150 "$sanitizer" --tool racecheck --error-exitcode 3 \
    "$bin/longrun_conformance_tests" -tc='conformance.*' -tce='conformance.coverage,conformance.topk*'
else
  summary+=("compute-sanitizer      not found on this machine")
fi
if [[ $bench -eq 1 ]]; then
  phase ceilings 120 python3 tools/bench/cuda_ceilings.py --json "$out/ceilings.jsonl"
  phase bench_ops 150 "$bin/longrun-bench" ops --backend cuda --json "$out/bench_ops.jsonl"
  phase bench_models 200 "$bin/longrun-bench" models --backend cuda --n 1024,4096 --threads 1 \
    --save-models "$out/models" --json "$out/bench_models.jsonl"
  # Eager PyTorch on the same weights and ids, on the same GPU (ratio = PyTorch ms / longrun ms).
  phase pytorch 240 python3 tools/bench/pytorch_models.py "$out"/models/*.safetensors --device cuda \
    --n 1024,4096 --warmup 2 --repeat 5 --longrun "$out/bench_models.jsonl" --json "$out/pytorch_models.jsonl"
fi

echo "== summary"
printf '%s\n' "${summary[@]}"
exit $failed
