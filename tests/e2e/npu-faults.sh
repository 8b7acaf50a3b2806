#!/usr/bin/env bash
# The NPU failing must never give a wrong result: faults injected through the software XDNA1 (a run that errors,
# times out or returns NaN) make the engine recompute the rows on the CPU; repeated faults switch the NPU off; a
# weight cache too small for the model converts weights on every call, with the same results, and says so once; a
# locked-memory limit keeps weights out of NPU buffers (same results), or the NPU off.
# Every run has every row on the NPU (GGML_XDNA_NPU_SHARE=1), asked for explicitly (GGML_XDNA_NPU=emulator), without
# the load-time warm-up (nothing in the background), and is compared with the same run without faults; the clean run
# must reach the runs the faults are set for.
# usage: npu-faults.sh <llama bin> <plugin> <xdna-gen-model> <llama src> <text>
set -euo pipefail
bin=$1 plugin=$2 gen=$3 src=$4 text=$5
model=$("$gen" --model llama-tiny --type Q4_0 --llama-src "$src" --llama-bin "$bin")
source "$(dirname "${BASH_SOURCE[0]}")/../lib/perplexity.sh"
chunks=4   # compared: the running perplexity after the fourth; one more is computed (tests/lib/perplexity.sh)
args=(-m "$model" -f "$text" -c 128 --chunks $((chunks + 1)) -b 128 -t 2)
passed=0 failed=0

