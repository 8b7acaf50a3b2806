#!/usr/bin/env bash
# The generated model's next-token distributions over the fixed text are peaked like a trained model's: mean
# entropy between 1 and 4 nats, and a top-token probability that varies from position to position.
# usage: run-entropy.sh GEN_MODEL LLAMA_BIN PLUGIN LOGPROBS NAME TYPE [gen options]
source "$(dirname "$0")/common.sh"
logprobs="$1" name="$2" type="$3"
shift 3
model="$(gen "$name" "$type" "$@")"
stock "$llama_bin/llama-perplexity" -m "$model" -f "$text" -c 256 --chunks 4 -t 2 --kl-divergence-base "$work/lp.bin" \
    > "$work/ppl.log" 2>&1 || { tail -n 20 "$work/ppl.log" >&2; fail "llama-perplexity failed"; }
"$logprobs" stats "$work/lp.bin" | tee "$work/stats.txt"
val() { sed -n "s/^$1: //p" "$work/stats.txt"; }
awk -v h="$(val entropy_mean)" -v sd="$(val top_p_sd)" -v lo="$(val top_p_min)" -v hi="$(val top_p_max)" 'BEGIN {
    bad = 0
    if (h < 1 || h > 4)   { print "mean entropy " h " nats is outside [1, 4]"; bad = 1 }
    if (sd < 0.1)         { print "top-token probability barely varies (sd " sd ")"; bad = 1 }
    if (lo > 0.5 || hi < 0.9) { print "top-token probability spans only " lo " .. " hi; bad = 1 }
    exit bad }' || fail "$name $type: outputs are not peaked like a trained model's"
echo "$name $type: entropy and top-token probability in range"
