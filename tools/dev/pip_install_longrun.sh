#!/usr/bin/env bash
# Installs the Python package from this checkout into a venv: `pip install .` without build
# isolation (scikit-build-core and nanobind are installed into the venv first, so nanobind's
# sources keep one path), in a kept CMake build directory, with the compiler, generator and
# flags of build/ci (warnings as errors) so ccache, when present, serves the library objects
# that any of these builds compiled (the venv's sysconfig would otherwise name
# x86_64-linux-gnu-g++, a different command line for ccache).
#   tools/dev/pip_install_longrun.sh VENV_PYTHON BUILD_DIR [EXTRA_PIP_ARGS...]
# Prints how long the build took on stderr.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=$1
build_dir=$2
shift 2
"$py" -m pip install -q scikit-build-core nanobind
if command -v ccache >/dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}
  export CMAKE_C_COMPILER_LAUNCHER=${CMAKE_C_COMPILER_LAUNCHER:-ccache}
fi
start=$(date +%s)
CC=${CC:-cc} CXX=${CXX:-c++} CMAKE_GENERATOR="Unix Makefiles" CMAKE_BUILD_PARALLEL_LEVEL=${LONGRUN_JOBS:-$(nproc)} \
  "$py" -m pip install -q --no-build-isolation . -C build-dir="$build_dir" -C cmake.define.LONGRUN_WERROR=ON "$@"
echo "pip install . into $(dirname "$(dirname "$py")") took $(($(date +%s) - start)) s" >&2
