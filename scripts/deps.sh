#!/usr/bin/env bash
# Installs the Debian packages the build, tests and tools need, if any is missing (a no-op on a prepared machine).
set -euo pipefail
missing=()
# programs: any install will do (Node.js and npm, for instance, often come from elsewhere than Debian)
declare -A programs=([cmake]=cmake [ninja]=ninja-build [g++]=g++ [git]=git [npm]=npm [python3]=python3
                     [ccache]=ccache [gnuplot]=gnuplot-nox [flock]=util-linux)
for p in "${!programs[@]}"; do
    command -v "$p" >/dev/null || missing+=("${programs[$p]}")
done
# libraries and headers
for p in libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
(( ${#missing[@]} == 0 )) && exit 0
source "$(dirname "${BASH_SOURCE[0]}")/progress.sh"
echo "[deps] installing: ${missing[*]}" >&2
SUDO=; [[ $(id -u) -ne 0 ]] && SUDO=sudo
log="${GGML_XDNA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ggml-xdna}/deps.log"
progress "packages: index" "$log" $SUDO apt-get update -q
progress "packages: ${#missing[@]} to install" "$log.install" \
    env DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q -o APT::Status-Fd=1 "${missing[@]}"
