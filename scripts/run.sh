#!/usr/bin/env bash
# The main job: what the plugin does, on one screen.
#
#   1. correctness: the tokens a model generates greedily through the plugin with the NPU computing a fixed share of
#      every prompt multiply's rows (a quarter: the emulator is slower than the CPU), against the stock CPU's, token by token (xdna-greedy: the plugin's run follows the stock
#      run's tokens, so each step sees the same context), with the KL divergence of each step's distribution;
#   2. speed: llama-bench, the stock CPU against CPU + NPU with the plugin's defaults (auto split).
#
# With an XDNA1 NPU and XRT (a plugin built against XRT) both run on the NPU. Without, the NPU is the project's
# software XDNA1, asked for explicitly (GGML_XDNA_NPU=emulator): in exact mode for (1), as the NPU computes; in null
# mode for (2), where it does no arithmetic and each NPU run takes the time modelled on measured 8700G figures
# (docs/emulator.md, "The timing model"; the host's work, conversion, copies and synchronisation, is real). Every such
# figure is labelled as modelled.
#
# It builds only what it needs: llama.cpp's libraries, llama-quantize and llama-bench (into the cache outside the
# repository), the plugin, the model generator and xdna-greedy (into build/). Each long step shows one progress line;
# its output goes to a log file, named if the step fails.
#
# Environment: MODEL (default qwen3-0.6b; see xdna-gen-model --list), TYPE (default Q4_0), LAYERS (default: all),
# THREADS (default: all cores), N_PREDICT (generated tokens, default 32), REPS (llama-bench repetitions, default 1),
# SHARE (the NPU's share in the correctness run, default 0.25), and GGML_XDNA_* / XDNA_EMU_* variables.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/progress.sh"
# threads: half the cores (the spec's -t 8 on 16), 1 on 2 cores, so that the NPU worker's host thread has a core of its
# own next to the CPU's threads, as on the machines the speed-up is for
model_name=${MODEL:-qwen3-0.6b} type=${TYPE:-Q4_0} threads=${THREADS:-$(( $(nproc) > 2 ? $(nproc) / 2 : 1 ))} n_predict=${N_PREDICT:-32}
reps=${REPS:-1} share=${SHARE:-0.25}
t0=$SECONDS

echo "== set-up: what the main job needs, built once (logs: build/logs, and the llama.cpp cache's)"
build=$(XDNA_TARGETS="ggml-xdna xdna-gen-model xdna-greedy" LLAMA_TOOLS="llama-quantize llama-bench" \
        "$root/scripts/build.sh" | tail -1)
logs=$build/logs
llama_src=$(sed -n 's/^LLAMA_SRC:PATH=//p' "$build/CMakeCache.txt")
bin=$(sed -n 's/^LLAMA_BUILD:PATH=//p' "$build/CMakeCache.txt")/bin
plugin=$build/bin/libggml-xdna.so
progress "model: $model_name $type${LAYERS:+, $LAYERS layers}" "$logs/gen-model.log" \
    "$build/bin/xdna-gen-model" --model "$model_name" --type "$type" ${LAYERS:+--layers "$LAYERS"} \
    --llama-src "$llama_src" --llama-bin "$bin" --verbose
model=$(grep -E '\.gguf$' "$logs/gen-model.log" | tail -1)
[[ -f "$model" ]] || { echo "no model file in $logs/gen-model.log"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# about 150 tokens: long enough that every prompt multiply is claimed, short enough for the emulator's arithmetic
head -c 700 "$root/data/accuracy-text.txt" >"$work/prompt.txt"
# the configurations: stock llama.cpp (the plugin not loaded), and the plugin with an NPU
stock=(env -u GGML_BACKEND_PATH GGML_XDNA_DISABLE=1)
if ldd "$plugin" | grep -q libxrt_coreutil; then
    npu_kind=xrt
    exact=(env GGML_BACKEND_PATH="$plugin")
    timed=(env GGML_BACKEND_PATH="$plugin")
    npu_label="CPU + NPU"
    mark=""
    echo "   the NPU: the XDNA1 NPU through XRT (this plugin was built against XRT)"
else
    npu_kind=emulator
    exact=(env GGML_BACKEND_PATH="$plugin" GGML_XDNA_NPU=emulator XDNA_EMU_MODE=exact XDNA_EMU_LOG=0)
    timed=(env GGML_BACKEND_PATH="$plugin" GGML_XDNA_NPU=emulator XDNA_EMU_MODE=null XDNA_EMU_LOG=0)
    npu_label="CPU + NPU, NPU time modelled"
    mark=" (modelled)"
    echo "   the NPU: the software XDNA1 emulator (no XRT when the plugin was built: no XDNA1 NPU was used)"
fi
printf '   %-34s done   %s\n' "set-up" "$(progress_fmt $(( SECONDS - t0 )))"

rows_of() {   # rows_of REPORT: "the NPU computed P% of the rows" from the plugin's end-of-run report
    awk '/^ggml-xdna: [0-9]+ multiplies/ {
            n = 0; c = 0
            if (match($0, /npu: [0-9]+ rows/)) { s = substr($0, RSTART + 5); n = s + 0 }
            if (match($0, /gpu: [0-9]+ rows/)) { s = substr($0, RSTART + 5); g = s + 0 } else g = 0
            if (match($0, /cpu: [0-9]+ rows/)) { s = substr($0, RSTART + 5); c = s + 0 }
            if (n + g + c > best) { best = n + g + c; bn = n; bg = g }
         }
         END { if (best > 0) printf "the NPU computed %.0f%% of the claimed rows%s", 100 * bn / best,
                                    (bg > 0 ? sprintf(", the GPU %.0f%%", 100 * bg / best) : "")
               else printf "the plugin computed nothing" }' "$1" 2>/dev/null
}
field() { sed -n "s/^$1: //p" "$2" | head -1; }

