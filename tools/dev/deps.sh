#!/usr/bin/env bash
# Installs the Debian packages longrun needs, skipping those already present. Idempotent.
#   tools/dev/deps.sh            build dependencies
#   tools/dev/deps.sh --tests    also clang + its libFuzzer runtime (the bounded fuzz run), and
#                                python3-venv + python3-dev for the Python package's venv build
#                                (tools/dev/python_test.sh; pip fetches the rest from PyPI)
#   tools/dev/deps.sh --goldens  also the Python stack that regenerates tests/golden (tools/dev/goldens.sh)
#   tools/dev/deps.sh --bench-peers  also OpenBLAS and oneDNN (longrun-bench peers)
# Flags combine.
set -euo pipefail

packages=(pkg-config libfftw3-dev libtbb-dev doctest-dev nlohmann-json3-dev)
for flag in "$@"; do
  case "$flag" in
    --tests) packages+=(clang libclang-rt-14-dev python3-venv python3-dev) ;;
    --goldens) packages+=(python3-torch python3-scipy python3-numpy python3-msgpack python3-venv) ;;  # tools/dev/goldens.sh
    --bench-peers) packages+=(libopenblas-dev libdnnl-dev) ;;
    *) echo "deps: unknown flag $flag (--tests, --goldens, --bench-peers)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
for tool in cmake g++; do
  command -v "$tool" >/dev/null || missing+=("$([[ $tool == g++ ]] && echo g++ || echo cmake)")
done

if ((${#missing[@]} == 0)); then
  echo "deps: all Debian packages present"
  exit 0
fi
echo "deps: installing ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
