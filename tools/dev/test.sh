#!/usr/bin/env bash
# Runs every test: installs missing Debian packages, builds the Release configuration with
# warnings as errors and runs the whole CTest suite, builds the Python package with
# `pip install .` into a venv and runs its pytest suite (tools/dev/python_test.sh), then builds the ASan+UBSan
# configuration and runs the unit, loader, C API and reliability tests under it, builds the
# ThreadSanitizer configuration and runs the concurrency test under it, and prints the size
# report. Exits non-zero on any failure.
# Idempotent: a second run reuses the build directories.
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs=${LONGRUN_JOBS:-$(nproc)}

tools/dev/deps.sh --tests

echo "== Release build (warnings as errors) =="
cmake --preset ci >/dev/null
cmake --build --preset ci -j "$jobs"
echo "== Tests (Release) =="
ctest --preset ci -j "$jobs"

if [[ "${LONGRUN_SKIP_PYTHON:-0}" != 1 ]]; then
  echo "== Python package (pip install . into a venv; pytest, against build/ci's longrun-run) =="
  LONGRUN_JOBS=$jobs tools/dev/python_test.sh "$PWD/build/ci/tools/longrun-run"
fi

if [[ "${LONGRUN_SKIP_ASAN:-0}" != 1 ]]; then
  echo "== ASan+UBSan build =="
  cmake --preset ci-asan >/dev/null
  cmake --build --preset ci-asan -j "$jobs" --target longrun_unit_tests longrun_loader_tests \
    longrun_capi_tests longrun_reliability_tests
  echo "== Tests (ASan+UBSan: unit, loader, capi, reliability) =="
  # Reliability under ASan: fewer runs (100 per thread, 1000-run soak) and no RSS bound
  # (ASan's quarantine keeps freed memory on purpose); LSan checks the soak for leaks.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS=suppressions="$PWD/tools/dev/lsan.supp" \
    LONGRUN_RELIABILITY_RUNS=100 LONGRUN_SOAK_RUNS=1000 LONGRUN_SOAK_WARMUP=100 LONGRUN_SOAK_RSS_CHECK=0 \
    ctest --preset ci-asan -L 'unit|loader|capi|reliability' -j "$jobs"
fi

if [[ "${LONGRUN_SKIP_TSAN:-0}" != 1 ]]; then
  echo "== ThreadSanitizer build =="
  cmake --preset ci-tsan >/dev/null
  cmake --build --preset ci-tsan -j "$jobs" --target longrun_reliability_tests
  echo "== Tests (TSan: 8 sessions x 8 threads x 1000 runs over one model) =="
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 LONGRUN_RELIABILITY_RUNS=1000 \
    build/ci-tsan/tests/longrun_reliability_tests --test-case='concurrency*'
fi

echo "== Size report =="
tools/dev/size_report.sh build/ci
# The CPU-only library (CUDA off) with the ops a BERT model needs, built by packaging.op_subset.
if [[ -f build/ci_op_subset/size_report.txt ]]; then
  echo "== Size report, CPU only (LONGRUN_CUDA=OFF, bert ops; from packaging.op_subset) =="
  cat build/ci_op_subset/size_report.txt
fi
