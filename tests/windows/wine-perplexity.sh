#!/usr/bin/env bash
# llama-perplexity for Windows, run under Wine, on a generated model, with the plugin DLL against the stock CPU:
# 1. the plugin's CPU worker alone (NPU share 0): the stock perplexity to 1e-12 relative (the threads' order of
#    summing varies in the last digits: tests/e2e/perplexity-matches-stock.sh);
# 2. half of each multiply's rows on the emulated NPU (share 0.5, bf16 weights and activations): within 1% of stock,
#    the bound of the native tests (tests/e2e/npu-default.sh).
# Each run's GGML_XDNA_REPORT shows who computed: the CPU worker alone in 1, the NPU too in 2.
# usage: wine-perplexity.sh <dir of Windows tool wrappers> <plugin (Windows path)> <xdna-gen-model (native)> <text>
#            <model> <type>
set -euo pipefail
bin=$1 plugin=$2 gen=$3 text=$4 model=$5 type=$6

m=$("$gen" --model "$model" --type "$type")
source "$(dirname "${BASH_SOURCE[0]}")/../lib/perplexity.sh"
chunks=3   # compared; one more is computed (tests/lib/perplexity.sh)
args=(-m "$(winepath -w "$m")" -f "$(winepath -w "$text")" -c 128 --chunks $((chunks + 1)) -b 128 -t 2)
report=$(mktemp)
trap 'rm -f "$report"' EXIT
run_once() { : >"$report"; env "$@" "$bin/llama-perplexity" "${args[@]}"; }
perplexity() { ppl_run $chunks run_once "$@"; }
ppl() { ppl_values $chunks "$1"; }

rows_of() { grep -oE "$1: [0-9]+ rows" <<<"$2" | grep -oE '[0-9]+' | sort -n | tail -1 || true; }   # rows_of WORKER REPORT
stock=$(perplexity GGML_XDNA_DISABLE=1 GGML_BACKEND_PATH="$plugin")
cpu=$(perplexity GGML_XDNA_NPU=emulator GGML_XDNA_NPU_SHARE=0 GGML_XDNA_GPU=none \
      GGML_XDNA_REPORT="$(winepath -w "$report")" GGML_BACKEND_PATH="$plugin")
cpu_report=$(cat "$report")
npu=$(perplexity GGML_XDNA_NPU=emulator GGML_XDNA_NPU_SHARE=0.5 GGML_XDNA_GPU=none \
      GGML_XDNA_REPORT="$(winepath -w "$report")" GGML_BACKEND_PATH="$plugin")
npu_report=$(cat "$report")
echo "stock           : $(ppl "$stock" | tr '\n' ' ')"
echo "CPU worker      : $(ppl "$cpu" | tr '\n' ' ')"
echo "NPU share 0.5   : $(ppl "$npu" | tr '\n' ' ')"
grep -E 'multiplies' <<<"$npu_report" | tail -1 || true

[[ -n "$(ppl "$stock")" ]] || { echo "no perplexity from the stock run"; tail -20 <<<"$stock"; exit 1; }
grep -qE 'ggml-xdna: [0-9]+ multiplies' <<<"$stock" && { echo "the plugin took part in the stock run"; exit 1; }
for run in cpu npu; do
    [[ $(ppl "$stock" | wc -l) == $(ppl "${!run}" | wc -l) ]] || { echo "the $run run printed other values"; tail -20 <<<"${!run}"; exit 1; }
done
# what each run's report says the plugin computed (llama-perplexity's own log may lose the plugin's lines at exit)
cpu_rows=$(rows_of cpu "$cpu_report") cpu_npu_rows=$(rows_of npu "$cpu_report") npu_rows=$(rows_of npu "$npu_report")
# a failed check shows the run's report and the plugin's own lines of its output (e.g. why the NPU stayed off)
fail_run() { echo "$1; its report: '$2'; its lines:"; grep -iE 'xdna|backend|error|warn' <<<"$3" | tail -20; exit 1; }
(( ${cpu_rows:-0} > 0 )) || fail_run "the plugin computed no rows in the CPU worker's run" "$cpu_report" "$cpu"
(( ${cpu_npu_rows:-0} == 0 )) || fail_run "the NPU computed rows at share 0" "$cpu_report" "$cpu"
(( ${npu_rows:-0} > 0 )) || fail_run "the report shows no rows on the NPU at share 0.5" "$npu_report" "$npu"
compare() {   # compare RUN TOLERANCE
    paste <(ppl "$stock") <(ppl "${!1}") | awk -v tol="$2" -v run="$1" '
        { d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > w) w = d; if (d > tol) { print run ": value " NR " differs: " $1 " vs " $2; bad = 1 } }
        END { printf "%s: largest relative difference from stock %.3g (bound %s)\n", run, w, tol; exit bad }'
}
compare cpu 1e-12
compare npu 1e-2
echo "1 passed, 0 failed"
