#!/usr/bin/env bash
# scripts/validate-hardware.sh on a machine without an NPU: every step it calls must run against the software XDNA1
# emulator, and its one report must say plainly that no NPU hardware was used.
# usage: validate-emulated.sh <build dir> <llama.cpp bin dir> <llama.cpp source dir>
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$1 llama_bin=$2 llama_src=$3
model=$("$build/bin/xdna-gen-model" --model llama-tiny --type Q4_0 --llama-src "$llama_src" --llama-bin "$llama_bin")
report=$(mktemp --suffix=.md)
trap 'rm -f "$report"' EXIT

rc=0
"$here/../../scripts/validate-hardware.sh" --model "$model" --quick --threads 2 --build "$build" \
    --llama-bin "$llama_bin" --report "$report" || rc=$?
cat "$report"
(( rc == 0 )) || { echo "FAIL: validate-hardware.sh exited with $rc"; exit 1; }

grep -q '^\*\*No NPU hardware was used' "$report" || { echo "FAIL: the report does not say that no NPU was used"; exit 1; }
for step in "plugin loads" "kernel set" "NPU smoke test" "test-backend-ops MUL_MAT" "test-backend-ops MUL_MAT_ID" \
            "accuracy" "benchmark"; do
    grep -qE "^\| $step \| PASS \|" "$report" || { echo "FAIL: step '$step' did not pass"; exit 1; }
done
if grep -qE '^\| [^|]+ \| FAIL \|' "$report"; then echo "FAIL: a step failed"; exit 1; fi
grep -q '^| model | configuration |' "$report" || { echo "FAIL: the report has no benchmark table"; exit 1; }

# A kernel that fails the smoke test (results rounded to bf16) stops the validation there, with the kernels named.
rc=0
XDNA_EMU_FAULT=bf16 XDNA_EMU_FAULT_COUNT=0 "$here/../../scripts/validate-hardware.sh" --model "$model" --quick \
    --threads 2 --build "$build" --llama-bin "$llama_bin" --report "$report" || rc=$?
cat "$report"
(( rc != 0 )) || { echo "FAIL: validate-hardware.sh passed with failing kernels"; exit 1; }
grep -qE '^\| NPU smoke test \| FAIL \|.*FAIL bf16_k1024_t64_r256: NMSE' "$report" ||
    { echo "FAIL: the smoke step does not name the failing kernel"; exit 1; }
grep -q 'The smoke test failed, so no other step was run' "$report" || { echo "FAIL: no clear stop in the report"; exit 1; }
for step in "test-backend-ops MUL_MAT" "test-backend-ops MUL_MAT_ID" "accuracy" "benchmark"; do
    grep -qE "^\| $step \| SKIP \| not run: the NPU smoke test failed" "$report" ||
        { echo "FAIL: step '$step' ran after the smoke test failed"; exit 1; }
done
echo "validate-hardware.sh ran every step on the emulator, and stopped after a failing smoke test"
