#!/usr/bin/env bash
# The plugin against another llama.cpp release of the supported range (default: the oldest, node-llama-cpp 3.20.0):
# builds that release's smoke targets (ggml, the CPU backend, test-backend-ops, llama-perplexity) and the plugin against
# it, then runs
#   1. test-backend-ops of that release on MUL_MAT and MUL_MAT_ID through the plugin, half the rows on the (emulated)
#      NPU, against the CPU backend;
#   2. one llama-perplexity run through the plugin, equal to the stock CPU's (tests/e2e/perplexity-matches-stock.sh);
#   3. each release's tool with the other release's plugin: it must refuse to load with one line naming both versions.
# The default release's build (scripts/build.sh) must exist: its model generator and plugin are used in 2 and 3.
# usage: scripts/smoke-release.sh [--release X | --llama SRC_DIR BUILD_DIR]   (JOBS as for the builds)
#   --llama: a llama.cpp source tree and its build (BUILD_SHARED_LIBS=ON, GGML_BACKEND_DL=ON, with test-backend-ops
#            and llama-perplexity) instead of a release fetched and built here
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
release=3.20.0 own_src= own_build=
while (( $# )); do
    case "$1" in
        --release) release="${2:?--release needs a version}"; shift 2 ;;
        --llama) own_src="${2:?--llama SRC_DIR BUILD_DIR}" own_build="${3:?--llama SRC_DIR BUILD_DIR}"; release=own; shift 3 ;;
        *) echo "usage: scripts/smoke-release.sh [--release X | --llama SRC_DIR BUILD_DIR]" >&2; exit 2 ;;
    esac
done
say() { echo "[smoke $release] $*"; }
start=$(date +%s)

# the default build: the plugin of the default release and its model generator
main_build=$(env -u LLAMA_SRC -u LLAMA_BUILD -u LLAMA_RELEASE -u GGML_XDNA_BUILD_DIR "$root/scripts/build.sh" | tail -1)
main_llama_bin=$(sed -n 's/^LLAMA_BUILD:PATH=//p' "$main_build/CMakeCache.txt")/bin
main_llama_src=$(sed -n 's/^LLAMA_SRC:PATH=//p' "$main_build/CMakeCache.txt")

# the release's smoke targets, and the plugin alone against them
if [[ -n "$own_src" ]]; then
    llama=("$own_src" "$own_build")
else
    mapfile -t llama < <(env -u LLAMA_SRC -u LLAMA_BUILD "$root/scripts/build-llama.sh" --release "$release" --smoke)
fi
src=${llama[0]} bin=${llama[1]}/bin
build="$root/build-$release"
mkdir -p "$build"
extra=()
command -v ccache >/dev/null && extra+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S "$root" -B "$build" -G Ninja -DLLAMA_SRC="$src" -DLLAMA_BUILD="${llama[1]}" -DGGML_XDNA_BUILD_TESTS=OFF \
    -DGGML_XDNA_BUILD_TOOLS=OFF "${extra[@]}" >"$build/smoke-configure.log" 2>&1 || { tail -20 "$build/smoke-configure.log"; exit 1; }
grep -E "ggml-xdna: built against" "$build/smoke-configure.log" | sed "s/^-- /[smoke $release] /"
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target ggml-xdna >"$build/smoke-build.log" 2>&1 || { tail -30 "$build/smoke-build.log"; exit 1; }
plugin="$build/bin/libggml-xdna.so"
say "built the plugin in $(( $(date +%s) - start )) s (with the release's llama.cpp)"

passed=0 failed=0
check() {   # check NAME COMMAND...: runs it, counts it
    local name=$1; shift
    local t0=$(date +%s)
    if "$@" >"$build/smoke-$name.log" 2>&1; then
        passed=$((passed + 1)); say "PASS $name ($(( $(date +%s) - t0 )) s): $(grep -m1 -E 'passed|refused' "$build/smoke-$name.log" || true)"
    else
        failed=$((failed + 1)); say "FAIL $name"; tail -30 "$build/smoke-$name.log"
    fi
}

# 1. test-backend-ops, half the rows on the NPU (the kernel set does not depend on ggml: the default build's)
[[ -f "$main_build/kernels/manifest.json" ]] && export GGML_XDNA_NPU_KERNELS="$main_build/kernels/manifest.json"
for op in "MUL_MAT 30" "MUL_MAT_ID 100"; do
    set -- $op
    check "backend-ops-$1" env GGML_XDNA_NPU=emulator GGML_XDNA_NPU_SHARE=0.5 bash "$root/tests/backend/run-test-backend-ops.sh" "$bin/test-backend-ops" "$plugin" "$1" "$2"
done

# 2. one perplexity run: the model generated (and cached) by the default build, read by this release's tool
model=$("$main_build/bin/xdna-gen-model" --model llama-tiny --type Q4_0 --llama-src "$main_llama_src" --llama-bin "$main_llama_bin")
check perplexity bash "$root/tests/e2e/perplexity-matches-stock.sh" "$bin" "$plugin" "$main_build/bin/xdna-gen-model" \
    "$main_llama_src" "$root/data/accuracy-text.txt" llama-tiny Q4_0

# 3. a plugin loaded into the other release: one line, naming both versions, and no backend
refuses() {   # refuses TOOL_BIN_DIR PLUGIN
    local out lines
    out=$(GGML_BACKEND_PATH="$2" "$1/test-backend-ops" test -b XDNA -o MUL_MAT 2>&1 || true)
    # the plugin's own lines (the loader's next line names the file, libggml-xdna.so, not counted)
    lines=$(grep -c "ggml-xdna: " <<<"$out" || true)
    grep "ggml-xdna" <<<"$out" || true
    if grep -q "Backend XDNA\|ggml-xdna: loaded" <<<"$out"; then echo "the plugin loaded"; return 1; fi
    [[ $lines == 1 ]] && grep -qE "ggml-xdna: built for ggml [0-9.]+ but loaded into ggml [0-9.]+; not loading" <<<"$out" \
        && echo "refused: 1 line"
}
check mismatch-new-plugin-old-tools refuses "$bin" "$main_build/bin/libggml-xdna.so"
check mismatch-old-plugin-new-tools refuses "$main_llama_bin" "$plugin"

say "$(( $(date +%s) - start )) s in all"
echo "$passed passed, $failed failed"
(( failed == 0 ))
