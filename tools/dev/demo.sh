#!/usr/bin/env bash
# The main job: installs missing Debian packages, builds longrun (Release) and runs the
# demo through the runtime on every backend. Arguments go to longrun-demo (see --help).
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs=${LONGRUN_JOBS:-$(nproc)}

tools/dev/deps.sh
cmake --preset default >/dev/null
cmake --build --preset default -j "$jobs" --target longrun-demo
exec build/default/tools/longrun-demo "$@"
