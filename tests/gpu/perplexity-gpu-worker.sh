#!/usr/bin/env bash
# End to end: llama-perplexity on a generated model with the plugin's GPU worker on gives the stock CPU's perplexity
# (within the tolerance another device explains), and the end-of-run report shows who computed what: the GPU worker
# takes rows of plain weights (Q8_0, F16) and of weights the CPU repacks (Q4_0 on x86: `repacked-gpu`, the repack
# inverted in its device copy). XDNA_TEST_PPL_THREE=1 runs the emulated NPU beside it at fixed shares (half of each
# multiply's rows in whole 256-row steps to the NPU, half of the rest to the GPU): every multiply of 512 rows or more
# is split three ways, smaller ones between the GPU and the CPU.
#
# Both runs keep the model off llama.cpp's own GPUs (-ngl 0 -dev none), so on a GPU build too the only GPU work is the
# worker's. The GPU is XDNA_TEST_GPU (a GGML_XDNA_GPU value such as CUDA0); unset, the script runs itself again under
# xdna-with-rpc-server, which starts a ggml-rpc-server on loopback and stops it afterwards.
# usage: perplexity-gpu-worker.sh <llama bin dir> <libggml-xdna.so> <xdna-gen-model> <llama src> <text>
#            <xdna-with-rpc-server> <ggml-rpc-server> <model> <type> <gpu|repacked-gpu> [relative tolerance]
# With `repacked-gpu` the tolerance is at least three times the deviation of llama.cpp's own run on the plain layout
# (--no-repack) from its repacked one. XDNA_TEST_PPL_TOL overrides the tolerance (another kind of device rounds differently: CUDA quantizes activations
# for quantized weights in its own way). XDNA_TEST_PPL_STOCK_GPU=1 adds a third run, llama.cpp's own offload of large
# batches to its GPU (-ngl 0 without -dev none), and widens the tolerance to three times that run's deviation from
# the CPU: the deviation the same device gives without the plugin.
set -euo pipefail
bin=$1 plugin=$2 gen=$3 src=$4 text=$5 with_rpc=$6 rpc_server=$7 model=$8 type=$9 expect=${10} tol=${XDNA_TEST_PPL_TOL:-${11:-1e-6}}

if [[ -z "${XDNA_TEST_GPU:-}" || "${XDNA_TEST_GPU}" == rpc ]]; then
    exec "$with_rpc" "$rpc_server" -- bash "${BASH_SOURCE[0]}" "$@"
fi

m=$("$gen" --model "$model" --type "$type" --llama-src "$src" --llama-bin "$bin")
source "$(dirname "${BASH_SOURCE[0]}")/../lib/perplexity.sh"
chunks=3   # compared; one more is computed (tests/lib/perplexity.sh)
args=(-m "$m" -f "$text" -c 128 --chunks $((chunks + 1)) -b 128 -t 2 -ngl 0 -dev none)
report=$(mktemp)
trap 'rm -f "$report"' EXIT

run_once() { : >"$report"; env "$@" "$bin/llama-perplexity" "${args[@]}"; }   # the report of the last run only
perplexity() { ppl_run $chunks run_once "$@"; }
stock=$(perplexity GGML_XDNA_DISABLE=1 GGML_BACKEND_PATH="$plugin")
# the NPU worker off: this compares the GPU worker alone (next to the CPU) with the stock CPU; or all three workers
if [[ ${XDNA_TEST_PPL_THREE:-0} == 1 ]]; then
    workers=(GGML_XDNA_NPU=emulator GGML_XDNA_NPU_SHARE=0.5 GGML_XDNA_GPU_SHARE=0.5 XDNA_TEST_GPU_NPU_MIN_GFLOP=0)
else
    workers=(GGML_XDNA_NPU=off)
fi
with_gpu=$(perplexity GGML_XDNA_DEBUG=1 "${workers[@]}" GGML_XDNA_GPU="$XDNA_TEST_GPU" GGML_XDNA_REPORT="$report" GGML_BACKEND_PATH="$plugin")
summary=$(grep -E '^ggml-xdna: [0-9]+ multiplies' "$report" | tail -1 || true)

ppl() { ppl_values $chunks "$1"; }
max_rel_diff() { paste <(ppl "$1") <(ppl "$2") | awk '{ d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > w) w = d } END { printf "%.3g", w }'; }
if [[ ${XDNA_TEST_PPL_STOCK_GPU:-0} == 1 ]]; then
    args_no_dev=("${args[@]:0:${#args[@]}-2}")   # without -dev none: llama.cpp offloads large batches to its GPU
    stock_gpu=$(args=("${args_no_dev[@]}"); perplexity GGML_XDNA_DISABLE=1 GGML_BACKEND_PATH="$plugin")
    if [[ -n "$(ppl "$stock_gpu")" ]]; then
        dev_stock=$(max_rel_diff "$stock" "$stock_gpu")
        echo "stock GPU offload : $(ppl "$stock_gpu" | tr '\n' ' ')(largest relative difference from the CPU: $dev_stock)"
        tol=$(awk -v a="$tol" -v b="$dev_stock" 'BEGIN { b *= 3; print (b > a ? b : a) }')
    fi
