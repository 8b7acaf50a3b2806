#!/usr/bin/env bash
# The planner state file (GGML_XDNA_PLANNER_STATE) end to end, through llama-bench with the software XDNA1 (null mode:
# only the split is under test here). What is checked does not depend on timing: every shape's count of multiplies
# planned is kept in the file, so a process that read it reports the earlier run's count plus its own.
# - a first run writes the file (its header, its identity line, one line per shape);
# - a second run under the same identity reads it: each shape's count is twice the first run's;
# - a run under another identity (the emulated NPU at another speed) does not read it, and replaces it;
# - a run with a fixed share neither reads nor writes it;
# - GGML_XDNA_PLANNER_STATE=auto: a file per identity under the cache folder, read by the next run.
# usage: planner-state.sh <llama bin> <plugin> <xdna-gen-model> <llama src>
set -euo pipefail
bin=$1 plugin=$2 gen=$3 src=$4
model=$("$gen" --model qwen3-0.6b --type Q4_0 --layers 2 --llama-src "$src" --llama-bin "$bin")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for v in $(env | grep -oE '^GGML_XDNA_[A-Z0-9_]+'); do unset "$v"; done
passed=0 failed=0
check() {   # check <name> <condition...>
    local name=$1; shift
    if "$@"; then echo "ok   $name"; passed=$((passed + 1)); else echo "FAIL $name"; failed=$((failed + 1)); fi
}
state=$work/state.txt
bench() {   # bench <tag> <env...>: one llama-bench run; the plugin's report in $work/<tag>.report
    local tag=$1; shift
    env GGML_XDNA_NPU=emulator XDNA_EMU_MODE=null XDNA_EMU_LOG=0 GGML_XDNA_PLANNER_STATE="$state" "$@" \
        GGML_XDNA_REPORT="$work/$tag.report" GGML_BACKEND_PATH="$plugin" \
        "$bin/llama-bench" -m "$model" -p 128 -n 0 -r 1 -t 1 >"$work/$tag.out" 2>&1 || { tail -5 "$work/$tag.out"; exit 1; }
}
counts() {   # counts <report>: "<shape> <multiplies planned>" per shape, sorted
    sed -nE 's/^planner: (MUL_MAT[^:]*): .* ([0-9]+) multiplies, [0-9]+ share changes$/\1 \2/p' "$1" | sort
}
doubled() {   # doubled <first> <second>: the same shapes, each with twice the first's count in the second
    [[ -n "$(counts "$1")" ]] &&
        diff <(counts "$1" | awk '{ $NF = 2 * $NF; print }') <(counts "$2") >/dev/null
}

bench first
check "the first run writes the file" test -f "$state"
check "its first line is the header" test "$(head -1 "$state")" == "ggml-xdna planner state 6"
check "its second line names the machine and the NPU" grep -q "cores.*threads.*NPU.*emulator XDNA_EMU_MODE=null" <(sed -n 2p "$state")
check "one line per shape the run planned" test "$(grep -c '^shape ' "$state")" -eq "$(counts "$work/first.report" | wc -l)"
bench second
check "a second run reads it: every shape's count is the first's plus its own" doubled "$work/first.report" "$work/second.report"
bench other XDNA_EMU_BF16_GFLOPS=999
check "another NPU speed: the file is not read (the counts start again)" \
    diff <(counts "$work/first.report") <(counts "$work/other.report")
check "and is replaced under the new identity" grep -q "XDNA_EMU_BF16_GFLOPS=999" <(sed -n 2p "$state")
cp "$state" "$work/before-fixed.txt"
bench fixed XDNA_EMU_BF16_GFLOPS=999 GGML_XDNA_NPU_SHARE=0.5
check "a fixed share neither reads nor writes it" cmp -s "$state" "$work/before-fixed.txt"
state=auto
bench auto1 XDG_CACHE_HOME="$work/cache"
files=("$work"/cache/ggml-xdna/planner/*.txt)
check "auto: one file under the cache folder" test "${#files[@]}" -eq 1 -a -f "${files[0]}"
bench auto2 XDG_CACHE_HOME="$work/cache"
check "auto: the next run reads it" doubled "$work/auto1.report" "$work/auto2.report"
echo "planner-state: $passed passed, $failed failed"
[[ $failed == 0 ]]
