#!/usr/bin/env bash
# Installs the built library into a temporary prefix and builds the examples against the
# INSTALLED package, not the build tree:
#   tools/examples/hello_graph   C++, CMake find_package(longrun)  -> graph builder API
#   tools/examples/cpp_classify  C++, CMake find_package(longrun)  -> golden model, C++ API
#   tools/examples/c_classify    C99, pkg-config longrun (liblongrun.so) -> same model, C API
# runs them and checks their output (the C program's logits must equal the C++ program's).
# Usage: install_example.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S "$src/tools/examples/hello_graph" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" >/dev/null
out=$("$work/build/hello_graph" reference)
echo "$out"
# Row 0: x = [1,2] -> logits [1, 2, 1+2-1] -> softmax [0.155362, 0.422319, 0.422319].
grep -q "0.155362 0.422319 0.422319" <<<"$out"

golden="$src/tests/golden/models"
model="$golden/fourier_lra_l0_r02.safetensors"
cmake -S "$src/tools/examples/cpp_classify" -B "$work/cpp" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/cpp" >/dev/null
cpp_out=$("$work/cpp/cpp_classify" "$model" "$golden/fourier_lra_l0_r02.n7_pad.io.safetensors")
echo "$cpp_out"

libdir=$(dirname "$(find "$prefix" -name longrun.pc)")/..
export PKG_CONFIG_PATH="$libdir/pkgconfig"
ids=$(sed -n 's/^row 0 ids: //p' <<<"$cpp_out")
# shellcheck disable=SC2046 # pkg-config output is a list of flags
cc -std=c99 -pedantic -Wall -Wextra -Werror "$src/tools/examples/c_classify/main.c" -o "$work/c_classify" \
  $(pkg-config --cflags --libs longrun) -Wl,-rpath,"$(cd "$libdir" && pwd)"
# shellcheck disable=SC2086 # ids are separate arguments
c_out=$("$work/c_classify" "$model" $ids)
echo "$c_out"
grep -q "^longrun $(pkg-config --modversion longrun)\$" <<<"$c_out"
# The same ids through the C API (shared library) and the C++ API (static): same bits.
c_logits=$(grep '^logits:' <<<"$c_out")
cpp_logits=$(grep '^logits:' <<<"$cpp_out")
if [[ "$c_logits" != "$cpp_logits" ]]; then
  echo "C and C++ logits differ:"$'\n'"  C:   $c_logits"$'\n'"  C++: $cpp_logits" >&2
  exit 1
fi
# The shared library exports the C API only.
so=$(find "$prefix" -name 'liblongrun.so' | head -1)
if [[ -n "$so" ]]; then
  others=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRW]$/ && $3 !~ /^lr_/ {print $3}' | head -5)
  if [[ -n "$others" ]]; then
    echo "liblongrun.so exports more than lr_*: $others" >&2
    exit 1
  fi
  echo "liblongrun.so exports $(nm -D --defined-only "$so" | grep -c ' lr_') lr_* symbols and nothing else"
fi
