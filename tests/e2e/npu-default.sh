#!/usr/bin/env bash
# Which NPU the plugin drives (GGML_XDNA_NPU), end to end through llama-perplexity against the stock CPU:
# - default, in a plugin built without XRT (as here) and with no GPU worker: no NPU worker and no device, so
#   llama.cpp runs exactly as without the plugin (the same graph splits, the same perplexities), and the plugin says so
#   in one line;
# - GGML_XDNA_NPU=emulator: the software XDNA1, asked for, computes rows (its share fixed at 0.5) and the result stays
#   right; and so with the auto split (the default share);
# - GGML_XDNA_NPU=off: no NPU worker, but a device whose CPU worker computes every claimed row, as the stock CPU does.
# usage: npu-default.sh <llama bin> <plugin> <xdna-gen-model> <llama src> <text>
set -euo pipefail
bin=$1 plugin=$2 gen=$3 src=$4 text=$5
model=$("$gen" --model llama-tiny --type Q4_0 --llama-src "$src" --llama-bin "$bin")
args=(-m "$model" -f "$text" -c 128 --chunks 3 -b 128 -t 2 -lv 4)   # -lv 4: the graph splits are logged
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0

# no GGML_XDNA_* variable from outside: the defaults are under test
for v in $(env | grep -oE '^GGML_XDNA_[A-Z0-9_]+'); do unset "$v"; done
# The pinned llama.cpp's logger loses the last lines of a run now and then: such a run is run again (up to ten times).
perplexity() {   # perplexity <env...>: prints the log
    local out i
    for i in 1 2 3 4 5 6 7 8 9 10; do
        out=$(env "$@" "$bin/llama-perplexity" "${args[@]}" 2>&1) || true
        grep -q 'Final estimate' <<<"$out" && break
    done
    printf '%s\n' "$out"
}
check() {   # check <name> <condition...>
    local name=$1; shift
    if "$@"; then echo "ok   $name"; passed=$((passed + 1)); else echo "FAIL $name"; failed=$((failed + 1)); fi
}
ppl() { grep -oE '\[[0-9]+\][0-9.]+|Final estimate: PPL = [0-9.]+' <<<"$1" | grep -oE '[0-9.]+$'; }
splits() { grep -oE 'splits = [0-9]+( / [0-9]+)?' <<<"$1" | sort | uniq -c | tr -s ' '; }   # 'graph splits = N' (older), 'splits = N' or 'N / M' (v0.5.0)
# every printed perplexity within a relative `tol` of the stock run's (llama-perplexity's own sums vary in the
# 16th digit from run to run, so "the same" is 1e-12)
same_ppl() {   # same_ppl <log> <tol>
    local a b
    a=$(ppl "$stock") b=$(ppl "$1")
    [[ -n "$a" && $(wc -l <<<"$a") == $(wc -l <<<"$b") ]] || return 1
    paste <(echo "$a") <(echo "$b") | awk -v tol="$2" '{ d = $1 - $2; if (d < 0) d = -d; if (d > tol * $1) bad = 1 } END { exit bad }'
}
npu_rows() { grep -oE 'npu: [0-9]+ rows' "$1" 2>/dev/null | grep -oE '[0-9]+' | sort -n | tail -1; }
cpu_rows() { grep -oE 'cpu: [0-9]+ rows' "$1" 2>/dev/null | grep -oE '[0-9]+' | sort -n | tail -1; }

stock=$(perplexity)
check "stock: the graph splits are logged (the comparisons below read them)" test -n "$(splits "$stock")"
echo "stock:    PPL $(ppl "$stock" | tail -1); $(splits "$stock")"

out=$(perplexity GGML_BACKEND_PATH="$plugin" GGML_XDNA_REPORT="$work/default.report")
lines=$(grep 'ggml-xdna:' <<<"$out" || true)
echo "default:  PPL $(ppl "$out" | tail -1); $(splits "$out"); the plugin said: $lines"
check "default: the plugin says one line" test "$(grep -c . <<<"$lines")" -eq 1
check "default: that line says why there is no NPU and what asks for the emulator" \
    grep -q 'built without XRT.*GGML_XDNA_NPU=emulator.*no device' <<<"$lines"
check "default: the stock graph splits (no XDNA device in the graph)" test "$(splits "$out")" == "$(splits "$stock")"
check "default: the stock perplexities" same_ppl "$out" 1e-12
check "default: nothing computed by the plugin (no report)" test ! -s "$work/default.report"

out=$(perplexity GGML_BACKEND_PATH="$plugin" GGML_XDNA_NPU=emulator GGML_XDNA_NPU_SHARE=0.5 GGML_XDNA_REPORT="$work/emu.report")
echo "emulator: PPL $(ppl "$out" | tail -1); $(splits "$out"); $(grep -h 'multiplies' "$work/emu.report" | tail -1)"
check "emulator: the device names the software XDNA1" grep -q 'software XDNA1 emulator' <<<"$out"
check "emulator: the NPU computed rows" test "$(npu_rows "$work/emu.report")" -gt 0
check "emulator: the XDNA device takes part in the graph" test "$(splits "$out")" != "$(splits "$stock")"
check "emulator: result still right (perplexities within 1% of stock)" same_ppl "$out" 0.01

# The auto split learns from measured times, so which rows go where is not fixed; but a shape's first multiplies are its
# probes, which give the NPU rows and the CPU the rest (here the NPU 8,192-8,704 of 24,576 rows in six runs), so both
# workers compute rows of this run whatever it learns after them.
out=$(perplexity GGML_BACKEND_PATH="$plugin" GGML_XDNA_NPU=emulator GGML_XDNA_REPORT="$work/auto.report")
echo "auto:     PPL $(ppl "$out" | tail -1); $(grep -h 'multiplies' "$work/auto.report" | tail -1)"
check "emulator, auto split: the NPU computed rows" test "$(npu_rows "$work/auto.report")" -gt 0
check "emulator, auto split: the CPU computed rows" test "$(cpu_rows "$work/auto.report")" -gt 0
check "emulator, auto split: result still right (perplexities within 1% of stock)" same_ppl "$out" 0.01

out=$(perplexity GGML_BACKEND_PATH="$plugin" GGML_XDNA_NPU=off GGML_XDNA_REPORT="$work/off.report")
echo "off:      PPL $(ppl "$out" | tail -1); $(splits "$out"); $(grep -h 'multiplies' "$work/off.report" | tail -1)"
check "off: no NPU rows" test -z "$(npu_rows "$work/off.report")"
check "off: the CPU worker computed the claimed rows" test "$(cpu_rows "$work/off.report")" -gt 0
check "off: the stock perplexities" same_ppl "$out" 1e-12

echo "$passed passed, $failed failed"
(( failed == 0 ))
