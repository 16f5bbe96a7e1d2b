#!/usr/bin/env bash
# LONGRUN_OPS end to end: configures and builds the library with only the ops a BERT model
# needs (tests and tools off; objects come from ccache where the main build made them),
# links the C example (tools/examples/c_classify) against it, runs the bert golden model, and
# checks that the fourier-lra golden model, which needs a spectral op, fails with an error naming the
# op and the option. Prints the static library's size next to the full build's. Costs one
# library build (tests and tools off; about a minute with ccache, a few without).
# Usage: op_subset.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
# A sibling of BUILD_DIR (same depth, same flags: ccache serves the objects the two share).
sub="${build%/}_op_subset"
# What a bert build needs: the ops of models/bert's graphs (add attention cast embedding
# layer_norm matmul reshape slice tanh transpose for bert_tiny), plus the other elementwise,
# normalisation and layout ops, whose kernel files those need anyway. Left out: the spectral
# ops (dct, idct, spectral_filter), top-k selection, scans/pooling, roll, sparse attention.
bert_ops="matmul;add;sub;mul;scale;exp;tanh;relu;gelu;gelu_tanh;cast;softmax;layer_norm;embedding"
bert_ops+=";concat;slice;pad;transpose;reshape;where;attention"
cache() { sed -n "s/^$1:[A-Z]*=\(.*\)$/\1/p" "$build/CMakeCache.txt"; }
launcher=$(cache CMAKE_CXX_COMPILER_LAUNCHER)
cmake -S "$src" -B "$sub" -DCMAKE_BUILD_TYPE=Release -DLONGRUN_CUDA=OFF -DLONGRUN_BUILD_TESTS=OFF \
  -DLONGRUN_BUILD_TOOLS=OFF -DLONGRUN_SHARED=ON "-DLONGRUN_OPS=$bert_ops" \
  "-DLONGRUN_WERROR=$(cache LONGRUN_WERROR)" "-DLONGRUN_SANITIZE=$(cache LONGRUN_SANITIZE)" \
  ${launcher:+"-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher"} >/dev/null
cmake --build "$sub" --target longrun longrun_shared -j"${LONGRUN_TEST_JOBS:-$(nproc)}" >"$sub/build.log" 2>&1 ||
  { tail -40 "$sub/build.log"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -std=c99 -O2 "$src/tools/examples/c_classify/main.c" -o "$work/c_classify" -I"$src/capi/include" \
  -L"$sub" -llongrun -Wl,-rpath,"$sub"
ok=$("$work/c_classify" "$src/tests/golden/models/bert_tiny.safetensors" 2 7 11 5 9 3 2)
grep -q '^logits:' <<<"$ok"
echo "bert_tiny on the bert-only build: $(grep '^logits:' <<<"$ok" | cut -c1-60)..."
if "$work/c_classify" "$src/tests/golden/models/fourier_lra_l0_r02.safetensors" 1 2 3 2>"$work/err" >/dev/null; then
  echo "fourier-lra ran on a build without dct" >&2
  exit 1
fi
cat "$work/err"
grep -Eq "uses op '(dct|idct|spectral_filter)', which this build of longrun leaves out" "$work/err"
grep -q "LONGRUN_OPS" "$work/err"
human() { numfmt --to=iec-i --suffix=B "$1"; }
full=$(stat -c %s "$build/liblongrun.a")
part=$(stat -c %s "$sub/liblongrun.a")
echo "liblongrun.a: all ops $(human "$full"), bert ops only $(human "$part") ($((100 * part / full))%)"
# Also kept in the build dir: tools/dev/test.sh prints it as CI's CPU-only size report.
bash "$src/tools/dev/size_report.sh" "$sub" | tee "$sub/size_report.txt"
