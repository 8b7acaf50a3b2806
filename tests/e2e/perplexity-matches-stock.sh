#!/usr/bin/env bash
# End to end: llama-perplexity on a generated model gives the same perplexity with the plugin (CPU worker only) as
# the stock CPU, to the last printed digit, and the plugin's own log proves it was loaded and computed multiplies.
#
# Every compared value (the running perplexity after each chunk) is compared to 1e-12 relative rather than as a string:
# llama-perplexity adds up its log-probabilities on several threads in whatever order they finish, so the stock CPU
# alone varies in the 16th-17th significant digit from run to run (the generated models' perplexities are large
# numbers, printed with 4 decimals). A 1e-12 bound is far below any real difference in the logits.
# usage: perplexity-matches-stock.sh <llama bin dir> <libggml-xdna.so> <xdna-gen-model> <llama src> <text> <model> <type> [layers]
set -euo pipefail
bin=$1 plugin=$2 gen=$3 src=$4 text=$5 model=$6 type=$7 layers=${8:-}

m=$("$gen" --model "$model" --type "$type" ${layers:+--layers "$layers"} --llama-src "$src" --llama-bin "$bin")
source "$(dirname "${BASH_SOURCE[0]}")/../lib/perplexity.sh"
chunks=3   # compared; one more is computed (tests/lib/perplexity.sh)
args=(-m "$m" -f "$text" -c 128 --chunks $((chunks + 1)) -b 128 -t 2)
perplexity() { ppl_run $chunks env "$@" "$bin/llama-perplexity" "${args[@]}"; }
stock=$(perplexity GGML_XDNA_DISABLE=1 GGML_BACKEND_PATH="$plugin")
plugin_out=$(perplexity GGML_XDNA_DEBUG=1 GGML_XDNA_NPU=emulator GGML_XDNA_NPU_SHARE=0 GGML_XDNA_GPU=none GGML_BACKEND_PATH="$plugin")

ppl() { ppl_values $chunks "$1"; }
# the debug log shows each claimed shape and the split computed for it, during the run
claimed=$(grep -cE 'ggml-xdna: route .*: claimed' <<<"$plugin_out" || true)
splits=$(grep -E 'ggml-xdna: split ' <<<"$plugin_out" || true)
summary=$(grep -E 'ggml-xdna: [0-9]+ multiplies' <<<"$plugin_out" || true)
echo "stock : $(ppl "$stock" | tr '\n' ' ')"
echo "plugin: $(ppl "$plugin_out" | tr '\n' ' ')"
echo "plugin: $claimed shapes claimed; $(wc -l <<<"$splits") split decisions, e.g. $(head -1 <<<"$splits")"
echo "${summary:-(the end-of-run summary was not flushed by the log of the tool before exit)}"

[[ -n "$(ppl "$stock")" ]] || { echo "no perplexity from the stock run"; tail -20 <<<"$stock"; exit 1; }
grep -q 'ggml-xdna: ' <<<"$stock" && { echo "the plugin took part in the stock run"; exit 1; }
(( claimed > 0 )) && [[ -n "$splits" ]] || { echo "the plugin did not compute any multiply: not loaded, or claimed nothing"; tail -20 <<<"$plugin_out"; exit 1; }
values() { ppl "$1"; }
[[ $(values "$stock" | wc -l) == $(values "$plugin_out" | wc -l) ]] || { echo "the runs printed different numbers of values"; exit 1; }
paste <(values "$stock") <(values "$plugin_out") |
    awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-12 * $1) { print "value " NR " differs: " $1 " vs " $2; bad = 1 } } END { exit bad }'
echo "1 passed, 0 failed"