perplexity() {   # perplexity <env...>: prints the log
    ppl_run $chunks env GGML_XDNA_NPU=emulator GGML_XDNA_NPU_SHARE=1 GGML_XDNA_NPU_WARM=0 GGML_BACKEND_PATH="$plugin" "$@" \
        "$bin/llama-perplexity" "${args[@]}" || true
}
final() { ppl_values $chunks "$1" | sed -n "${chunks}p"; }   # empty: no value
check() {   # check <name> <condition...>
    local name=$1; shift
    if "$@"; then echo "ok   $name"; passed=$((passed + 1)); else echo "FAIL $name"; failed=$((failed + 1)); fi
}
close_to() { awk -v a="$1" -v b="$2" -v tol="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= tol * b) }'; }

clean=$(perplexity)
ref=$(final "$clean")
echo "no faults: PPL $ref"
check "clean run computed on the NPU" grep -q "ggml-xdna: route" <<<"$(perplexity GGML_XDNA_DEBUG=1)"
runs=$(grep -c 'xdna-emu\] run #' <<<"$(perplexity XDNA_EMU_LOG=2)" || true)
echo "the clean run makes $runs NPU runs"
check "the clean run reaches the faulty runs below (more than 28 NPU runs)" test "$runs" -gt 28

# The self-test at start makes the first 20 runs (each of the 18 bf16 blocks once, the narrow and the wide tile's,
# then a small multiply in two), so the faults below start past it. The time limit for a run (the 'timeout' fault hangs two) leaves room for the
# self-test's slowest block, computed exactly by the emulator (512 x 1,024 x 512 took 0.37-0.41 s on the 2-CPU VM
# before its AVX2 tile, over the 300 ms once used here).
for fault in error timeout nan; do
    out=$(perplexity XDNA_EMU_FAULT=$fault XDNA_EMU_FAULT_AFTER=26 XDNA_EMU_FAULT_COUNT=2 XDNA_TEST_NPU_TIMEOUT_MS=3000)
    p=$(final "$out")
    echo "fault '$fault' on runs 27-28: PPL ${p:-none}"
    check "$fault: rows recomputed on the CPU" grep -q "recomputed on the CPU" <<<"$out"
    check "$fault: result still right (PPL within 1% of the clean run)" close_to "${p:-0}" "$ref" 0.01
done

# Every NPU run slower than the plugin's timeout, which is shorter than either driver's watchdog: each call's rows go
# to the CPU at its timeout, the runs stay parked until the driver ends them. In-tree (job timeout 60 s, past the end
# of the run): the NPU stops taking rows once 3 are parked and the process exits with them in flight. Out-of-tree: the
# TDR (every 700 ms here, 2 s by default: past this short run; the plugin's timeout 500 ms) ends them; they are reaped
# (at the latest while the runtime waits for them at exit). No abort, and the result is exactly the CPU's (every row
# computed there), as with no NPU at all.
cpu_only=$(final "$(perplexity XDNA_EMU_OTHER_CONTEXTS=6)")
for driver in intree outoftree; do
    settings=(XDNA_EMU_DRIVER=intree XDNA_TEST_NPU_TIMEOUT_MS=1000)
    [[ $driver == outoftree ]] && settings=(XDNA_EMU_DRIVER=outoftree XDNA_EMU_TDR_MS=700 XDNA_TEST_NPU_TIMEOUT_MS=500)
    # the last check reads a line written at exit, which the pinned llama.cpp's logger loses now and then
    # (tests/lib/perplexity.sh): a run without it is run again, up to five times
    at_exit="are still in flight; they are left to the driver"
    [[ $driver == outoftree ]] && at_exit="left to the driver ended in ERT_CMD_STATE_TIMEOUT"
    for try in 1 2 3 4 5; do
        out=$(perplexity XDNA_EMU_FAULT=timeout XDNA_EMU_FAULT_AFTER=20 XDNA_EMU_FAULT_COUNT=0 "${settings[@]}")
        grep -qF "$at_exit" <<<"$out" && break
    done
    p=$(final "$out")
    echo "every run hanging, $driver driver: PPL ${p:-none} (the CPU alone: $cpu_only)"
    check "slow runs, $driver: rows recomputed on the CPU" grep -q "recomputed on the CPU" <<<"$out"
    check "slow runs, $driver: no run released in flight" test "$(grep -c 'xrt::run destructed' <<<"$out")" -eq 0
    check "slow runs, $driver: exactly the CPU's result" test "${p:-none}" = "$cpu_only"
    check "slow runs, $driver: the NPU stops taking rows with 3 runs parked" \
        grep -q "NPU takes no rows while 3 of its runs that timed out are still on the NPU" <<<"$out"
    if [[ $driver == intree ]]; then
        check "slow runs, in-tree: exit with runs in flight, left to the driver" grep -qF "$at_exit" <<<"$out"
    else
        check "slow runs, out-of-tree: the runs the TDR ended are reaped" grep -qF "$at_exit" <<<"$out"
    fi
done

# the CPU worker's team driving the NPU between slices of its rows (XDNA_TEST_TEAM_DRIVES=1), half the rows on
# the NPU: a failed run is redone on the CPU all the same
for fault in error nan; do
    out=$(perplexity XDNA_TEST_TEAM_DRIVES=1 GGML_XDNA_NPU_SHARE=0.5 XDNA_EMU_FAULT=$fault XDNA_EMU_FAULT_AFTER=22 \
          XDNA_EMU_FAULT_COUNT=2)
    p=$(final "$out")
    echo "team-driven, fault '$fault' on runs 23-24: PPL ${p:-none}"
    check "team-driven $fault: rows recomputed on the CPU" grep -q "recomputed on the CPU" <<<"$out"
    check "team-driven $fault: result still right (PPL within 1% of the clean run)" close_to "${p:-0}" "$ref" 0.01
done

out=$(perplexity XDNA_EMU_FAULT=error XDNA_EMU_FAULT_AFTER=24 XDNA_EMU_FAULT_COUNT=0)
p=$(final "$out")
echo "every run failing from the 25th on: PPL ${p:-none}"
check "repeated faults switch the NPU off" grep -q "NPU switched off for this process" <<<"$out"
check "switched off once" test "$(grep -c 'NPU switched off' <<<"$out")" -eq 1
check "result still right after switching off" close_to "${p:-0}" "$ref" 0.01

out=$(perplexity GGML_XDNA_NPU_CACHE_MB=0)
p=$(final "$out")
echo "weight cache of 0 MB: PPL ${p:-none}"
check "a full cache is said once" test "$(grep -c 'NPU weight cache full' <<<"$out")" -eq 1
check "converting on every call gives the cached run's result" close_to "${p:-0}" "$ref" 1e-12

out=$(perplexity XDNA_EMU_OTHER_CONTEXTS=6)
p=$(final "$out")
echo "all hardware contexts held by other processes: PPL ${p:-none}"
check "no hardware context: result still right" close_to "${p:-0}" "$ref" 0.01

# pinned memory (the driver counts NPU buffers against RLIMIT_MEMLOCK): a limit with room for the pipeline's buffers
# but not for every weight keeps the rest of the weights in ordinary memory, says so once, and gives the same result;
# one without room even for the self-test's buffers keeps the NPU off with one line, and the CPU gives the result
out=$(perplexity XDNA_EMU_MEMLOCK_MB=8)
p=$(final "$out")
echo "locked-memory limit of 8 MiB: PPL ${p:-none}"
check "memlock 8 MiB: weights past it in ordinary memory, said once" \
    test "$(grep -c 'stay in ordinary memory' <<<"$out")" -eq 1
check "memlock 8 MiB: the clean run's result" close_to "${p:-0}" "$ref" 1e-12
out=$(perplexity XDNA_EMU_MEMLOCK_MB=1)
p=$(final "$out")
echo "locked-memory limit of 1 MiB: PPL ${p:-none}; $(grep -E 'ggml-xdna: NPU (unavailable|self-test failed)' <<<"$out" | head -1)"
check "memlock 1 MiB: one clear line" test "$(grep -cE 'ggml-xdna: NPU (unavailable|self-test failed)' <<<"$out")" -eq 1
check "memlock 1 MiB: result still right" close_to "${p:-0}" "$ref" 0.01

# bad kernel files: one clear line, the NPU stays off, the CPU carries on with the right result
kernels=$(cd "$(dirname "$plugin")/../kernels" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo '{ "format": "ggml-xdna-kernels", "version": 1, "designs": [ ' >"$tmp/corrupt.json"
cp -r "$kernels" "$tmp/truncated" && f=$(ls "$tmp"/truncated/*.xclbin | head -1) && head -c 16 "$f" >"$f.tmp" && mv "$f.tmp" "$f"
cp -r "$kernels" "$tmp/shape" && sed -i '0,/"tokens": 64/s//"tokens": 96/' "$tmp/shape/manifest.json"
for bad in "missing:$tmp/nonexistent/manifest.json" "corrupt:$tmp/corrupt.json" "truncated:$tmp/truncated/manifest.json" \
           "shape:$tmp/shape/manifest.json"; do
    name=${bad%%:*} path=${bad#*:}
    out=$(perplexity GGML_XDNA_NPU_KERNELS="$path")
    p=$(final "$out")
    why=$(grep -E "ggml-xdna: NPU (unavailable|self-test failed)" <<<"$out" | head -1)
    echo "kernel set '$name': PPL ${p:-none}; ${why:-no line about the NPU}"
    check "$name kernel set: one clear line" test "$(grep -cE 'ggml-xdna: NPU (unavailable|self-test failed)' <<<"$out")" -eq 1
    check "$name kernel set: result still right" close_to "${p:-0}" "$ref" 0.01
done

echo "$passed passed, $failed failed"
(( failed == 0 ))
