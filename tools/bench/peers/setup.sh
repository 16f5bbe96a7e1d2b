#!/usr/bin/env bash
# Prepares the environment of the ONNX Runtime / OpenVINO peer benchmark (README.md beside
# this file): a venv of Debian's /usr/bin/python3 (LONGRUN_PYTHON_BIN to override) under
# build/.cache/peers-venv with --system-site-packages, so Debian's python3-torch (installed
# with apt-get when missing) exports the ONNX models; onnxruntime, openvino and onnx from
# PyPI; and the longrun package built from this checkout with `pip install .`, as
# tools/dev/python_test.sh does it (ccache when present, the build requirements in the venv
# and no build isolation, a kept CMake build directory build/py-peers, so a second run
# rebuilds only what changed). Prints the venv's python on the last line.
#   tools/bench/peers/setup.sh            then: build/.cache/peers-venv/bin/python tools/bench/peers/peers_bench.py
# Exits non-zero, naming the step, when anything cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/../../.."
python=${LONGRUN_PYTHON_BIN:-/usr/bin/python3}
venv=build/.cache/peers-venv

if ! "$python" -c "import torch" 2>/dev/null; then
  echo "setup: $python cannot import torch; installing Debian's python3-torch" >&2
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: apt-get needs root: run 'apt-get update && apt-get install -y python3-torch'" >&2
    exit 1
  fi
  apt-get update -q && apt-get install -y -q python3-torch
fi

if [[ ! -x $venv/bin/python ]] || [[ $(readlink -f "$venv/bin/python") != $(readlink -f "$python") ]]; then
  rm -rf "$venv"
  "$python" -m venv --system-site-packages "$venv"
fi
py=$venv/bin/python
"$py" -m pip install -q --upgrade pip
# numpy < 2: Debian's torch is compiled against numpy 1.x and cannot exchange arrays with a
# numpy 2 that the venv would otherwise put in front of the system's.
peers=(onnxruntime openvino onnx "numpy<2")
if ! "$py" -m pip install -q "${peers[@]}"; then
  echo "setup: pip cannot install ${peers[*]} for $("$py" --version 2>&1)" >&2
  exit 1
fi
tools/dev/pip_install_longrun.sh "$py" build/py-peers >&2
(cd build && "$PWD/../$py" -c "
import longrun, numpy, onnx, onnxruntime, openvino, torch
print('setup: longrun', longrun.version(), '| onnxruntime', onnxruntime.__version__, '| openvino',
      openvino.__version__, '| onnx', onnx.__version__, '| torch', torch.__version__, '| numpy', numpy.__version__)
" >&2)
echo "$py"
