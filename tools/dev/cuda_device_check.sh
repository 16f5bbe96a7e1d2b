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
# The same suite with the simpler fallback kernels forced (rank top-k, serial cummax, warp
# attention), which stay selectable so each path keeps its test.
LONGRUN_TEST_BACKEND=cuda LONGRUN_CUDA_TOPK=rank LONGRUN_CUDA_CUMMAX=serial LONGRUN_CUDA_ATTENTION=warp \
  phase conformance_old 240 "$bin/longrun_conformance_tests"
LONGRUN_TEST_BACKEND=cuda phase models 180 "$bin/longrun_model_tests"
if [[ -n "$sanitizer" ]]; then
  LONGRUN_TEST_BACKEND=cuda phase memcheck 150 "$sanitizer" --tool memcheck --error-exitcode 3 \
    "$bin/longrun_conformance_tests" -tc='conformance.*' -tce='conformance.coverage'
  LONGRUN_TEST_BACKEND=cuda phase racecheck 170 "$sanitizer" --tool racecheck --error-exitcode 3 \
    "$bin/longrun_conformance_tests" -tc='conformance.*' -tce='conformance.coverage'
else
  summary+=("compute-sanitizer      not found on this machine")
fi
if [[ $bench -eq 1 ]]; then
  phase ceilings 120 python3 tools/bench/cuda_ceilings.py --json "$out/ceilings.jsonl"
  phase bench_ops 150 "$bin/longrun-bench" ops --backend cuda --json "$out/bench_ops.jsonl"
  phase bench_models 200 "$bin/longrun-bench" models --backend cuda --n 1024,4096 --threads 1 \
    --save-models "$out/models" --json "$out/bench_models.jsonl"
  # Where the time goes at N = 4096 (per op kind, the slowest nodes); encoder-only models
  # (the encoder-decoders need a decoder_input_ids file); ids below 504 fit every vocabulary.
  phase profile 120 bash -c 'for m in lra-text-vanilla softmax-d512-l6-8k combiner-axial-d512-l6 fastformer-d512-l6; do
      echo "== $m"; "$0" --model "$1/models/$m.safetensors" --backend cuda --ids "$(seq 0 4095 | awk "{printf \"%d \", \$1 % 500 + 4}")" \
        --profile --repeat 3 | grep -v "^  [a-z_.0-9]* *f32\["; done' "$bin/longrun-run" "$out"
  # Eager PyTorch on the same weights and ids, on the same GPU (its ratio column
  # is longrun ms / PyTorch ms: < 1 means longrun is faster).
  phase pytorch 240 python3 tools/bench/pytorch_models.py "$out"/models/*.safetensors --device cuda \
    --n 1024,4096 --warmup 2 --repeat 5 --longrun "$out/bench_models.jsonl" --json "$out/pytorch_models.jsonl"
fi

echo "== summary"
printf '%s\n' "${summary[@]}"
exit $failed
