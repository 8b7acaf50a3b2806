#!/usr/bin/env bash
# Installs what the Windows build and its tests need beyond scripts/deps.sh, if missing: Debian's MinGW-w64 cross
# compilers (mingw-w64) and Wine (wine64) to run the Windows programs. A no-op on a prepared machine.
set -euo pipefail
missing=()
command -v x86_64-w64-mingw32-g++-posix >/dev/null || missing+=(mingw-w64)
command -v wine >/dev/null || missing+=(wine64)
(( ${#missing[@]} == 0 )) && exit 0
source "$(dirname "${BASH_SOURCE[0]}")/progress.sh"
echo "[deps-windows] installing: ${missing[*]}" >&2
SUDO=; [[ $(id -u) -ne 0 ]] && SUDO=sudo
log="${GGML_XDNA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ggml-xdna}/deps-windows.log"
progress "packages: index" "$log" $SUDO apt-get update -q
progress "packages: ${#missing[@]} to install" "$log.install" \
    env DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q -o APT::Status-Fd=1 "${missing[@]}"