fi
if [[ $expect == repacked-gpu ]]; then
    # the GPU reads the plain layout of weights the CPU computes repacked: the CPU's own two kernel families differ
    # by rounding, which the generated models' huge perplexities amplify (llama-tiny Q4_0: up to 4e-3 relative), so
    # the tolerance is at least three times the deviation of llama.cpp's own run on the plain layout (--no-repack)
    stock_plain=$(args=("${args[@]}" --no-repack); perplexity GGML_XDNA_DISABLE=1 GGML_BACKEND_PATH="$plugin")
    if [[ -n "$(ppl "$stock_plain")" ]]; then
        dev_plain=$(max_rel_diff "$stock" "$stock_plain")
        echo "stock, plain layout: $(ppl "$stock_plain" | tr '\n' ' ')(largest relative difference from the repacked: $dev_plain)"
        tol=$(awk -v a="$tol" -v b="$dev_plain" 'BEGIN { b *= 3; print (b > a ? b : a) }')
    fi
fi
echo "stock CPU         : $(ppl "$stock" | tr '\n' ' ')"
echo "GPU worker ($XDNA_TEST_GPU): $(ppl "$with_gpu" | tr '\n' ' ')"
echo "${summary:-no end-of-run summary was written}"

[[ -n "$(ppl "$stock")" ]] || { echo "no perplexity from the stock run"; tail -20 <<<"$stock"; exit 1; }
grep -q "GPU worker on" <<<"$with_gpu" || { echo "the plugin did not start its GPU worker"; grep ggml-xdna <<<"$with_gpu"; exit 1; }
[[ -n "$summary" ]] || { echo "the plugin computed no multiply"; tail -20 <<<"$with_gpu"; exit 1; }
[[ $(ppl "$stock" | wc -l) == $(ppl "$with_gpu" | wc -l) ]] || { echo "the runs printed different numbers of values"; exit 1; }
paste <(ppl "$stock") <(ppl "$with_gpu") | awk -v tol="$tol" '
    { d = $1 - $2; if (d < 0) d = -d; if (d > tol * $1) { print "value " NR " differs beyond " tol ": " $1 " vs " $2; bad = 1 }
      if (d / $1 > worst) worst = d / $1 }
    END { printf "largest relative difference: %.3g (tolerance %s)\n", worst, tol; exit bad }'

gpu_rows=$(grep -oE 'gpu: [0-9]+ rows' <<<"$summary" | grep -oE '[0-9]+' || echo 0)
cpu_rows=$(grep -oE 'cpu: [0-9]+ rows' <<<"$summary" | grep -oE '[0-9]+' || echo 0)
npu_rows=$(grep -oE 'npu: [0-9]+ rows' <<<"$summary" | grep -oE '[0-9]+' || echo 0)
# the debug log has each split the planner made: which workers, how many rows
splits=$(grep -oE 'ggml-xdna: split .*' <<<"$with_gpu" || true)
echo "planner: $(wc -l <<<"$splits") split decisions, e.g. $(head -1 <<<"$splits" | sed 's/^ggml-xdna: //')"
grep -q 'runs failed' <<<"$summary" && { echo "worker runs failed (their rows were redone on the CPU)"; exit 1; }
(( gpu_rows > 0 )) || { echo "the GPU worker took no rows of $type weights"; exit 1; }
(( cpu_rows > 0 )) || { echo "the CPU worker took no rows"; exit 1; }
if [[ ${XDNA_TEST_PPL_THREE:-0} == 1 ]]; then
    (( npu_rows > 0 )) || { echo "the NPU worker took no rows"; exit 1; }
fi
if [[ $expect == repacked-gpu ]]; then
    # the model's multiplies on weights the CPU repacked: the GPU worker takes rows of them as of any other
    repacked=$(grep -F '(repacked)' <<<"$splits" || true)
    [[ -n "$repacked" ]] || { echo "no multiply on repacked $type weights (does this CPU repack $type?)"; exit 1; }
    with=$(grep -cE 'gpu [1-9]' <<<"$repacked" || true)
    (( with > 0 )) || { echo "the planner gave the GPU worker no rows of repacked weights:"; head -5 <<<"$repacked"; exit 1; }
    echo "repacked multiplies: $(wc -l <<<"$repacked") split decisions, $with with the GPU worker"
fi
echo "1 passed, 0 failed"
