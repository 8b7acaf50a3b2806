#!/usr/bin/env bash
# scripts/validate-hardware.sh on a machine without an NPU: every step it calls must run against the software XDNA1
# emulator, and its one report must say plainly that no NPU hardware was used; wrong results stop it at the smoke test,
# an NMSE above the emulator-derived limit does not; a run slower than the plugin's timeout fails nothing.
# usage: validate-emulated.sh <build dir> <llama.cpp bin dir> <llama.cpp source dir>
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$1 llama_bin=$2 llama_src=$3
model=$("$build/bin/xdna-gen-model" --model llama-tiny --type Q4_0 --llama-src "$llama_src" --llama-bin "$llama_bin")
report=$(mktemp --suffix=.md)
trap 'rm -f "$report"' EXIT

validate() {   # validate ARGS...: runs the script into $report, prints the report and how long it took
    local t0=$SECONDS rc=0
    "$here/../../scripts/validate-hardware.sh" --model "$model" --quick --threads 2 --build "$build" \
        --llama-bin "$llama_bin" --report "$report" "$@" || rc=$?
    cat "$report"
    echo "(validate-hardware.sh $*: exit $rc in $((SECONDS - t0)) s)"
    return $rc
}
fail() { echo "FAIL: $*"; exit 1; }

validate || fail "validate-hardware.sh exited with $?"
grep -q '^\*\*No NPU hardware was used' "$report" || fail "the report does not say that no NPU was used"
for step in "plugin loads" "kernel set" "NPU smoke test" "test-backend-ops MUL_MAT" "test-backend-ops MUL_MAT_ID" \
            "accuracy" "benchmark"; do
    grep -qE "^\| $step \| PASS \|" "$report" || fail "step '$step' did not pass"
done
if grep -qE '^\| [^|]+ \| FAIL \|' "$report"; then fail "a step failed"; fi
grep -q '^| model | configuration |' "$report" || fail "the report has no benchmark table"
# what a first hardware report must hold: the measured NMSE per K beside its limit, the streams' headers, the errors
grep -qE '^\| NPU NMSE per K \| INFO \| K = 1024: NMSE up to [0-9.e+-]+ \(emulator-derived limit [0-9.e+-]+\)' "$report" ||
    fail "no NMSE per K beside its limit"
grep -qE '^\| bf16_k1024_t64_r256 \| bf16_k1024/t64_r256.bin \| [0-9]+ \| 0x554d4558 .*\| the emulator.s stream \|' "$report" ||
    fail "no instruction stream headers"
grep -q '^## NPU errors and warnings in the steps' "$report" || fail "no section for the NPU's errors"

# Wrong results (finite, far from the reference) stop the validation at the smoke test, with the kernels named.
XDNA_EMU_FAULT=wrong XDNA_EMU_FAULT_COUNT=0 validate && fail "validate-hardware.sh passed with wrong results"
grep -qE "^\| NPU smoke test \| FAIL \|.*FAIL bf16_k1024_t64_r256: [0-9]+ of [0-9]+ results are further from the fp64 reference than mlir-aie's matrix-multiply tolerance" "$report" ||
    fail "the smoke step does not name the failing kernel"
grep -q 'The smoke test failed, so no other step was run' "$report" || fail "no clear stop in the report"
for step in "test-backend-ops MUL_MAT" "test-backend-ops MUL_MAT_ID" "accuracy" "benchmark"; do
    grep -qE "^\| $step \| SKIP \| not run: the NPU smoke test failed" "$report" || fail "step '$step' ran after the smoke test failed"
done

# Results less accurate than the emulator's model (every output rounded to bf16) but within mlir-aie's tolerance do
# not stop it: the NMSE is reported above its limit.
XDNA_EMU_FAULT=bf16 XDNA_EMU_FAULT_COUNT=0 validate --skip backend-ops,accuracy,bench ||
    fail "bf16-rounded results stopped the validation"
grep -qE '^\| NPU smoke test \| PASS \|' "$report" || fail "the smoke step did not pass"
grep -qE '^\| NPU NMSE per K \| INFO \| K = 1024: NMSE up to [0-9.e+-]+ \(emulator-derived limit [0-9.e+-]+, above it\)' "$report" ||
    fail "the NMSE above the emulator-derived limit is not reported"

# The plugin's timeout shorter than the driver's (in-tree: 60 s): in every process that makes more than the self-test's
# 20 runs, one run hangs; its rows go to the CPU, nothing aborts, every step passes, the report shows the timeouts.
# (The benchmark's processes are left out for time: they meet the same worker as the accuracy step's.)
XDNA_EMU_FAULT=timeout XDNA_EMU_FAULT_AFTER=20 XDNA_TEST_NPU_TIMEOUT_MS=1000 validate --skip smoke,bench ||
    fail "a run slower than the plugin's timeout failed the validation"
for step in "test-backend-ops MUL_MAT" "test-backend-ops MUL_MAT_ID" "accuracy"; do
    grep -qE "^\| $step \| PASS \|" "$report" || fail "step '$step' did not pass with a slow run"
done
grep -q "did not finish within 1000 ms; it stays on the NPU" "$report" || fail "the report does not show the timeouts"
if grep -q "xrt::run destructed" "$report"; then fail "a run was released in flight"; fi
echo "validate-hardware.sh ran every step on the emulator; stopped on wrong results, not on an NMSE above the emulator-derived limit; a run slower than the plugin's timeout failed nothing"
