#!/usr/bin/env bash
# Regenerates every file under tests/golden/ with the Python oracles of tests/oracles/.
#   tools/dev/goldens.sh            rewrite tests/golden/ in place
#   tools/dev/goldens.sh --check    regenerate into a temporary copy of tests/oracles/ and
#                                   tests/golden/, compare every file byte for byte with the work
#                                   tree, name each one that differs, exit 1 if any does
# Options: --no-deps (skip tools/dev/deps.sh --goldens), --keep (keep the temporary copy).
#
# The oracles run under Debian's /usr/bin/python3 with Debian's torch, numpy, scipy and msgpack
# (tools/dev/deps.sh --goldens). The tokenizer and MiniLM goldens also need Hugging Face
# `tokenizers`, pinned below and installed from PyPI into build/.cache/goldens-venv, a venv that
# sees the Debian packages; the MiniLM weights come from tools/dev/fetch_minilm.sh. Versions:
# tests/oracles/README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD

tokenizers_version=0.23.3 # the version tests/golden/tokenizer/expected.json records
check=0 deps=1 keep=0
for arg in "$@"; do
  case "$arg" in
    --check) check=1 ;;
    --no-deps) deps=0 ;;
    --keep) keep=1 ;;
    *) echo "goldens: unknown argument $arg (--check, --no-deps, --keep)" >&2; exit 2 ;;
  esac
done

if ((deps)); then tools/dev/deps.sh --goldens; fi
py=/usr/bin/python3
venv=$repo/build/.cache/goldens-venv
if ! "$venv/bin/python" -c "import tokenizers, sys; sys.exit(tokenizers.__version__ != '$tokenizers_version')" 2>/dev/null; then
  echo "goldens: installing tokenizers==$tokenizers_version into $venv"
  rm -rf "$venv"
  "$py" -m venv --system-site-packages "$venv"
  # --no-deps: the oracles use only the Rust core; its hub dependencies would shadow Debian's.
  "$venv/bin/python" -m pip install --quiet --no-deps "tokenizers==$tokenizers_version"
fi
vpy=$venv/bin/python

blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || echo unknown)
"$vpy" - "$blas" <<'PY'
import sys, numpy, scipy, torch, tokenizers
print("goldens: python %s, torch %s, numpy %s, scipy %s, tokenizers %s, BLAS %s" % (
    sys.version.split()[0], torch.__version__, numpy.__version__, scipy.__version__,
    tokenizers.__version__, sys.argv[1]))
PY
case "$blas" in
  *openblas*) echo "goldens: warning: libblas.so.3 is OpenBLAS; the goldens were made with the reference BLAS" \
    "(update-alternatives --config libblas.so.3-x86_64-linux-gnu)" >&2 ;;
esac

# Inputs the generators read from tests/golden/ and never write.
inputs=(tokenizer/bpe_corpus.txt tokenizer/bert/vocab.txt tokenizer/bert/tokenizer.json
  tokenizer/bert/tokenizer_config.json tokenizer/bert/special_tokens_map.json minilm/sentences.txt)

root=$repo
if ((check)); then
  root=$(mktemp -d "${TMPDIR:-/tmp}/longrun-goldens.XXXXXX")
  if ((!keep)); then trap 'rm -rf "$root"' EXIT; fi
  mkdir -p "$root/tests" "$root/ops/include/longrun/ops"
  cp -a tests/oracles tests/golden "$root/tests/"
  cp -a ops/include/longrun/ops/op_list.inc "$root/ops/include/longrun/ops/"
  # Every file a generator writes gets a new mtime; what keeps mtime 0 was not regenerated.
  find "$root/tests/golden" -type f -exec touch -d @0 {} +
fi
o=$root/tests/oracles

minilm_dir=""
if minilm_dir=$(tools/dev/fetch_minilm.sh); then :; else
  echo "goldens: no MiniLM weights (tools/dev/fetch_minilm.sh failed): minilm/ is not regenerated" >&2
  minilm_dir=""
  inputs+=(minilm/minilm.expected.safetensors)
fi

# Order matters: the checkpoint, Flax and MiniLM writers read the model goldens written before them.
run() {
  echo "goldens: $*"
  "$@" | sed 's/^/  /'
}
run "$py" "$o/make_op_goldens.py"
run "$py" "$o/make_model_goldens.py"
run "$py" "$o/make_torch_checkpoints.py"
run "$py" "$o/make_hf_checkpoints.py"
run "$py" "$o/make_fairseq_checkpoints.py"
run "$py" "$o/make_flax_fixtures.py"
run "$vpy" "$o/make_tokenizer_goldens.py"
if [[ -n $minilm_dir ]]; then run "$vpy" "$o/make_minilm_goldens.py" --model-dir "$minilm_dir"; fi

if ((!check)); then
  echo "goldens: done; changed files:"
  git status --short -- tests/golden
  exit 0
fi

# Compare. The legacy torch.save format keys each storage by its memory address, so a
# *.legacy.pt file never reproduces byte for byte; those are compared by value instead.
is_input() {
  local f
  for f in "${inputs[@]}"; do [[ $1 == "$f" ]] && return 0; done
  return 1
}
same=0 legacy=0 input=0 bad=0
while IFS= read -r rel; do
  new=$root/tests/golden/$rel old=tests/golden/$rel
  if [[ ! -e $old ]]; then
    echo "NEW (not in the work tree): tests/golden/$rel"; bad=$((bad + 1))
  elif [[ ! -e $new ]]; then
    echo "MISSING (no generator writes it): tests/golden/$rel"; bad=$((bad + 1))
  elif [[ $(stat -c %Y "$new") == 0 ]]; then
    if is_input "$rel"; then input=$((input + 1)); else
      echo "NOT REGENERATED: tests/golden/$rel"; bad=$((bad + 1))
    fi
  elif cmp -s "$old" "$new"; then
    same=$((same + 1))
  elif [[ $rel == *.legacy.pt ]] && "$py" "$o/torch_equal.py" "$old" "$new"; then
    legacy=$((legacy + 1))
  else
    echo "DIFFERS: tests/golden/$rel"; bad=$((bad + 1))
  fi
done < <({
  (cd tests/golden && find . -type f)
  (cd "$root/tests/golden" && find . -type f)
} | sed 's#^\./##' | sort -u)
echo "goldens --check: $same identical, $legacy legacy torch.save files equal by value," \
  "$input inputs, $bad differing"
if ((keep)); then echo "goldens: regenerated copy kept in $root"; fi
if [[ -z $minilm_dir ]]; then echo "goldens: minilm/minilm.expected.safetensors NOT CHECKED (no weights)"; exit 1; fi
((bad == 0))
