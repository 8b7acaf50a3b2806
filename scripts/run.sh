#!/usr/bin/env bash
# The main job: builds whatever is missing, generates a model with Qwen3-0.6B's exact shapes (Q4_0), and runs a real
# llama.cpp prompt (about 500 tokens: one llama.cpp micro-batch) through the plugin, then the same prompt on the stock
# CPU. It ends with what each worker did (rows, time) and the tokens/s of both runs.
#
# Environment: MODEL (default qwen3-0.6b; see xdna-gen-model --list), TYPE (default Q4_0), LAYERS (default: all),
# THREADS (default: all cores), N_PREDICT (default 32), and any GGML_XDNA_* variable (docs/configuration.md).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
model_name=${MODEL:-qwen3-0.6b} type=${TYPE:-Q4_0} threads=${THREADS:-$(nproc)} n_predict=${N_PREDICT:-32}

build=$("$root/scripts/build.sh" | tail -1)
mapfile -t llama < <("$root/scripts/build-llama.sh" 2>/dev/null)
llama_src=${llama[0]} bin=${llama[1]}/bin
plugin=$build/bin/libggml-xdna.so

echo "== model: $model_name ($type), generated with the exact shapes of the real one"
model=$("$build/bin/xdna-gen-model" --model "$model_name" --type "$type" ${LAYERS:+--layers "$LAYERS"} \
        --llama-src "$llama_src" --llama-bin "$bin")
ls -l "$model" | awk '{ printf "   %s (%.0f MiB)\n", $NF, $5 / 1048576 }'

prompt=$(mktemp) report=$(mktemp) out=$(mktemp) text=$(mktemp)
trap 'rm -f "$prompt" "$report" "$out" "$text"' EXIT
head -c 2200 "$root/data/accuracy-text.txt" >"$prompt"

run() {   # run <label> <env...>: one llama-completion run, greedy, fixed prompt
    local label=$1; shift
    env "$@" GGML_BACKEND_PATH="$plugin" "$bin/llama-completion" -m "$model" -f "$prompt" -n "$n_predict" \
        --temp 0 --ignore-eos -no-cnv -t "$threads" >"$text" 2>"$out" || { tail -20 "$out"; echo "$label run failed"; exit 1; }
    pp=$(grep -oE 'prompt eval time = .*' "$out" | grep -oE '[0-9.]+ tokens per second' | head -1)
    ntok=$(grep -oE 'prompt eval time = +[0-9.]+ ms / +[0-9]+ tokens' "$out" | grep -oE '[0-9]+ tokens')
    tg=$(grep -oE ' eval time = .* runs .*' "$out" | grep -oE '[0-9.]+ tokens per second' | tail -1)
}

echo "== llama-completion through the plugin (the NPU worker is $( [[ -e /opt/xilinx/xrt ]] && echo "on XRT" || echo "the software XDNA1 emulator, if enabled" ))"
run plugin GGML_XDNA_REPORT="$report"
echo "--- the end of the prompt, then [the generated text] (random weights: expect no sense):"
printf '   ...%s[%s]\n' "$(head -c "$(wc -c <"$prompt")" "$text" | tail -c 120 | tr '\n' ' ')" \
    "$(tail -c +"$(( $(wc -c <"$prompt") + 1 ))" "$text" | tr '\n' ' ')"
plugin_pp=$pp plugin_tg=$tg plugin_tok=$ntok

echo "== the same prompt on the stock CPU (GGML_XDNA_DISABLE=1)"
run stock GGML_XDNA_DISABLE=1
echo
echo "== what each worker did"
sed 's/^/   /' "$report"
echo "== tokens/s"
echo "   prompt processing ($plugin_tok): plugin $plugin_pp | stock CPU $pp"
echo "   generation:                   plugin $plugin_tg | stock CPU $tg   (token generation stays on the CPU)"
