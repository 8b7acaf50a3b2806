#!/usr/bin/env bash
# The Windows port in one command: cross-builds ggml-xdna.dll with MinGW-w64 against a MinGW cross-build of the
# llama.cpp release under test (scripts/build-llama-mingw.sh, cached outside the repository), then runs its tests,
# every Windows program under Wine, with the software XDNA1 behind the plugin's XRT DLL (ggml-xdna-xrt.dll):
#   1. test-backend-ops (the release's, built for Windows) on MUL_MAT and MUL_MAT_ID through the plugin, against the
#      CPU backend, at fixed NPU shares (0.5; MUL_MAT also 1) and, MUL_MAT, at auto (the CI's time: MUL_MAT_ID at
#      auto takes 2-3 minutes under Wine and runs the same NPU side as share 0.5);
#   2. llama-perplexity (Windows) on a generated model: with the plugin's CPU worker alone equal to stock to 1e-12,
#      with half of each multiply on the emulated NPU within 1% of stock;
#   3. the plugin loaded into the MSVC-built ggml of npm's @node-llama-cpp/win-x64 (tests/windows/msvc_load.cpp).
# The generated model comes from the native build's model generator (scripts/build.sh; only that target is built).
#
# usage: scripts/test-windows.sh [--release X]   (default 3.21.1: the release whose MSVC build is loaded in 3)
# Environment: GGML_XDNA_CACHE, JOBS. It builds in build-windows.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/progress.sh"
release=3.21.1
while (( $# )); do
    case "$1" in
        --release) release="${2:?--release needs a node-llama-cpp version}"; shift 2 ;;
        *) echo "usage: scripts/test-windows.sh [--release X]" >&2; exit 2 ;;
    esac
done
say() { echo "[windows] $*"; }
start=$(date +%s)
build=$root/build-windows
cache_root="${GGML_XDNA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ggml-xdna}"

"$root/scripts/deps.sh"
"$root/scripts/deps-windows.sh"
mapfile -t llama < <(LLAMA_RELEASE=$release "$root/scripts/build-llama-mingw.sh")
src=${llama[0]} lbin=${llama[1]}/bin
t_llama=$(date +%s)

# Wine: a prefix of its own in the cache (made once, about half a minute), no debug chatter
export WINEPREFIX="$cache_root/wine-prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
if [[ ! -f "$WINEPREFIX/system.reg" ]]; then
    progress "wine: first start" "$cache_root/wine-prefix.log" sh -c "wineboot -i && wineserver -w"
fi
winpath() { winepath -w "$1" 2>/dev/null; }
# llama.cpp's cross-build is linked as llama.cpp links it, against MinGW's shared runtime DLLs: Wine finds them here
# (the plugin's DLLs need none: check 0 below)
runtime_dirs=""
for dll in libstdc++-6.dll libwinpthread-1.dll; do
    runtime_dirs+="${runtime_dirs:+;}Z:$(realpath "$(dirname "$(x86_64-w64-mingw32-g++-posix -print-file-name=$dll)")")"
done
export WINEPATH="$runtime_dirs"
# The emulator in the DLL has no AVX2 or AVX-512 kernels (it picks them through ELF ifuncs): its largest block takes
# about a second on one thread, and the NPU's self-test runs every block once. On a loaded 2-core machine one ran past
# the 5 s default wait, the NPU stayed off, and llama-perplexity ran as without the plugin. These tests check results;
# the timeout's handling is tested natively (tests/e2e/npu-faults.sh).
export XDNA_TEST_NPU_TIMEOUT_MS=60000

# the plugin and its XRT DLL (the software XDNA1), the emulator's kernel set, the MSVC load test
mkdir -p "$build"
if [[ ! -f "$build/CMakeCache.txt" ]] || ! grep -q "^LLAMA_BUILD:PATH=${llama[1]}$" "$build/CMakeCache.txt"; then
    progress "plugin (MinGW): configure" "$build/logs/configure.log" \
        cmake -S "$root" -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$root/cmake/windows/mingw-w64.cmake" \
        -DLLAMA_SRC="$src" -DLLAMA_BUILD="${llama[1]}"
fi
progress "plugin (MinGW): build" "$build/logs/build.log" \
    cmake --build "$build" -j "${JOBS:-$(nproc)}" --target ggml-xdna ggml-xdna-xrt xdna-emu-kernel-set xdna-msvc-load
t_build=$(date +%s)
plugin=$(winpath "$build/bin/ggml-xdna.dll")
say "built $build/bin/ggml-xdna.dll ($(( t_build - t_llama )) s; llama.cpp for Windows: $(( t_llama - start )) s)"

