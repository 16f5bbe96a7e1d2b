#!/usr/bin/env bash
# Installs the Debian packages longrun needs, skipping those already present. Idempotent.
#   tools/dev/deps.sh            build + test dependencies
#   tools/dev/deps.sh --goldens  also the Python stack that regenerates tests/golden
set -euo pipefail

packages=(pkg-config libfftw3-dev libtbb-dev doctest-dev nlohmann-json3-dev)
if [[ "${1:-}" == "--goldens" ]]; then
  packages+=(python3-torch python3-scipy python3-numpy)
fi
if [[ "${1:-}" == "--bench-peers" ]]; then packages+=(libopenblas-dev libdnnl-dev); fi  # longrun-bench peers

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
