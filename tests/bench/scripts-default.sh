#!/usr/bin/env bash
# The benchmark scripts' default paths run to their end on a tiny generated model (a broken default fails here, not
# in someone's long run): planner-e2e.sh with its default NPU speed (the timing model of XDNA1 silicon), one pass;
# bench-overhead.sh, one pass; microbench.sh --quick. What they measure is not checked (that is for people to read,
# and a tiny model in one pass decides nothing): only that each one gets through and prints its result.
# usage: scripts-default.sh <build dir> <llama.cpp bin dir> <llama.cpp source dir>
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1 llama_bin=$2 llama_src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
# expect NAME PATTERN EXITS COMMAND...: the command's exit status is one of EXITS and its output matches PATTERN
expect() {
    local name=$1 pattern=$2 exits=$3; shift 3
    local rc=0
    "$@" >"$work/$name.log" 2>&1 || rc=$?
    if [[ " $exits " != *" $rc "* ]]; then
        tail -20 "$work/$name.log"; fail "$name: exit status $rc (expected one of: $exits)"
    elif ! grep -qE -- "$pattern" "$work/$name.log"; then
        tail -20 "$work/$name.log"; fail "$name: no line matching '$pattern'"
    else
        echo "ok: $name (exit $rc)"
    fi
}
export XDNA_EMU_LOG=0 GGML_XDNA_CACHE="$work/cache"
tiny=(MODEL=qwen3-tiny LAYERS=2)
# planner-e2e: exit 1 is its check (auto against the best share) failing, which one short pass may do; 2 is a setup error
expect planner-e2e "^NPU modelled on measured 8700G figures +[0-9]" "0 1" \
    env "${tiny[@]}" BUILD="$build" LLAMA_BIN="$llama_bin" LLAMA_SRC="$llama_src" PASSES=1 REPS=1 THREADS=1 \
    "$root/scripts/planner-e2e.sh"
expect planner-e2e-bound "auto/bound [0-9.]+" "0 1" cat "$work/planner-e2e.log"
expect bench-overhead "^median: stock CPU [0-9.]+ t/s, plugin [0-9.]+ t/s" "0" \
    env "${tiny[@]}" LLAMA_BIN="$llama_bin" LLAMA_SRC="$llama_src" PLUGIN="$build/bin/libggml-xdna.so" \
    GEN="$build/bin/xdna-gen-model" "$root/scripts/bench-overhead.sh" 1 -t 1
expect microbench "host feed rate" "0" env XDNA_BENCH_BUILD="$build" "$root/scripts/microbench.sh" --quick --filter planner
exit $status
