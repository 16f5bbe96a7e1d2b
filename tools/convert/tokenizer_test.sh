#!/usr/bin/env bash
# CTest convert.tokenizer: an HF directory with a WordPiece vocab.txt converts with its
# tokenizer embedded (summary line), longrun-run --text on the output gives the same outputs
# as the expected ids given with --ids, and --no-tokenizer leaves the tokenizer out (so --text
# is refused). The fixture is tests/golden/checkpoints/hf_bert (vocab_size 100) plus a 100-token
# vocab.txt cut from tests/golden/tokenizer/bert/vocab.txt.
#   tools/convert/tokenizer_test.sh LONGRUN_CONVERT LONGRUN_RUN SOURCE_DIR
set -u
convert=$1
run=$2
src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() {  # description command...: the command must succeed
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}

hf=$tmp/hf
mkdir "$hf"
cp "$src/tests/golden/checkpoints/hf_bert/config.json" "$src/tests/golden/checkpoints/hf_bert/model.safetensors" "$hf/"
# ids 0-4 the specials, 5-94 "the" ... (bert-base-uncased ids 1996-2085), 95-99 , . ! ? house
{ printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n'; sed -n '1997,2086p' "$src/tests/golden/tokenizer/bert/vocab.txt"
  printf ',\n.\n!\n?\nhouse\n'; } >"$hf/vocab.txt"
[[ $(wc -l <"$hf/vocab.txt") == 100 ]] || { echo "FAIL: fixture vocab.txt is not 100 tokens"; exit 1; }

"$convert" "$hf" -o "$tmp/m.safetensors" >"$tmp/out" 2>&1
check "convert with vocab.txt" grep -q "tokenizer: WordPiece, 100 tokens, lowercase" "$tmp/out" || cat "$tmp/out"

# [CLS] the man([UNK]) was in his house ! [SEP]: every output tensor, byte for byte
"$run" --model "$tmp/m.safetensors" --text "The man was in his house!" --output "$tmp/text.safetensors" >"$tmp/text" 2>&1
"$run" --model "$tmp/m.safetensors" --ids "2 5 1 10 8 19 99 97 3" --output "$tmp/ids.safetensors" >"$tmp/ids" 2>&1
check "--text runs" test -s "$tmp/text.safetensors" || cat "$tmp/text"
check "--ids runs" test -s "$tmp/ids.safetensors" || cat "$tmp/ids"
check "--text outputs equal the expected --ids outputs" cmp -s "$tmp/text.safetensors" "$tmp/ids.safetensors"

"$convert" --no-tokenizer "$hf" -o "$tmp/n.safetensors" >"$tmp/out" 2>&1
check "--no-tokenizer converts" test -s "$tmp/n.safetensors"
check "--no-tokenizer: no tokenizer in the summary" bash -c "! grep -q 'tokenizer:' '$tmp/out'"
check "--no-tokenizer: --text is refused" bash -c "! '$run' --model '$tmp/n.safetensors' --text hello >/dev/null 2>&1"
exit $fail
