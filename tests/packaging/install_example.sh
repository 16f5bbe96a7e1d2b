#!/usr/bin/env bash
# Installs the built library into a temporary prefix, builds tools/examples/hello_graph
# against the INSTALLED package (find_package(longrun)), runs it and checks its output.
# Usage: install_example.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/tools/examples/hello_graph" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" >/dev/null
out=$("$work/build/hello_graph" reference)
echo "$out"
# Row 0: x = [1,2] -> logits [1, 2, 1+2-1] -> softmax [0.155362, 0.422319, 0.422319].
grep -q "0.155362 0.422319 0.422319" <<<"$out"
