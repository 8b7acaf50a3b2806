#!/usr/bin/env bash
# Fetch and build the pinned llama.cpp (DESIGN.md §2) into a versioned cache outside the repository.
#
# The pinned release is the git bundle shipped inside npm's node-llama-cpp@3.21.1 (ggml 0.23.0, commit 80fb11a).
# It is built as releases are built (BUILD_SHARED_LIBS=ON, GGML_BACKEND_DL=ON) with the one CPU variant this
# machine needs, plus the RPC backend (the GPU worker's stand-in in tests).
#
# A complete cache is reused in seconds; an incomplete or stale one (different pin, flags or missing tool) is rebuilt.
# Prints two lines on stdout: the source directory, then the build directory.
#
# Environment:
#   GGML_XDNA_CACHE       cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/ggml-xdna)
#   LLAMA_SRC, LLAMA_BUILD  use your own llama.cpp source and build directories of the same version instead
#   JOBS                  parallel build jobs (default: nproc)
#   LLAMA_TOOLS           build (and require) only these of the tools below, e.g. "llama-quantize llama-bench" for
#                         scripts/run.sh; the rest are built into the same cache when a later caller asks for them
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/progress.sh"

PIN_NPM="node-llama-cpp@3.21.1"
PIN_COMMIT="80fb11a"
TOOLS=(llama-cli llama-completion llama-server llama-bench llama-perplexity llama-quantize test-backend-ops ggml-rpc-server)
read -r -a want <<<"${LLAMA_TOOLS:-${TOOLS[*]}}"

log() { echo "[build-llama] $*" >&2; }

if [[ -n "${LLAMA_SRC:-}" || -n "${LLAMA_BUILD:-}" ]]; then
    : "${LLAMA_SRC:?set both LLAMA_SRC and LLAMA_BUILD}" "${LLAMA_BUILD:?set both LLAMA_SRC and LLAMA_BUILD}"
    [[ -f "$LLAMA_SRC/ggml/src/ggml-backend-impl.h" ]] || { log "LLAMA_SRC=$LLAMA_SRC is not a llama.cpp source tree"; exit 1; }
    [[ -f "$LLAMA_BUILD/bin/libggml-base.so" ]] || { log "LLAMA_BUILD=$LLAMA_BUILD has no bin/libggml-base.so (need BUILD_SHARED_LIBS=ON GGML_BACKEND_DL=ON)"; exit 1; }
    printf '%s\n%s\n' "$LLAMA_SRC" "$LLAMA_BUILD"
    exit 0
fi

# The CPU variant: the x86 ISA extensions this machine has. They are part of the cache key.
isa_flags=()
if [[ "$(uname -m)" == "x86_64" ]]; then
    cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
    has() { [[ "$cpu_flags" == *" $1 "* ]]; }
    isa_flags+=(-DGGML_SSE42=$(has sse4_2 && echo ON || echo OFF))
    isa_flags+=(-DGGML_AVX=$(has avx && echo ON || echo OFF))
    isa_flags+=(-DGGML_AVX2=$(has avx2 && echo ON || echo OFF))
    isa_flags+=(-DGGML_BMI2=$(has bmi2 && echo ON || echo OFF))
    isa_flags+=(-DGGML_FMA=$(has fma && echo ON || echo OFF))
    isa_flags+=(-DGGML_F16C=$(has f16c && echo ON || echo OFF))
    isa_flags+=(-DGGML_AVX_VNNI=$(has avx_vnni && echo ON || echo OFF))
    isa_flags+=(-DGGML_AVX512=$(has avx512f && echo ON || echo OFF))
    isa_flags+=(-DGGML_AVX512_VBMI=$(has avx512vbmi && echo ON || echo OFF))
    isa_flags+=(-DGGML_AVX512_VNNI=$(has avx512_vnni && echo ON || echo OFF))
    isa_flags+=(-DGGML_AVX512_BF16=$(has avx512_bf16 && echo ON || echo OFF))
fi

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

key=$(printf '%s\n' "$PIN_NPM" "$PIN_COMMIT" "${cmake_flags[@]}" "${TOOLS[@]}" | grep -v LAUNCHER | sha1sum | cut -c1-10)
cache_root="${GGML_XDNA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ggml-xdna}"
dir="$cache_root/llama.cpp-$PIN_COMMIT-$key"
src="$dir/src"
build="$dir/build"
stamp="$dir/complete"

is_complete() {
    [[ -f "$stamp" ]] || return 1
    [[ -f "$build/bin/libggml-base.so" && -f "$build/bin/libggml.so" ]] || return 1
    ls "$build"/bin/libggml-cpu*.so >/dev/null 2>&1 || return 1
    local t
    for t in "${want[@]}"; do [[ -x "$build/bin/$t" ]] || return 1; done
    [[ -f "$src/ggml/src/ggml-backend-impl.h" ]] || return 1
}

# one build at a time: a second caller waits, then finds the cache complete
mkdir -p "$cache_root"
exec 9>"$cache_root/.lock-$PIN_COMMIT-$key"
flock -n 9 || { log "waiting for another build of the same llama.cpp to finish"; flock 9; }

if is_complete; then
    log "reusing $build"
    printf '%s\n%s\n' "$src" "$build"
    exit 0
fi

start=$(date +%s)
if [[ -f "$stamp" && -f "$build/CMakeCache.txt" && -f "$src/ggml/src/ggml-backend-impl.h" ]]; then
    # an earlier caller built some of the tools: the rest go into the same build
    log "building the missing tools (${want[*]}) of the pinned llama.cpp in $build"
else
    log "building the pinned llama.cpp ($PIN_NPM, commit $PIN_COMMIT) into $dir"
    rm -rf "$dir"
    mkdir -p "$dir"

    # 1. the source: the git bundle inside the npm package.
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    command -v npm >/dev/null || { log "npm is needed to fetch the pinned llama.cpp (apt-get install npm)"; exit 1; }
    (cd "$tmp" && npm pack --silent "$PIN_NPM" >/dev/null)
    tar -xzf "$tmp"/node-llama-cpp-*.tgz -C "$tmp" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
    git clone --quiet "$tmp/package/llama/gitRelease.bundle" "$src" 2>/dev/null
    got=$(git -C "$src" rev-parse --short=7 HEAD)
    [[ "$got" == "$PIN_COMMIT" ]] || { log "the bundle holds commit $got, expected $PIN_COMMIT"; exit 1; }
    cp "$tmp/package/llama/llama.cpp.info.json" "$dir/"

    # 2. the build's configuration.
    progress "llama.cpp: configure" "$dir/configure.log" cmake -S "$src" -B "$build" "${cmake_flags[@]}"
fi

# 3. the build: the CPU backend module is named per variant in DL builds; every target the tools load (the RPC
#    backend only for the tools that need it).
targets=(ggml ggml-base ggml-cpu "${want[@]}")
[[ " ${want[*]} " == *" ggml-rpc-server "* ]] && targets+=(ggml-rpc)
progress "llama.cpp: build (${#want[@]} tools)" "$dir/build.log" cmake --build "$build" -j "${JOBS:-$(nproc)}" --target "${targets[@]}"

is_complete_but_stamp() { touch "$stamp"; is_complete; }
is_complete_but_stamp || { log "build finished but tools are missing in $build/bin"; rm -f "$stamp"; exit 1; }
log "built in $(( $(date +%s) - start )) s"
printf '%s\n%s\n' "$src" "$build"
