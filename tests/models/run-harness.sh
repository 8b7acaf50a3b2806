#!/usr/bin/env bash
# The accuracy harness can pass and can fail.
#   plugin     the plugin with its CPU worker only: KL 0 (the log-probability files are bit-identical) and 100% top
#              agreement against the stock CPU; the noise floor and F32 reference rows are printed alongside
#   perturbed  the stock CPU against itself reports exactly zero, and the same run with one weight perturbed on the
#              test side reports a KL above zero and fails --max-kld
# usage: run-harness.sh GEN_MODEL LLAMA_BIN PLUGIN TOOLS_BIN MODE
source "$(dirname "$0")/common.sh"
tools_bin="$1" mode="$2"
harness=("$repo/tools/accuracy/accuracy.sh" --llama-bin "$llama_bin" --tools-bin "$tools_bin" --work "$work/acc"
         --ctx 128 --chunks 4 --threads 2)
result() { sed -n "s/^RESULT $1 .*$2=\([^ ]*\).*/\1/p" "$3"; }

case "$mode" in
plugin)
    need_plugin
    model="$(gen llama-tiny Q4_0)"
    "${harness[@]}" --model "$model" --plugin "$plugin" --env GGML_XDNA_NPU=off --env GGML_XDNA_GPU=none \
        --max-kld 0.00001 --min-same-top 100 | tee "$work/out.txt" || fail "the harness failed the CPU-worker-only plugin"
    [[ "$(result test_vs_cpu max_dlogp "$work/out.txt")" == 0 ]] || fail "log-probabilities differ from the stock CPU's"
    [[ "$(result test_vs_cpu same_top "$work/out.txt")" == 100.000 ]] || fail "top tokens differ from the stock CPU's"
    [[ -n "$(result cpu_norepack_vs_cpu kld_mean "$work/out.txt")" ]] || fail "no noise floor row"
    [[ -n "$(result test_vs_f32 kld_mean "$work/out.txt")" ]] || fail "no F32 reference row"
    ;;
perturbed)
    model="$(gen llama-tiny F16)"
    "${harness[@]}" --model "$model" --compare plugin --max-kld 0 | tee "$work/same.txt" ||
        fail "the harness failed the stock CPU against itself"
    [[ "$(result test_vs_cpu max_dlogp "$work/same.txt")" == 0 ]] || fail "the stock CPU differs from itself"
    "$tools_bin/xdna-perturb-gguf" "$model" "$work/perturbed.gguf" blk.0.ffn_down.weight 0 1.0
    if "${harness[@]}" --model "$model" --test-model "$work/perturbed.gguf" --compare plugin --max-kld 0.0001 \
            > "$work/out.txt"; then
        cat "$work/out.txt"
        fail "the harness passed a model with a perturbed weight"
    fi
    cat "$work/out.txt"
    awk -v k="$(result test_vs_cpu kld_mean "$work/out.txt")" -v d="$(result test_vs_cpu max_dlogp "$work/out.txt")" \
        'BEGIN { exit !(k > 0.0001 && d > 0) }' || fail "the perturbed weight left no trace in the KL statistics"
    ;;
*)
    fail "unknown mode '$mode'"
    ;;
esac
echo "harness $mode: ok"
