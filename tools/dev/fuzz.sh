#!/usr/bin/env bash
# Builds the libFuzzer targets in tests/fuzz/ with clang (-fsanitize=fuzzer,address,undefined)
# and runs each for a bounded time, seeded from valid files.
#   tools/dev/fuzz.sh [SECONDS_PER_TARGET]   (default 30)
# Exits non-zero on a crash, leak, timeout or sanitizer report (the reproducer is kept
# in build/fuzz/<target>/).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-30}
if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ not found; skipping the fuzz run (install clang to enable it)"
  exit 0
fi
out=build/fuzz
mkdir -p "$out"
common=(-std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
        -Iruntime/include -Iops/include -Iruntime/src -Itools/convert)
ground=(runtime/src/ground/*.cpp)
common+=(-Itools)  # tools/checkpoint/* readers

build_target() {  # name sources...
  local name=$1
  shift
  if [[ ! -x "$out/$name" ]] || [[ -n "$(find "$@" runtime/include -newer "$out/$name" -print -quit)" ]]; then
    echo "fuzz: building $name"
    clang++ "${common[@]}" "$@" "${ground[@]}" -o "$out/$name"
  fi
}

run_target() {  # name seed_dir...
  local name=$1
  shift
  local dir="$out/$name.work"
  mkdir -p "$dir/corpus"
  for seeds in "$@"; do cp -n "$seeds"/* "$dir/corpus/" 2>/dev/null || true; done
  echo "fuzz: running $name for ${seconds}s"
  (cd "$dir" && "../$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -print_final_stats=1 corpus 2>&1 | tail -n 12)
}

build_target fuzz_safetensors tests/fuzz/fuzz_safetensors.cpp runtime/src/safetensors_reader.cpp \
  runtime/src/file_pages.cpp runtime/src/safetensors_writer.cpp runtime/src/strict_json.cpp runtime/src/text/unicode.cpp
run_target fuzz_safetensors tests/golden/ops

# Checkpoint importer (tools/convert): the pickle parser alone, and the readers on whole files.
convert_sources=(tools/convert/pickle.cpp tools/convert/pickle_globals.cpp tools/convert/source.cpp
                 tools/convert/source_dtype.cpp tools/convert/zip_reader.cpp tools/convert/torch_checkpoint.cpp
                 tools/convert/readers.cpp tools/convert/flax_source.cpp tools/checkpoint/flax/*.cpp
                 runtime/src/safetensors_reader.cpp runtime/src/file_pages.cpp runtime/src/safetensors_writer.cpp
                 runtime/src/strict_json.cpp runtime/src/text/unicode.cpp)
build_target fuzz_pickle tests/fuzz/fuzz_pickle.cpp "${convert_sources[@]}"
run_target fuzz_pickle tests/fuzz/seeds/pickle
build_target fuzz_torch_zip tests/fuzz/fuzz_torch_zip.cpp "${convert_sources[@]}"
run_target fuzz_torch_zip tests/golden/checkpoints tests/fuzz/seeds/pickle
build_target fuzz_flax_msgpack tests/fuzz/fuzz_flax_msgpack.cpp tools/checkpoint/flax/*.cpp
run_target fuzz_flax_msgpack tests/golden/flax
build_target fuzz_tokenizer tests/fuzz/fuzz_tokenizer.cpp runtime/src/text/*.cpp
mkdir -p "$out/fuzz_tokenizer.seeds"
i=0
for f in tests/golden/tokenizer/bpe_corpus.txt tests/golden/tokenizer/bpe/merges.txt; do
  for mode in 0 1 2 3 5; do  # one seed per mode: the mode byte, then the text
    { printf "\\x3$mode"; head -c 4000 "$f"; } > "$out/fuzz_tokenizer.seeds/seed$((i++))"
  done
done
run_target fuzz_tokenizer "$out/fuzz_tokenizer.seeds"
