#!/usr/bin/env bash
# CTest run.text_input: longrun-run's --text-file, --truncation and --max-length on a small
# BERT (tests/golden/checkpoints/hf_bert: max_position_embeddings 300) converted with a
# 100-token vocab.txt (as tools/convert/tokenizer_test.sh): a file or standard input gives the
# outputs --text gives; a text past 300 tokens is refused with both lengths and the limit's
# source, and cut to [CLS] + 298 tokens + [SEP] with --truncation (the outputs of those --ids);
# bad files and flags give errors naming them.
#   tools/run/text_input_test.sh LONGRUN_CONVERT LONGRUN_RUN SOURCE_DIR
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
# description expected-status pattern command...: exits with that status and prints the pattern
expect_error() {
  local what=$1 want=$2 pattern=$3
  shift 3
  "$@" >"$tmp/err" 2>&1
  local rc=$?
  if [[ $rc == "$want" ]] && grep -qF -- "$pattern" "$tmp/err"; then
    echo "ok: $what"
  else
    echo "FAIL: $what (exit $rc, expected $want and '$pattern'):"; cat "$tmp/err"; fail=1
  fi
}

hf=$tmp/hf
mkdir "$hf"
cp "$src/tests/golden/checkpoints/hf_bert/config.json" "$src/tests/golden/checkpoints/hf_bert/model.safetensors" "$hf/"
# ids 0-4 the specials, 5-94 "the" ... (bert-base-uncased ids 1996-2085), 95-99 , . ! ? house
{ printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n'; sed -n '1997,2086p' "$src/tests/golden/tokenizer/bert/vocab.txt"
  printf ',\n.\n!\n?\nhouse\n'; } >"$hf/vocab.txt"
"$convert" "$hf" -o "$tmp/m.safetensors" >"$tmp/out" 2>&1 || { echo "FAIL: convert"; cat "$tmp/out"; exit 1; }
m=$tmp/m.safetensors

# A file (no trailing newline, and with one) and standard input give what --text gives.
printf 'The man was in his house!' >"$tmp/a.txt"
printf 'The man was\nin his house!\n' >"$tmp/b.txt"
"$run" --model "$m" --text "The man was in his house!" --output "$tmp/text.st" >/dev/null 2>&1
"$run" --model "$m" --text-file "$tmp/a.txt" --output "$tmp/file.st" >"$tmp/file.out" 2>&1
"$run" --model "$m" --text-file "$tmp/b.txt" --output "$tmp/nl.st" >/dev/null 2>&1
"$run" --model "$m" --text-file - --output "$tmp/stdin.st" <"$tmp/a.txt" >/dev/null 2>&1
check "--text runs" test -s "$tmp/text.st"
check "--text-file gives the --text outputs" cmp -s "$tmp/text.st" "$tmp/file.st"
check "--text-file with newlines gives the --text outputs" cmp -s "$tmp/text.st" "$tmp/nl.st"
check "--text-file - reads standard input" cmp -s "$tmp/text.st" "$tmp/stdin.st"
check "--text-file names the file in the token line" grep -qF "9 tokens (--text-file $tmp/a.txt): 2 5 1 10" "$tmp/file.out"

# 400 x "the" = [CLS] + 400 + [SEP] = 402 tokens; the model takes 300.
for _ in $(seq 400); do printf 'the '; done >"$tmp/long.txt"
expect_error "a text past the limit is refused with both lengths and the source" 1 \
  "--text-file $tmp/long.txt: 402 tokens is longer than this bert model allows (300, max_position_embeddings of the config); pass --truncation" \
  "$run" --model "$m" --text-file "$tmp/long.txt"
ids() {  # [CLS], n x "the", [SEP]
  local s="2"
  for _ in $(seq "$1"); do s+=" 5"; done
  echo "$s 3"
}
"$run" --model "$m" --text-file "$tmp/long.txt" --truncation --output "$tmp/trunc.st" >"$tmp/trunc.out" 2>&1
"$run" --model "$m" --ids "$(ids 298)" --output "$tmp/ids298.st" >/dev/null 2>&1
check "--truncation cuts to 300 tokens" grep -qF "300 tokens (--text-file $tmp/long.txt, truncated from 402)" "$tmp/trunc.out" || cat "$tmp/trunc.out"
check "--truncation keeps [CLS] and [SEP]: the outputs of those ids" cmp -s "$tmp/trunc.st" "$tmp/ids298.st"
"$run" --model "$m" --text-file "$tmp/long.txt" --max-length 10 --output "$tmp/ten.st" >/dev/null 2>&1
"$run" --model "$m" --ids "$(ids 8)" --output "$tmp/ids8.st" >/dev/null 2>&1
check "--max-length 10: [CLS] + 8 + [SEP]" cmp -s "$tmp/ten.st" "$tmp/ids8.st"
"$run" --model "$m" --text "the man" --text-file "$tmp/long.txt" --max-length 10 >"$tmp/batch.out" 2>&1
check "a batch of --text and --text-file, padded" grep -qF "input_ids          i64[2,10]" "$tmp/batch.out" || cat "$tmp/batch.out"
expect_error "--max-length past the model's limit" 1 \
  "--max-length 301 is longer than this bert model allows (300, max_position_embeddings of the config)" \
  "$run" --model "$m" --text-file "$tmp/long.txt" --max-length 301
expect_error "--max-length below the special tokens" 1 "max_length 1 leaves no room for the 2 special tokens" \
  "$run" --model "$m" --text the --max-length 1

# Bad files and flags.
expect_error "a missing file is named" 1 "--text-file $tmp/none.txt: cannot open" \
  "$run" --model "$m" --text-file "$tmp/none.txt"
expect_error "a directory is refused" 1 "--text-file $tmp: is a directory" "$run" --model "$m" --text-file "$tmp"
printf 'the \xff man' >"$tmp/bad.txt"
expect_error "invalid UTF-8 names the file and the byte" 1 "--text-file $tmp/bad.txt: tokenizer input: invalid UTF-8 at byte 4" \
  "$run" --model "$m" --text-file "$tmp/bad.txt"
expect_error "standard input twice" 2 "standard input (-) can be read only once" \
  "$run" --model "$m" --text-file - --text-file -
expect_error "--truncation without a text" 2 "apply to --text/--text-file only" \
  "$run" --model "$m" --ids "2 3" --truncation
expect_error "--max-length 0" 2 "--max-length: expected 1.." "$run" --model "$m" --text the --max-length 0
expect_error "--text-file with --ids" 2 "give exactly one of" "$run" --model "$m" --ids "2 3" --text-file "$tmp/a.txt"
exit $fail
