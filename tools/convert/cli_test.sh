#!/usr/bin/env bash
# CTest convert.cli: longrun-convert's exit codes (0 ok, 1 unreadable/unmappable input,
# 2 usage), --help, --inspect, and a conversion whose output is a loadable native file.
#   tools/convert/cli_test.sh LONGRUN_CONVERT SOURCE_DIR
set -u
bin=$1
src=$2
ck=$src/tests/golden/checkpoints
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {  # rc description command...
  local want=$1 what=$2
  shift 2
  "$@" >"$tmp/out" 2>&1
  local rc=$?
  if [[ $rc != "$want" ]]; then
    echo "FAIL: $what: exit $rc, expected $want"
    cat "$tmp/out"
    fail=1
  else
    echo "ok: $what (exit $rc)"
  fi
}
expect 0 "--help" "$bin" --help
grep -q "fourier-lra-official" "$tmp/out" || { echo "FAIL: --help lists no source layout"; fail=1; }
expect 2 "no arguments" "$bin"
expect 2 "unknown option" "$bin" --bogus x
expect 2 "missing -o" "$bin" "$ck/mixed.pt"
expect 2 "bad --dtype" "$bin" --dtype f64 "$ck/mixed.pt" -o "$tmp/x.safetensors"
expect 2 "bad --from" "$bin" --from jax "$ck/namespace.pt" -o "$tmp/x.safetensors"
expect 1 "--from flax on a torch file" "$bin" --from flax "$ck/namespace.pt" -o "$tmp/x.safetensors"
expect 1 "fairseq checkpoint that does not map" "$bin" --from fairseq "$ck/namespace.pt" -o "$tmp/x.safetensors"
expect 0 "--inspect fairseq" "$bin" --from fairseq --inspect "$ck/namespace.pt"
grep -q 'hyper-parameters (args): {"arch":"transformer"' "$tmp/out" || { echo "FAIL: fairseq args"; cat "$tmp/out"; fail=1; }
expect 1 "missing input" "$bin" --inspect "$tmp/none.pt"
# A named pipe is refused at once (no writer ever opens it: a blocking open would hang).
mkfifo "$tmp/pipe.pt"
expect 1 "named pipe as input (--inspect)" timeout 20 "$bin" --inspect "$tmp/pipe.pt"
expect 1 "named pipe as input" timeout 20 "$bin" "$tmp/pipe.pt" -o "$tmp/pipe.safetensors"
expect 1 "malformed input" "$bin" --inspect "$ck/lra_vanilla.config.json"
expect 0 "--inspect zip" "$bin" --inspect "$ck/mixed.pt"
grep -q "weights.f32_t  f32\[3, 4\]  strided" "$tmp/out" || { echo "FAIL: --inspect output"; cat "$tmp/out"; fail=1; }
expect 1 "unmappable (wrong config)" "$bin" --arch fourier-lra --config "$ck/lra_vanilla.config.json" \
  --set num_classes=5 "$ck/lra_vanilla.official.pt" -o "$tmp/bad.safetensors"
[[ -e "$tmp/bad.safetensors" ]] && { echo "FAIL: output written on error"; fail=1; }
expect 0 "convert legacy" "$bin" --arch fourier-lra --config "$ck/lra_vanilla.config.json" \
  "$ck/lra_vanilla.legacy.pt" -o "$tmp/m.safetensors"
grep -q "tensors mapped: 40" "$tmp/out" || { echo "FAIL: summary"; cat "$tmp/out"; fail=1; }
sum=$(sha256sum "$ck/lra_vanilla.legacy.pt" | cut -d' ' -f1)
grep -q "$sum" "$tmp/m.safetensors" || { echo "FAIL: source sha256 not in the output metadata"; fail=1; }
expect 0 "--inspect output" "$bin" --inspect "$tmp/m.safetensors"
grep -q "longrun.arch = fourier-lra" "$tmp/out" || { echo "FAIL: output metadata"; cat "$tmp/out"; fail=1; }
expect 0 "HF directory, arch from config.json" "$bin" "$ck/hf_bert" -o "$tmp/hf.safetensors"
grep -q "layout hf-bert" "$tmp/out" || { echo "FAIL: hf-bert layout"; cat "$tmp/out"; fail=1; }
grep -q "ignored cls.seq_relationship.weight: next-sentence" "$tmp/out" || { echo "FAIL: ignore reason"; fail=1; }
expect 0 "HF directory to fourier-bert by --set" "$bin" "$ck/hf_bert" --set 'filter_layers=[1]' \
  --set filter_ratio=0.5 -o "$tmp/hf.safetensors"
grep -q "fourier-bert, layout hf-bert" "$tmp/out" || { echo "FAIL: fourier-bert"; cat "$tmp/out"; fail=1; }
expect 1 "layout for another arch" "$bin" "$ck/hf_bert" --layout hf-bart -o "$tmp/hf2.safetensors"
expect 0 "HF BART directory to fourier-bart by --arch and --set" "$bin" --arch fourier-bart \
  --set 'dct_layers=[2]' --set dct_percentage=0.3 "$ck/hf_fourier_bart" -o "$tmp/fb1.safetensors"
grep -q "fourier-bart, layout hf-bart" "$tmp/out" || { echo "FAIL: fourier-bart"; cat "$tmp/out"; fail=1; }
sed 's/^{/{"dct_layers": [2], "dct_percentage": 0.3,/' "$ck/hf_fourier_bart/config.json" >"$tmp/fourier_bart.json"
expect 0 "HF BART directory to fourier-bart by --config" "$bin" --arch fourier-bart \
  --config "$tmp/fourier_bart.json" "$ck/hf_fourier_bart" -o "$tmp/fb2.safetensors"
