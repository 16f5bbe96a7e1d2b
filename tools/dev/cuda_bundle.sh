#!/usr/bin/env bash
# Packs what the cuda checks need into one folder for a GPU machine that has the CUDA
# toolkit but none of longrun's Debian dependencies: the stripped test and tool binaries of
# a build with the CUDA backend, the shared libraries they need that are not part of the
# C/C++ runtime or CUDA (oneTBB, FFTW, hwloc), and the source path the tests have compiled in
# (their golden files are read from there). tools/dev/cuda_device_check.sh runs it.
#   tools/dev/cuda_bundle.sh [BUILD_DIR] [BUNDLE_DIR]   (defaults: build/ci .devrun)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/ci}
bundle=${2:-.devrun}
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib"
for b in tests/longrun_conformance_tests tests/longrun_model_tests tools/longrun-bench tools/longrun-run; do
  [[ -x "$build/$b" ]] || { echo "cuda_bundle: $build/$b is missing: build it first" >&2; exit 1; }
  cp "$build/$b" "$bundle/bin/"
  strip "$bundle/bin/$(basename "$b")"
done
# Libraries outside glibc, libstdc++/libgcc and CUDA: the device image has its own of those.
ldd "$bundle"/bin/* | awk '/=>/ {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++*|libgcc_s*|ld-linux*|libpthread*|libdl.so*|librt.so*|libcu*|libnv*) ;;
    *) cp -L "$lib" "$bundle/lib/" ;;
  esac
done
pwd > "$bundle/source_dir"
grep -qx "/$bundle/" .git/info/exclude 2>/dev/null || echo "/$bundle/" >> .git/info/exclude
du -sh "$bundle"
ls "$bundle/lib"
