#!/usr/bin/env bash
# The test suite's own programs under the sanitizers: AddressSanitizer + UndefinedBehaviorSanitizer, then
# ThreadSanitizer on the threaded parts (the device workers' threads, the warm-up, the planner, the emulator).
# The tests that run llama.cpp's own programs are left out (those are not instrumented). CI runs this after the
# test suite, on every submission.
# usage: scripts/sanitize.sh [address|thread]... [-- CTEST-ARGS...]   (default: both, the selection below)
#   after --, ctest's own arguments replace the selection, e.g. the conversion kernels' cases:
#   scripts/sanitize.sh address -- -L convert
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/deps.sh"
mapfile -t llama < <("$root/scripts/build-llama.sh")
kinds=() ctest_args=()
while (( $# )); do
    if [[ $1 == -- ]]; then shift; ctest_args=("$@"); break; fi
    kinds+=("$1"); shift
done
(( ${#kinds[@]} )) || kinds=(address thread)
# the test programs of the threaded and memory-handling parts (llama.cpp's own programs are not instrumented; the
# conversion kernels' cases, label convert, are left out here for time: scripts/sanitize.sh address -- -L convert)
select='config|claim_test|async_worker|planner_|cost_model|npu-rows|npu-pairs|npu-ahead|npu-driven|npu_driven|npu_engine|npu_resident|npu_shared|npu_activation_arena|npu_cpu_convert|npu_moe_engine|npu_help|lent_thread|cpu_repack|NpuRuntime|NpuManifest|NpuFiles|EmulatorXrt|EmuMatmul|gpu_worker|gpu_split|gpu_device|own_file'
tests=(-R "$select" -LE convert) more_targets=()
if (( ${#ctest_args[@]} )); then tests=("${ctest_args[@]}") more_targets=(test-convert); fi
status=0
for kind in "${kinds[@]}"; do
    case $kind in
        address) flags="address,undefined"; env_vars=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
                 LSAN_OPTIONS=suppressions=$root/tests/sanitizers/lsan.supp) ;;
        thread)  flags="thread"; env_vars=(TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/sanitizers/tsan.supp
                 OMP_NUM_THREADS=1) ;;
        *) echo "unknown sanitizer '$kind' (address or thread)"; exit 2 ;;
    esac
    build="$root/build-$kind"
    echo "== $flags: building in $build"
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLLAMA_SRC="${llama[0]}" \
        -DLLAMA_BUILD="${llama[1]}" -DGGML_XDNA_SANITIZE="$flags" >/dev/null
    # only what the selected tests run (the plugin, the emulator's kernel set, the test programs)
    cmake --build "$build" -j "${JOBS:-$(nproc)}" --target ggml-xdna xdna-emu-kernel-set test-config test-config-docs \
        test-claim test-async-worker test-planner test-repacked test-npu-rows test-npu-pairs test-npu-ahead test-npu-driven test-npu-resident test-npu-engine test-npu-runtime test-npu-files test-own-file \
        test-emu-matmul test-gpu-worker xdna-with-rpc-server "${more_targets[@]}" >/dev/null
    echo "== $flags: running the tests"
    (cd "$build" && env "${env_vars[@]}" ctest --output-on-failure -j "${JOBS:-$(nproc)}" "${tests[@]}") || status=1
done
exit $status