cmp -s "$tmp/fb1.safetensors" "$tmp/fb2.safetensors" || { echo "FAIL: --set and --config differ"; fail=1; }
expect 2 "unknown model_type" "$bin" --config "$ck/lra_vanilla.config.json" "$ck/hf_bert" -o "$tmp/hf2.safetensors"
expect 0 "fairseq transformer" "$bin" --from fairseq "$ck/fairseq_transformer.pt" -o "$tmp/ft.safetensors"
grep -q "transformer, layout fairseq-transformer" "$tmp/out" || { echo "FAIL: fairseq layout"; cat "$tmp/out"; fail=1; }
expect 0 "fairseq bart picks fairseq-bart" "$bin" --from fairseq "$ck/fairseq_bart.pt" -o "$tmp/fb.safetensors"
grep -q "bart, layout fairseq-bart" "$tmp/out" || { echo "FAIL: fairseq-bart layout"; cat "$tmp/out"; fail=1; }
expect 0 "fairseq roberta" "$bin" --from fairseq "$ck/fairseq_roberta.pt" -o "$tmp/fr.safetensors"
grep -q "roberta, layout fairseq-roberta" "$tmp/out" || { echo "FAIL: fairseq-roberta layout"; cat "$tmp/out"; fail=1; }
grep -q "ignored classification_heads.sentence_classification_head.dense.weight: fine-tuning" "$tmp/out" ||
  { echo "FAIL: classification head not reported"; cat "$tmp/out"; fail=1; }
cat >"$tmp/combiner.json" <<'JSON'
{"attention": "axial", "causal": true, "emb_dim": 64, "max_len": 160, "max_seg_len": 8, "mlp_dim": 32,
 "num_heads": 4, "num_layers": 2, "qkv_dim": 32, "vocab_size": 40}
JSON
expect 0 "flax combiner" "$bin" --arch combiner --config "$tmp/combiner.json" \
  "$src/tests/golden/flax/combiner_axial_causal.msgpack" -o "$tmp/c.safetensors"
grep -q "combiner, layout flax-combiner" "$tmp/out" || { echo "FAIL: flax-combiner layout"; cat "$tmp/out"; fail=1; }
grep -q "tensors mapped: 37" "$tmp/out" || { echo "FAIL: flax summary"; cat "$tmp/out"; fail=1; }
expect 0 "--inspect flax" "$bin" --inspect "$src/tests/golden/flax/combiner_axial_causal.msgpack"
grep -q "format: flax-msgpack" "$tmp/out" && grep -q "note: state/step = 1200" "$tmp/out" ||
  { echo "FAIL: flax --inspect"; cat "$tmp/out"; fail=1; }
expect 0 "fastformer.json as shipped" "$bin" --arch fastformer --config "$ck/fastformer_d64.fastformer.json" \
  "$ck/fastformer_official.pt" -o "$tmp/ff.safetensors"
grep -q "config 'enable_fp16' \"False\": fp16 autocast" "$tmp/out" ||
  { echo "FAIL: dropped config keys not listed"; cat "$tmp/out"; fail=1; }
expect 1 "official LRA config with an attention longrun lacks" "$bin" --arch fourier-lra \
  --config "$ck/fourier_lra_l12_r05.model_config.json" --set attn_type=none "$ck/fourier_lra_l12_r05.official.pt" \
  -o "$tmp/bad2.safetensors"
grep -q "field 'attn_type'" "$tmp/out" || { echo "FAIL: attn_type not named"; cat "$tmp/out"; fail=1; }
# --quantize int8: the linear-layer weights as I8 + scales, listed by --inspect; smaller file.
gm=$src/tests/golden/models
expect 0 "--quantize int8" "$bin" --quantize int8 "$gm/bert_tiny.safetensors" -o "$tmp/q.safetensors"
grep -q "quantized int8: 14 linear-layer weights" "$tmp/out" || { echo "FAIL: quantize summary"; cat "$tmp/out"; fail=1; }
(( $(stat -c %s "$tmp/q.safetensors") < $(stat -c %s "$gm/bert_tiny.safetensors") )) ||
  { echo "FAIL: quantized file not smaller"; fail=1; }
expect 0 "--inspect quantized" "$bin" --inspect "$tmp/q.safetensors"
grep -q "quantized: 14 weights, int8 per output channel" "$tmp/out" &&
  grep -q "encoder.layer.0.attention.self.query.weight  i8\[64, 64\]  quantized int8 nk" "$tmp/out" &&
  grep -q "encoder.layer.0.attention.self.query.weight.scale  f32\[64\]" "$tmp/out" ||
  { echo "FAIL: --inspect of a quantized file"; cat "$tmp/out"; fail=1; }
expect 1 "a quantized file as input" "$bin" --quantize int8 "$tmp/q.safetensors" -o "$tmp/q2.safetensors"
grep -q "holds quantized weights" "$tmp/out" || { echo "FAIL: quantized input"; cat "$tmp/out"; fail=1; }
expect 2 "bad --quantize" "$bin" --quantize int4 "$gm/bert_tiny.safetensors" -o "$tmp/q3.safetensors"
expect 2 "--quantize with --inspect" "$bin" --quantize int8 --inspect "$gm/bert_tiny.safetensors"
expect 0 "--quantize int8 --dtype bf16" "$bin" --quantize int8 --dtype bf16 "$gm/bert_tiny.safetensors" \
  -o "$tmp/qb.safetensors"
exit $fail
