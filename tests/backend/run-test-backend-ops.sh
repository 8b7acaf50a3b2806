#!/usr/bin/env bash
# Runs the pinned llama.cpp's test-backend-ops on one op with the plugin loaded through GGML_BACKEND_PATH, and fails
# unless every case the XDNA backend claimed passed and at least a minimum number of cases ran on it.
# usage: run-test-backend-ops.sh <test-backend-ops> <libggml-xdna.so> <OP> [min cases]
# XDNA_TEST_OPS_PARAMS: a regular expression of the cases' parameters to run only (test-backend-ops -p)
set -uo pipefail
bin=$1 plugin=$2 op=$3
min=${4:-$([[ $op == MUL_MAT_ID ]] && echo 100 || echo 10)}

filter=(); [[ -n "${XDNA_TEST_OPS_PARAMS:-}" ]] && filter=(-p "$XDNA_TEST_OPS_PARAMS")
out=$(GGML_BACKEND_PATH="$plugin" "$bin" test -b XDNA -o "$op" "${filter[@]}" 2>&1)
rc=$?
# colours off; the plugin's own lines (its end-of-run summary can land inside a case's line) removed after the check
# that it loaded
clean=$(printf '%s\n' "$out" | sed 's/\x1b\[[0-9;]*m//g')
loaded=$(grep -c "ggml-xdna: loaded" <<<"$clean" || true)
clean=$(perl -0pe 's/ggml-xdna: [^\n]*\n//g' <<<"$clean")
ok=$(grep -cE "^  $op\(.*\): OK$" <<<"$clean")
fail=$(grep -cE "^  $op\(.*\): .*FAIL$" <<<"$clean")
unsupported=$(grep -cE "^  $op\(.*\): not supported" <<<"$clean")
echo "test-backend-ops -b XDNA -o $op: $ok passed, $fail failed, $unsupported not claimed (exit $rc)"
(( loaded > 0 )) || { echo "the plugin was not loaded"; exit 1; }
if (( fail > 0 )); then
    grep -E "FAIL" <<<"$clean" | head -20
    exit 1
fi
(( rc == 0 )) || { printf '%s\n' "$clean" | tail -20; exit 1; }
(( ok >= min )) || { echo "only $ok cases ran on the XDNA backend, expected at least $min"; exit 1; }
echo "$ok passed, $fail failed"
