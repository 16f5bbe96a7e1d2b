#!/usr/bin/env bash
# Builds and tests the Python package (python/README.md): creates a venv with Debian's
# /usr/bin/python3 (LONGRUN_PYTHON_BIN to override) under build/.cache/py-venv, installs the
# package from this checkout into it with `pip install .` (scikit-build-core + nanobind from
# PyPI; the CMake build directory build/py-test is kept, so a second run rebuilds only what
# changed, and ccache is used when present) with Ray Serve for longrun.serve, and runs pytest
# on python/tests (including a two-node Ray cluster on 127.0.0.1, about a minute). A plain
# `pip install .` uses build/py (pyproject.toml), with the default generator.
#   tools/dev/python_test.sh [LONGRUN_RUN]   the longrun-run binary of the C++ reference results
#                                            (default build/ci/tools/longrun-run)
# Extra pytest arguments: LONGRUN_PYTEST_ARGS. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${LONGRUN_PYTHON_BIN:-/usr/bin/python3}
venv=build/.cache/py-venv
export LONGRUN_RUN=${1:-$PWD/build/ci/tools/longrun-run}

if [[ ! -x $venv/bin/python ]] || [[ $(readlink -f "$venv/bin/python") != $(readlink -f "$python") ]]; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q pytest numpy
# The serve extra (Ray Serve) for longrun.serve's tests, which then must not skip.
"$venv/bin/python" -m pip install -q "ray[serve]"
export LONGRUN_REQUIRE_SERVE=1
tools/dev/pip_install_longrun.sh "$venv/bin/python" build/py-test
# From outside the checkout, so `import longrun` is the installed package.
(cd build && "$PWD/../$venv/bin/python" -c "import longrun; print('python: longrun', longrun.version(), 'imported from', longrun.__file__)")
"$venv/bin/python" -m pytest -q python/tests ${LONGRUN_PYTEST_ARGS:-}