echo
echo "== 1. correctness: $n_predict tokens generated greedily after the prompt ($model_name-shaped, $type, generated weights)"
greedy=("$build/bin/xdna-greedy" --model "$model" --prompt-file "$work/prompt.txt" -t "$threads")
"${stock[@]}" "${greedy[@]}" --out "$work/stock.ref" -n "$n_predict" >"$work/stock.txt" 2>"$logs/greedy-stock.log" ||
    { tail -20 "$logs/greedy-stock.log"; echo "the stock run failed (log: $logs/greedy-stock.log)"; exit 1; }
"${exact[@]}" GGML_XDNA_NPU_SHARE="$share" GGML_XDNA_REPORT="$work/exact.report" \
    "${greedy[@]}" --follow "$work/stock.ref" >"$work/exact.txt" 2>"$logs/greedy-npu.log" ||
    { tail -20 "$logs/greedy-npu.log"; echo "the run through the plugin failed (log: $logs/greedy-npu.log)"; exit 1; }
echo "   prompt: $(field prompt_tokens "$work/stock.txt") tokens; the stock CPU generated (random weights: no sense expected):"
echo "   $(field text "$work/stock.txt" | cut -c1-100)..."
how=$([[ $npu_kind == xrt ]] && echo "the NPU" || echo "the emulated NPU, exact mode")
same=$(field identical "$work/exact.txt") n=$(field generated "$work/exact.txt")
if [[ "$same" == "$n" ]]; then
    echo "   CPU + NPU ($how, NPU share $share): $same of $n generated tokens identical to the stock CPU's"
else
    echo "   CPU + NPU ($how, NPU share $share): $same of $n generated tokens identical to the stock CPU's;"
    echo "   first difference at $(field first_difference "$work/exact.txt")"
fi
echo "   KL divergence from the stock CPU's next-token distribution: mean $(field kl_mean "$work/exact.txt"), max $(field kl_max "$work/exact.txt") per step"
echo "   ($(rows_of "$work/exact.report"); the NPU computes in bf16, the CPU with 8-bit activations, so the"
echo "   distributions differ a little, and a near-tie can pick another token: tests/e2e/npu-accuracy.sh bounds the NPU's"
echo "   error against an F32 reference by the stock CPU's own)"

echo
echo "== 2. speed: llama-bench, prompt of 512 tokens and $n_predict generated, $threads threads, $reps repetition(s) after a warm-up"
bench() {   # bench TAG ENV...: llama-bench's pp and tg tokens/s as "pp tg"
    local tag=$1; shift
    "$@" GGML_XDNA_REPORT="$work/$tag.report" "$bin/llama-bench" -m "$model" -p 512 -n "$n_predict" -r "$reps" \
        -t "$threads" -o jsonl >"$work/$tag.jsonl" 2>"$logs/bench-$tag.log" ||
        { tail -20 "$logs/bench-$tag.log"; echo "llama-bench failed ($tag; log: $logs/bench-$tag.log)"; exit 1; }
    python3 - "$work/$tag.jsonl" <<'EOF'
import json, sys
pp = tg = 0.0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("n_prompt", 0) > 0 and r.get("n_gen", 0) == 0: pp = r["avg_ts"]
    if r.get("n_gen", 0) > 0 and r.get("n_prompt", 0) == 0: tg = r["avg_ts"]
print(f"{pp:.1f} {tg:.1f}")
EOF
}
read -r stock_pp stock_tg < <(bench stock "${stock[@]}")
read -r npu_pp npu_tg < <(bench npu "${timed[@]}")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }'; }
printf '   prompt processing:  stock CPU %7.1f tokens/s | %s %7.1f tokens/s%s | %s%s\n' \
    "$stock_pp" "$npu_label" "$npu_pp" "$mark" "$(ratio "$npu_pp" "$stock_pp")" "$mark"
printf '   generation:         stock CPU %7.1f tokens/s | %s %7.1f tokens/s%s | %s%s (generation stays on the CPU)\n' \
    "$stock_tg" "$npu_label" "$npu_tg" "$mark" "$(ratio "$npu_tg" "$stock_tg")" "$mark"
echo "   $(rows_of "$work/npu.report") (auto split)"
if [[ $npu_kind == emulator ]]; then
    echo "   modelled: the software XDNA1 in null mode does no arithmetic; each NPU run takes the time of its timing model,"
    if [[ -n "${XDNA_EMU_BF16_GFLOPS:-}${XDNA_EMU_INT8_GOPS:-}" ]]; then
        echo "   here at a flat what-if rate (bf16 ${XDNA_EMU_BF16_GFLOPS:-modelled} GFLOP/s, int8 ${XDNA_EMU_INT8_GOPS:-modelled} GOP/s), not the silicon's;"
    else
        echo "   modelled on measured 8700G figures (power mode ${XDNA_EMU_POWER_MODE:-default}; docs/emulator.md, \"The timing model\");"
    fi
    echo "   the host's side (conversion, copies, synchronisation) is measured. No XDNA1 NPU was used."
fi
echo
echo "done in $(progress_fmt $(( SECONDS - t0 )))"
