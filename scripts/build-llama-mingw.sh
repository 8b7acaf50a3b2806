#!/usr/bin/env bash
# Cross-builds a llama.cpp release for 64-bit Windows with MinGW-w64 (the plugin DLL is built against it, and its test
# programs run under Wine), into a versioned cache outside the repository like scripts/build-llama.sh's native builds.
#
# Only what the Windows tests run: ggml-base, ggml (the backend registry), the one CPU backend variant this machine
# needs, llama, test-backend-ops and llama-perplexity. Built as releases are (BUILD_SHARED_LIBS=ON, GGML_BACKEND_DL=ON),
# with the DLLs named as llama.cpp's Windows releases name them (ggml-base.dll, ggml-cpu-*.dll: no "lib" prefix, or
# the backend loader would not find the CPU backend), without OpenMP (ggml's own thread pool) and without curl.
#
# Usage: build-llama-mingw.sh [--release X]   (default $LLAMA_RELEASE, else 3.21.1: the release whose MSVC build npm's
#        @node-llama-cpp/win-x64 ships, which the load test of scripts/test-windows.sh loads the same DLL into)
# Prints two lines on stdout: the source directory, then the build directory.
# Environment: GGML_XDNA_CACHE (cache root), JOBS (parallel jobs, default nproc).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/progress.sh"
source "$root/scripts/llama-common.sh"
log() { echo "[build-llama-mingw] $*" >&2; }

release="${LLAMA_RELEASE:-3.21.1}"
while (( $# )); do
    case "$1" in
        --release) release="${2:?--release needs a node-llama-cpp version}"; shift 2 ;;
        *) log "unknown argument $1 (usage: build-llama-mingw.sh [--release X])"; exit 2 ;;
    esac
done
declare -A KNOWN_COMMITS=([3.20.0]=c2fd87e [3.21.1]=80fb11a [3.22.1]=de3ff81)
TOOLS=(test-backend-ops llama-perplexity)
LIBS=(ggml ggml-base ggml-cpu llama)

command -v x86_64-w64-mingw32-g++-posix >/dev/null || { log "MinGW-w64 is missing (scripts/deps-windows.sh installs it)"; exit 1; }
mapfile -t isa_flags < <(llama_isa_flags)
cmake_flags=(
    -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE="$root/cmake/windows/mingw-w64.cmake"
    -DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_OPENMP=OFF
    -DCMAKE_SHARED_LIBRARY_PREFIX= -DCMAKE_SHARED_MODULE_PREFIX=
    "-DCMAKE_C_FLAGS=-Wa,-muse-unaligned-vector-move -include $root/cmake/windows/mingw-thread-power.h"
    -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_EXAMPLES=OFF
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF
    "${isa_flags[@]}"
)
cache_root="${GGML_XDNA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ggml-xdna}"
mkdir -p "$cache_root"
key=$(printf '%s\n' "node-llama-cpp@$release" "$(x86_64-w64-mingw32-g++-posix -dumpversion)" "${cmake_flags[@]}" \
      "$(cat "$root/cmake/windows/mingw-w64.cmake" "$root/cmake/windows/mingw-thread-power.h")" | sha1sum | cut -c1-10)
dir="$cache_root/llama.cpp-mingw-$release-$key"
src="$dir/src" build="$dir/build"

is_complete() {
    local f
    for f in ggml-base.dll ggml.dll "${TOOLS[@]/%/.exe}"; do [[ -f "$build/bin/$f" ]] || return 1; done
    ls "$build"/bin/ggml-cpu*.dll >/dev/null 2>&1 && [[ -f "$src/ggml/src/ggml-backend-impl.h" ]]
}

exec 9>"$dir.lock"
flock -n 9 || { log "waiting for another build of the same llama.cpp to finish"; flock 9; }
if [[ -f "$dir/configured" ]] && is_complete; then
    log "reusing $build"
    printf '%s\n%s\n' "$src" "$build"
    exit 0
fi

start=$(date +%s)
if [[ ! -f "$dir/configured" ]]; then
    log "cross-building llama.cpp of node-llama-cpp@$release for Windows into $dir"
    rm -rf "$dir" && mkdir -p "$dir"
    llama_fetch_release "$release" "${KNOWN_COMMITS[$release]:-}" "$dir"
    progress "llama.cpp (MinGW): configure" "$dir/configure.log" cmake -S "$src" -B "$build" "${cmake_flags[@]}"
    touch "$dir/configured"
fi
progress "llama.cpp (MinGW): build" "$dir/build.log" \
    cmake --build "$build" -j "${JOBS:-$(nproc)}" --target "${LIBS[@]}" "${TOOLS[@]}"
is_complete || { log "build finished but DLLs or programs are missing in $build/bin"; exit 1; }
log "built in $(( $(date +%s) - start )) s"
printf '%s\n%s\n' "$src" "$build"
