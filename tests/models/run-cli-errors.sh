#!/usr/bin/env bash
# Bad input to the generator and the harness gets a one-line error naming the problem, and a failing exit status.
# usage: run-cli-errors.sh GEN_MODEL LLAMA_BIN PLUGIN TOOLS_BIN
source "$(dirname "$0")/common.sh"
tools_bin="$1"
# expect_error PATTERN COMMAND...: the command fails and its stderr matches PATTERN
expect_error() {
    local pattern="$1"; shift
    if "$@" > "$work/out" 2> "$work/err"; then
        fail "'$*' succeeded"
    fi
    grep -q -- "$pattern" "$work/err" || { cat "$work/err"; fail "'$*': no error matching '$pattern'"; }
    [[ $(grep -c . "$work/err") -le 25 ]] || fail "'$*': the error is not short"
    ! grep -qi "abort\|segmentation\|core dumped" "$work/err" || fail "'$*' crashed"
}
expect_error "unknown model 'nope'"            "$gen_model" --model nope
expect_error "unknown weight type 'Q9_9'"      "$gen_model" --model llama-tiny --type Q9_9
expect_error "--layers 9: llama-tiny has 2"    "$gen_model" --model llama-tiny --layers 9
expect_error "'x' is not a non-negative"       "$gen_model" --model llama-tiny --seed x
expect_error "--entropy .* is out of range"    "$gen_model" --model llama-tiny --entropy 50 --cache-dir "$work/c"
expect_error "tokenizer not found"             "$gen_model" --model llama-tiny --llama-src "$work/none" --cache-dir "$work/c"
expect_error "unknown option '--bogus'"        "$gen_model" --bogus
expect_error "not a llama-perplexity log-probability file" "$tools_bin/xdna-logprobs" stats "$text"
expect_error "DELTA 'x' is not a number"       "$tools_bin/xdna-perturb-gguf" "$text" "$work/p.gguf" t 0 x
expect_error "not a readable GGUF file"        "$tools_bin/xdna-perturb-gguf" "$text" "$work/p.gguf" t
expect_error "no such model file"              "$repo/tools/accuracy/accuracy.sh" --model "$work/missing.gguf"
expect_error "unknown comparison 'x'"          "$repo/tools/accuracy/accuracy.sh" --model "$text" --compare x
echo "bad input: all refused with a clear message"
