#!/usr/bin/env bash
# The NPU (emulated) must be about as accurate as the CPU it stands in for. On a generated Qwen3-0.6B-shaped model:
# 1. every row on the NPU with bf16 weights, scored against the high-precision reference (the same weights as F32 on
#    the stock CPU): its KL divergence is at most 1.5x the stock CPU's own KL from that reference;
# 2. the same with int8 NPU weights (GGML_XDNA_NPU_W8=1): reported;
# 3. the NPU given the CPU's repacked weights and given --no-repack weights agree exactly: llama-perplexity's saved
#    log-probabilities of the two runs are byte-identical (KL 0).
# usage: npu-accuracy.sh <llama bin> <plugin> <xdna-gen-model> <llama src> <tools bin> <model> <type> <layers>
set -euo pipefail
bin=$1 plugin=$2 gen=$3 src=$4 tools=$5 name=$6 type=$7 layers=$8
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
harness=$here/../../tools/accuracy/accuracy.sh

model=$("$gen" --model "$name" --type "$type" --layers "$layers" --llama-src "$src" --llama-bin "$bin")
ctx=${CTX:-256}
harness_args=(--model "$model" --plugin "$plugin" --ctx "$ctx" --chunks 2 --llama-bin "$bin" --tools-bin "$tools")

field() { grep -E "^RESULT $1 " <<<"$2" | grep -oE "$3=[0-9.e+-]+" | cut -d= -f2; }

echo "== $name ($type, $layers layers): every row on the NPU, bf16 weights"
out=$(GGML_XDNA_NPU=emulator GGML_XDNA_NPU_SHARE=1 bash "$harness" "${harness_args[@]}" --compare plugin,reference 2>&1) || { echo "$out"; exit 1; }
grep -vE '^RESULT' <<<"$out" | tail -6
npu=$(field test_vs_f32 "$out" kld_mean) cpu=$(field cpu_vs_f32 "$out" kld_mean)
awk -v n="$npu" -v c="$cpu" 'BEGIN { ok = n <= 1.5 * c; printf "NPU KLD from F32 %.6f vs stock CPU %.6f: ratio %.2f (limit 1.5) %s\n", n, c, n / c, ok ? "ok" : "TOO HIGH"; exit !ok }'

[[ -n "${SKIP_W8:-}" ]] || {
echo "== the same with int8 NPU weights (GGML_XDNA_NPU_W8=1), reported"
out8=$(GGML_XDNA_NPU=emulator GGML_XDNA_NPU_SHARE=1 GGML_XDNA_NPU_W8=1 bash "$harness" "${harness_args[@]}" --compare plugin,reference 2>&1) || { echo "$out8"; exit 1; }
grep -vE '^RESULT' <<<"$out8" | tail -4
}

echo "== repacked weights against --no-repack weights, every row on the NPU"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ppl=(-m "$model" -f "$here/../../data/accuracy-text.txt" -c "$ctx" --chunks 2 -t 2)
for run in repack no-repack; do
    GGML_XDNA_NPU=emulator GGML_XDNA_NPU_SHARE=1 GGML_BACKEND_PATH="$plugin" "$bin/llama-perplexity" "${ppl[@]}" \
        --kl-divergence-base "$tmp/$run.kld" $([[ $run == no-repack ]] && echo --no-repack) >"$tmp/$run.log" 2>&1 \
        || { tail -5 "$tmp/$run.log"; exit 1; }
done
cmp "$tmp/repack.kld" "$tmp/no-repack.kld" || { echo "the NPU's results differ between repacked and --no-repack weights"; exit 1; }
echo "identical log-probabilities ($(stat -c %s "$tmp/repack.kld") bytes) from repacked and --no-repack weights"
echo "1 passed, 0 failed"
