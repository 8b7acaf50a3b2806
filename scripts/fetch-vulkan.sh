#!/usr/bin/env bash
# The Vulkan backend of a llama.cpp release, for the GPU worker's tests on Mesa's lavapipe (a CPU-type Vulkan device;
# tests/gpu/vulkan-env.sh selects it). Installs the Vulkan loader and Mesa's drivers (Debian), fetches the npm package
# @node-llama-cpp/linux-x64-vulkan of the same release (its libggml-vulkan.so is the GGML_BACKEND_DL backend built
# from that release) into the cache, and makes a folder holding it beside a link libggml-base.so -> the given
# build's libggml-base.so.0 (the name the package's library asks for, found through its $ORIGIN run path, so that it
# shares the process's one ggml-base). Prints the folder; prints nothing (and says why on stderr) where it cannot.
# usage: fetch-vulkan.sh <release> <llama build dir>
set -euo pipefail
release=$1 llama_build=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="${GGML_XDNA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ggml-xdna}"
log() { echo "[fetch-vulkan] $*" >&2; }

[[ "$(uname -sm)" == "Linux x86_64" ]] || { log "the npm package is for Linux x86-64 only"; exit 0; }
[[ -e "$llama_build/bin/libggml-base.so.0" ]] || { log "$llama_build/bin/libggml-base.so.0 is missing"; exit 0; }

missing=()
for p in libvulkan1 mesa-vulkan-drivers; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
    source "$root/scripts/progress.sh"
    SUDO=; [[ $(id -u) -ne 0 ]] && SUDO=sudo
    progress "packages: ${missing[*]}" "$cache/vulkan-deps.log" \
        env DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q -o APT::Status-Fd=1 "${missing[@]}" >&2 ||
        { log "cannot install ${missing[*]}"; exit 0; }
fi

pkg="$cache/npm/linux-x64-vulkan-$release"
if [[ ! -f "$pkg/package/bins/linux-x64-vulkan/libggml-vulkan.so" ]]; then
    mkdir -p "$pkg"
    (cd "$pkg" && npm pack --silent "@node-llama-cpp/linux-x64-vulkan@$release" >/dev/null 2>"$pkg/npm.log" &&
        tar xzf node-llama-cpp-linux-x64-vulkan-"$release".tgz package/bins/linux-x64-vulkan/libggml-vulkan.so) ||
        { log "cannot fetch @node-llama-cpp/linux-x64-vulkan@$release (see $pkg/npm.log)"; exit 0; }
fi
# one folder per llama.cpp build: the link names that build's ggml-base
dir="$cache/vulkan-$release-$(echo -n "$llama_build" | sha256sum | cut -c1-10)"
mkdir -p "$dir"
ln -sf "$pkg/package/bins/linux-x64-vulkan/libggml-vulkan.so" "$dir/libggml-vulkan.so"
ln -sf "$llama_build/bin/libggml-base.so.0" "$dir/libggml-base.so"
echo "$dir"
