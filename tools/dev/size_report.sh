#!/usr/bin/env bash
# Prints what longrun costs an application in bytes: the static library, the shared library
# (stripped), and the C example (tools/examples/c_classify) linked statically against
# liblongrun.a and stripped, i.e. the runtime code an embedding program carries (system
# libraries oneTBB, FFTW and libstdc++ stay shared). Whether the CUDA backend is in the
# build is printed with it (LONGRUN_CUDA=OFF leaves it out), and so is the op subset
# (LONGRUN_OPS; tests/packaging/op_subset.sh reports a bert-only build this way).
# Usage: size_report.sh BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
lib=$(dirname "$(find "$work/prefix" -name liblongrun.a | head -1)")
# The installed package records whether the CUDA backend is in the library.
cuda=$(sed -n 's/^set(LONGRUN_HAVE_CUDA \(.*\))$/\1/p' "$(find "$work/prefix" -name longrunConfig.cmake | head -1)")
human() { numfmt --to=iec-i --suffix=B "$1"; }
size_of() { stat -c %s "$1"; }
# The private libraries (oneTBB, FFTW, and the CUDA libraries when the backend is built in)
# come from the installed longrun.pc; -llongrun is replaced by the static archive.
private_libs=$(PKG_CONFIG_PATH="$lib/pkgconfig" pkg-config --static --libs longrun | sed 's/\(^\| \)-llongrun\( \|$\)/ /')
# shellcheck disable=SC2086
cc -std=c99 -O2 "$src/tools/examples/c_classify/main.c" -o "$work/c_classify_static" -I"$work/prefix/include" \
  "$lib/liblongrun.a" $private_libs
strip -o "$work/c_classify_stripped" "$work/c_classify_static"
ops=$(sed -n 's/^LONGRUN_OPS:STRING=\(.*\)$/\1/p' "$build/CMakeCache.txt" 2>/dev/null || true)
echo "== size report ($build; CUDA backend in the library: ${cuda:-unknown}; ops: ${ops:-all}) =="
printf '  %-44s %10s\n' "liblongrun.a (static, C++ and C API)" "$(human "$(size_of "$lib/liblongrun.a")")"
if [[ -f "$lib/liblongrun.so" ]]; then
  strip -o "$work/liblongrun.so.stripped" "$(readlink -f "$lib/liblongrun.so")"
  printf '  %-44s %10s\n' "liblongrun.so (shared, C API, stripped)" "$(human "$(size_of "$work/liblongrun.so.stripped")")"
fi
printf '  %-44s %10s\n' "c_classify, static liblongrun, stripped" "$(human "$(size_of "$work/c_classify_stripped")")"
