#!/usr/bin/env bash
# Builds the libFuzzer targets in tests/fuzz/ with clang (-fsanitize=fuzzer,address,undefined)
# and runs each for a bounded time, seeded from valid files.
#   tools/dev/fuzz.sh [SECONDS_PER_TARGET]   (default 30)
# Exits 1 on a crash, leak, timeout or sanitizer report (the reproducer is kept
# in build/fuzz/<target>.work/); exits 77 (CTest: skipped) when clang++ is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-30}
if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ not found; skipping the fuzz run (install clang to enable it)"
  exit 77
fi
out=build/fuzz
mkdir -p "$out/obj"
jobs=${LONGRUN_JOBS:-$(nproc)}
common=(-std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
        -Iruntime/include -Iops/include -Iruntime/src -Itools/convert -Itools)
core=(runtime/src/core/*.cpp)

# Every source is compiled once into build/fuzz/obj (all with the same flags, $jobs at a
# time) and linked into each target that needs it: the readers' sources are shared by five
# targets, and compiling them per target took most of the run's build time.
declare -A target_sources=()
target_order=()
add_target() {  # name sources...
  local name=$1
  shift
  target_sources[$name]="$* ${core[*]}"
  target_order+=("$name")
}
obj_of() { local src=$1; echo "$out/obj/${src//\//__}.o"; }
# An object is stale when it is missing or older than its source; a header of the
# directories the sources include from that is newer than the last compile (the stamp)
# makes every object stale.
stamp=$out/obj/.compiled
stale() { [[ ! -f $2 || $1 -nt $2 ]]; }  # src obj
build_targets() {
  if [[ ! -f $stamp || -n "$(find runtime ops/include tools tests/fuzz -name '*.h' -newer "$stamp" -print -quit)" ]]; then
    rm -f "$out"/obj/*.o
  fi
  local name src obj
  local -A seen=()
  local todo=()
  for name in "${target_order[@]}"; do
    for src in ${target_sources[$name]}; do
      [[ -n ${seen[$src]:-} ]] && continue
      seen[$src]=1
      obj=$(obj_of "$src")
      if stale "$src" "$obj"; then todo+=("$src" -o "$obj"); fi
    done
  done
  if (( ${#todo[@]} > 0 )); then
    echo "fuzz: compiling $(( ${#todo[@]} / 3 )) sources ($jobs at a time)"
    touch "$stamp"  # before compiling: a header edited meanwhile counts as newer next time
    printf '%s\0' "${todo[@]}" | xargs -0 -n 3 -P "$jobs" clang++ "${common[@]}" -c
  fi
  for name in "${target_order[@]}"; do
    local objs=()
    for src in ${target_sources[$name]}; do objs+=("$(obj_of "$src")"); done
    if [[ ! -x "$out/$name" ]] || [[ -n "$(find "${objs[@]}" -newer "$out/$name" -print -quit)" ]]; then
      echo "fuzz: linking $name"
      clang++ "${common[@]}" "${objs[@]}" -o "$out/$name"
    fi
  done
}

run_target() {  # name seed_dir...
  local name=$1
  shift
  local dir="$out/$name.work"
  mkdir -p "$dir/corpus"
  for seeds in "$@"; do cp -n "$seeds"/* "$dir/corpus/" 2>/dev/null || true; done
  echo "fuzz: running $name for ${seconds}s"
  # libFuzzer exits 77 on a crash by default: CTest would report that as skipped.
  (cd "$dir" && "../$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -error_exitcode=1 \
      -timeout_exitcode=1 -max_len=65536 -print_final_stats=1 corpus 2>&1 | tail -n 12)
}

# Checkpoint importer (tools/convert): the pickle parser alone, and the readers on whole files.
convert_sources=(tools/convert/pickle.cpp tools/convert/pickle_globals.cpp tools/convert/source.cpp
                 tools/convert/source_dtype.cpp tools/convert/zip_reader.cpp tools/convert/torch_checkpoint.cpp
                 tools/convert/readers.cpp tools/convert/flax_source.cpp tools/convert/flax/*.cpp
                 runtime/src/safetensors_reader.cpp runtime/src/file_pages.cpp runtime/src/safetensors_writer.cpp
                 runtime/src/strict_json.cpp runtime/src/text/unicode.cpp runtime/src/text/text_file.cpp)
add_target fuzz_safetensors tests/fuzz/fuzz_safetensors.cpp runtime/src/safetensors_reader.cpp \
  runtime/src/file_pages.cpp runtime/src/safetensors_writer.cpp runtime/src/strict_json.cpp runtime/src/text/unicode.cpp
add_target fuzz_pickle tests/fuzz/fuzz_pickle.cpp "${convert_sources[@]}"
add_target fuzz_torch_zip tests/fuzz/fuzz_torch_zip.cpp "${convert_sources[@]}"
add_target fuzz_fairseq tests/fuzz/fuzz_fairseq.cpp tools/convert/fairseq.cpp "${convert_sources[@]}"
# The sharded index (and config.json) of an HF directory.
add_target fuzz_hf_index tests/fuzz/fuzz_hf_index.cpp "${convert_sources[@]}"
add_target fuzz_flax_msgpack tests/fuzz/fuzz_flax_msgpack.cpp tools/convert/flax/*.cpp
# The official repositories' configs (LRA, Fastformer, Combiner) -> longrun fields.
add_target fuzz_official_config tests/fuzz/fuzz_official_config.cpp tools/convert/official_config.cpp
add_target fuzz_tokenizer tests/fuzz/fuzz_tokenizer.cpp runtime/src/text/*.cpp
# The HF tokenizer files: a layout byte (0 tokenizer.json, 1 vocab.txt, 2 vocab.json), then the
# files separated by "@@FILE@@" lines (tests/fuzz/fuzz_tokenizer_files.cpp).
add_target fuzz_tokenizer_files tests/fuzz/fuzz_tokenizer_files.cpp runtime/src/text/*.cpp
build_targets

run_target fuzz_safetensors tests/golden/ops tests/fuzz/seeds/safetensors
run_target fuzz_pickle tests/fuzz/seeds/pickle
run_target fuzz_torch_zip tests/golden/checkpoints tests/fuzz/seeds/pickle tests/fuzz/seeds/zip64
mkdir -p "$out/fuzz_fairseq.seeds"
cp tests/golden/checkpoints/fairseq.pt tests/golden/checkpoints/namespace.pt "$out/fuzz_fairseq.seeds/"
run_target fuzz_fairseq "$out/fuzz_fairseq.seeds" tests/fuzz/seeds/pickle tests/fuzz/seeds/zip64
# Seeds of the HF index: a valid index over the target's two fixed shards, and near misses.
mkdir -p "$out/fuzz_hf_index.seeds"
i=0
for index in '{"metadata":{"total_size":20},"weight_map":{"x":"a.safetensors","y":"a.safetensors","z":"b.safetensors"}}' \
             '{"weight_map":{"x":"a.safetensors","y":"b.safetensors","z":"b.safetensors"}}' \
             '{"weight_map":{"x":"a.safetensors","y":"a.safetensors"}}' \
             '{"weight_map":{"z":"../b.safetensors","x":1}}'; do
  printf '%s' "$index" > "$out/fuzz_hf_index.seeds/seed$((i++))"
done
run_target fuzz_hf_index "$out/fuzz_hf_index.seeds"
run_target fuzz_flax_msgpack tests/golden/flax
mkdir -p "$out/fuzz_official_config.seeds"
i=0
for f in tests/golden/checkpoints/*.model_config.json tests/golden/checkpoints/*.fastformer.json \
  tests/golden/flax/*.main_config.json tests/golden/checkpoints/lra_vanilla.config.json; do
  for arch in 0 1 2 3; do  # the architecture byte, then the config text
    { printf "\\x3$arch"; cat "$f"; } > "$out/fuzz_official_config.seeds/seed$((i++))"
  done
done
run_target fuzz_official_config "$out/fuzz_official_config.seeds"
mkdir -p "$out/fuzz_tokenizer.seeds"
i=0
for f in tests/golden/tokenizer/bpe_corpus.txt tests/golden/tokenizer/bpe/merges.txt; do
  for mode in 0 1 2 3 5; do  # one seed per mode: the mode byte, then the text
    { printf "\\x3$mode"; head -c 4000 "$f"; } > "$out/fuzz_tokenizer.seeds/seed$((i++))"
  done
done
run_target fuzz_tokenizer "$out/fuzz_tokenizer.seeds"
seeds=$out/fuzz_tokenizer_files.seeds
mkdir -p "$seeds"
tok=tests/golden/tokenizer
sep=$'\n@@FILE@@\n'
{ printf 0; cat $tok/bpe/tokenizer.json; } > "$seeds/tokenizer_json"
{ printf 1; head -n 2000 $tok/bert/vocab.txt; printf %s "$sep"; cat $tok/bert/tokenizer_config.json
  printf %s "$sep"; cat $tok/bert/special_tokens_map.json; printf %s "$sep"; echo "Hello, world!"; } > "$seeds/wordpiece"
{ printf 2; cat $tok/bpe/vocab.json; printf %s "$sep"; cat $tok/bpe/merges.txt; } > "$seeds/bpe"
run_target fuzz_tokenizer_files "$seeds"
