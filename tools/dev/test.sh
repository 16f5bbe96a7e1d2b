#!/usr/bin/env bash
# Runs every test: installs missing Debian packages, builds the Release configuration with
# warnings as errors and runs the whole CTest suite, then builds the ASan+UBSan
# configuration and runs the unit and loader tests under it. Exits non-zero on any failure.
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

if [[ "${LONGRUN_SKIP_ASAN:-0}" != 1 ]]; then
  echo "== ASan+UBSan build =="
  cmake --preset ci-asan >/dev/null
  cmake --build --preset ci-asan -j "$jobs" --target longrun_unit_tests longrun_loader_tests
  echo "== Tests (ASan+UBSan: unit, loader) =="
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS=suppressions="$PWD/tools/dev/lsan.supp" \
    ctest --preset ci-asan -L 'unit|loader' -j "$jobs"
fi
