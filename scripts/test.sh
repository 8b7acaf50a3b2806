#!/usr/bin/env bash
# The test command: builds whatever is missing, then runs the whole test suite (CTest).
# Extra arguments go to ctest (e.g. -R repacked, -L backend-ops).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$("$root/scripts/build.sh" | tail -1)
cd "$build"
ctest --output-on-failure --timeout 1800 -j "${JOBS:-$(nproc)}" "$@"
