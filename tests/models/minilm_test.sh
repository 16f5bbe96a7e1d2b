#!/usr/bin/env bash
# CTest models.minilm: real weights end to end. Fetches sentence-transformers/all-MiniLM-L6-v2
# (tools/dev/fetch_minilm.sh; exit 3 = not obtainable here -> this test exits 77, skipped,
# with the reason), converts its Hugging Face directory with longrun-convert to "bert" and to
# "fourier-bert" (filter before layer 3, ratio 0.5: the goldens' metadata), then runs the
# minilm case of the model tests (tests/models/minilm_test.cpp) on the converted files.
#   tests/models/minilm_test.sh LONGRUN_CONVERT LONGRUN_MODEL_TESTS SOURCE_DIR WORK_DIR
set -u
convert=$1
model_tests=$2
src=$3
work=$4
mkdir -p "$work"
dir=$(bash "$src/tools/dev/fetch_minilm.sh" "$work/cache" 2>"$work/fetch.err")
rc=$?
if [[ $rc != 0 ]]; then
  if [[ $rc == 3 ]]; then
    echo "SKIP models.minilm: $(tail -n 1 "$work/fetch.err")"
    exit 77
  fi
  echo "FAIL: fetch_minilm.sh exited $rc"
  cat "$work/fetch.err"
  exit 1
fi
"$convert" -q "$dir" -o "$work/minilm.bert.safetensors" || { echo "FAIL: convert to bert"; exit 1; }
"$convert" -q "$dir" --arch fourier-bert --set 'filter_layers=[3]' --set filter_ratio=0.5 \
  -o "$work/minilm.fourier-bert.safetensors" || { echo "FAIL: convert to fourier-bert"; exit 1; }
"$convert" -q --quantize int8 "$dir" -o "$work/minilm.bert.int8.safetensors" || { echo "FAIL: convert --quantize int8"; exit 1; }
echo "minilm file sizes: bert $(stat -c %s "$work/minilm.bert.safetensors") bytes, --quantize int8 $(stat -c %s "$work/minilm.bert.int8.safetensors") bytes"
LONGRUN_MINILM_BERT="$work/minilm.bert.safetensors" \
  LONGRUN_MINILM_BERT_INT8="$work/minilm.bert.int8.safetensors" \
  LONGRUN_MINILM_FOURIER_BERT="$work/minilm.fourier-bert.safetensors" \
  "$model_tests" --test-case='minilm*' --success=false