passed=0 failed=0
check() {   # check NAME COMMAND...: runs it, counts it
    local name=$1; shift
    local t0=$(date +%s)
    if "$@" >"$build/logs/$name.log" 2>&1; then
        passed=$((passed + 1)); say "PASS $name ($(( $(date +%s) - t0 )) s): $(grep -m1 -E 'passed' "$build/logs/$name.log" || true)"
    else
        failed=$((failed + 1)); say "FAIL $name ($build/logs/$name.log)"; tail -30 "$build/logs/$name.log"
    fi
}

# 0. the DLL needs no MinGW runtime DLL: it imports only Windows' own DLLs and ggml's
imports() { x86_64-w64-mingw32-objdump -p "$1" | sed -n 's/^\tDLL Name: //p' | tr 'A-Z' 'a-z' | sort | tr '\n' ' '; }
no_mingw_runtime() {
    local f bad=0
    for f in "$build/bin/ggml-xdna.dll" "$build/bin/ggml-xdna-xrt.dll"; do
        echo "$(basename "$f") imports: $(imports "$f")"
        imports "$f" | grep -qE 'libstdc|libgcc|libwinpthread' && bad=1
    done
    (( bad == 0 )) && echo "1 passed, 0 failed"
}
check dll-imports no_mingw_runtime

# 1. test-backend-ops under Wine, against the release's CPU backend. The Windows programs run through wrappers that
#    the Linux test scripts call like the native tools: stdout and stderr together, Windows' CRLF line ends as LF.
wrap="$build/wine-bin"
mkdir -p "$wrap"
for tool in test-backend-ops llama-perplexity; do
    printf '#!/usr/bin/env bash\nset -o pipefail\nwine "%s" "$@" 2>&1 | tr -d "\\r"\n' "$lbin/$tool.exe" >"$wrap/$tool"
    chmod +x "$wrap/$tool"
done
# MUL_MAT_ID with every row on the NPU is left out: its 300 cases take the emulator (built without its AVX-512 and
# AVX2 kernels for Windows: it picks them through ELF ifuncs) several minutes, and share 0.5 runs the NPU's side of them.
for run in "MUL_MAT 30 0.5" "MUL_MAT 30 1" "MUL_MAT 30 auto" "MUL_MAT_ID 100 0.5"; do
    set -- $run
    check "backend-ops-$1-share-$3" env GGML_XDNA_NPU=emulator GGML_XDNA_NPU_SHARE=$3 \
        bash "$root/tests/backend/run-test-backend-ops.sh" "$wrap/test-backend-ops" "$plugin" "$1" "$2"
done

# 2. llama-perplexity under Wine on a model of the native model generator
native=$(XDNA_TARGETS=xdna-gen-model "$root/scripts/build.sh" | tail -1)
check perplexity bash "$root/tests/windows/wine-perplexity.sh" "$wrap" "$plugin" "$native/bin/xdna-gen-model" \
    "$root/data/accuracy-text.txt" llama-tiny Q4_0

# 3. the MSVC-built ggml of npm's @node-llama-cpp/win-x64 (its ggml.v0.4.0.dll is the registry stock llama.cpp for
#    Windows calls ggml.dll, the name the plugin imports: it is kept under that name)
msvc="$cache_root/msvc-ggml-win-x64-$release"
if [[ ! -f "$msvc/ggml.dll" ]]; then
    rm -rf "$msvc.tmp" && mkdir -p "$msvc.tmp"
    (cd "$msvc.tmp" && npm pack --silent "@node-llama-cpp/win-x64@$release" >/dev/null && tar -xzf ./*.tgz)
    mkdir -p "$msvc" && cp "$msvc.tmp"/package/bins/win-x64/ggml-*.dll "$msvc/"
    cp "$msvc.tmp"/package/bins/win-x64/ggml.v*.dll "$msvc/ggml.dll"
    rm -rf "$msvc.tmp"
fi
# (no MinGW runtime on WINEPATH: the plugin, its XRT DLL and the test program need none)
check msvc-load env -u WINEPATH GGML_XDNA_NPU=emulator GGML_XDNA_NPU_SHARE=0.5 \
    wine "$build/bin/xdna-msvc-load.exe" "$(winpath "$msvc")" "$plugin"

say "$passed passed, $failed failed in $(( $(date +%s) - start )) s (llama.cpp for Windows $(( t_llama - start )) s, plugin $(( t_build - t_llama )) s, tests $(( $(date +%s) - t_build )) s)"
(( failed == 0 ))
