#!/usr/bin/env bash
# Builds everything a fresh machine needs: Debian packages, a llama.cpp release (cached outside the repository; the
# default is the newest supported, scripts/build-llama.sh), then the plugin, its tools and tests into build/ (or
# $GGML_XDNA_BUILD_DIR). Prints the build directory last.
#
# Another release of the supported range: LLAMA_RELEASE=3.20.0 GGML_XDNA_BUILD_DIR=build-3.20.0 scripts/build.sh
# Your own llama.cpp checkout: LLAMA_SRC=... scripts/build.sh (built into the cache), or LLAMA_SRC=... LLAMA_BUILD=...
# (your own build of it, used as it is)
# XDNA_TARGETS="ggml-xdna xdna-gen-model ..." builds only those targets (scripts/run.sh: what the main job needs);
# LLAMA_TOOLS likewise for the llama.cpp tools (scripts/build-llama.sh).
# The GPU worker's Vulkan tests run on the release's own Vulkan backend (npm, scripts/fetch-vulkan.sh) on Mesa's
# lavapipe; XDNA_VULKAN=0 leaves them out (so does your own llama.cpp checkout: its release is not known here).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${GGML_XDNA_BUILD_DIR:-$root/build}
source "$root/scripts/progress.sh"

"$root/scripts/deps.sh"
mapfile -t llama < <("$root/scripts/build-llama.sh")
llama_src=${llama[0]} llama_build=${llama[1]}
vulkan=
if [[ -z "${LLAMA_SRC:-}" && "${XDNA_VULKAN:-1}" != 0 ]]; then
    default_release=$(sed -n 's/^DEFAULT_RELEASE="\(.*\)"$/\1/p' "$root/scripts/build-llama.sh")
    vulkan=$("$root/scripts/fetch-vulkan.sh" "${LLAMA_RELEASE:-$default_release}" "$llama_build")
fi

extra=()
command -v ccache >/dev/null && extra+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
if [[ ! -f "$build/CMakeCache.txt" ]] || ! grep -q "^LLAMA_BUILD:PATH=$llama_build$" "$build/CMakeCache.txt" ||
   ! grep -qx "XDNA_VULKAN_DIR:PATH=$vulkan" "$build/CMakeCache.txt"; then
    progress "plugin: configure" "$build/logs/configure.log" \
        cmake -S "$root" -B "$build" -G Ninja -DLLAMA_SRC="$llama_src" -DLLAMA_BUILD="$llama_build" "${extra[@]}" \
        -DXDNA_VULKAN_DIR="$vulkan" ${GGML_XDNA_CMAKE_ARGS:-}
fi
read -r -a targets <<<"${XDNA_TARGETS:-all}"
progress "plugin: build$([[ -n "${XDNA_TARGETS:-}" ]] && echo " (${#targets[@]} targets)")" "$build/logs/build.log" cmake --build "$build" -j "${JOBS:-$(nproc)}" --target "${targets[@]}"
echo "$build"
