#!/usr/bin/env bash
# Installs the Debian packages the build, tests and tools need, if any is missing (a no-op on a prepared machine).
set -euo pipefail
pkgs=(cmake ninja-build g++ git npm python3 libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev ccache gnuplot-nox)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
(( ${#missing[@]} == 0 )) && exit 0
echo "[deps] installing: ${missing[*]}" >&2
SUDO=; [[ $(id -u) -ne 0 ]] && SUDO=sudo
$SUDO apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >&2
