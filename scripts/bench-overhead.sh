#!/usr/bin/env bash
# What routing the prompt multiplies through the plugin costs: llama-bench -p 512 -n 0 -ngl 0 -r 3 on a generated
# model with Qwen3-0.6B's shapes (Q4_0), the plugin with its CPU worker only (NPU and GPU workers off) against the
# plugin disabled (GGML_XDNA_DISABLE=1: the stock CPU path), interleaved in passes, compared within the run.
# Goal: at most 1% (the spec's fork cost up to 3%).
#
# usage: scripts/bench-overhead.sh [passes (3)] [extra llama-bench args, e.g. -t 16 -dev none]
# Environment: LLAMA_BIN, PLUGIN, GEN, LLAMA_SRC to use given builds (default: those of scripts/build.sh);
# MODEL (qwen3-0.6b), TYPE (Q4_0), LAYERS (all).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
passes=${1:-3}
shift || true
if [[ -z "${LLAMA_BIN:-}" ]]; then
    build=$("$root/scripts/build.sh" | tail -1)
    mapfile -t llama < <("$root/scripts/build-llama.sh" 2>/dev/null)
    LLAMA_SRC=${llama[0]} LLAMA_BIN=${llama[1]}/bin PLUGIN=$build/bin/libggml-xdna.so GEN=$build/bin/xdna-gen-model
fi
model=$("$GEN" --model "${MODEL:-qwen3-0.6b}" --type "${TYPE:-Q4_0}" ${LAYERS:+--layers "$LAYERS"} \
        --llama-src "$LLAMA_SRC" --llama-bin "$LLAMA_BIN")
echo "model: $(basename "$model"); llama-bench -p 512 -n 0 -ngl 0 -r 3 $*; $passes interleaved passes"

pp512() {   # pp512 <env...> -- <llama-bench args...>: the mean tokens/s of the run
    local envs=()
    while [[ $1 != -- ]]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" GGML_BACKEND_PATH="$PLUGIN" "$LLAMA_BIN/llama-bench" -m "$model" -p 512 -n 0 -ngl 0 -r 3 -o csv "$@" \
        2>/dev/null | python3 -c 'import csv, sys; print(list(csv.DictReader(sys.stdin))[-1]["avg_ts"])'
}
stock=() plugin=()
for p in $(seq "$passes"); do
    s=$(pp512 GGML_XDNA_DISABLE=1 -- "$@")
    q=$(pp512 GGML_XDNA_NPU=off GGML_XDNA_GPU=none -- "$@")
    stock+=("$s") plugin+=("$q")
    printf 'pass %d: stock CPU %8.1f t/s | plugin, CPU worker only %8.1f t/s | ratio %.3f\n' "$p" "$s" "$q" \
        "$(python3 -c "print($q / $s)")"
done
python3 - "${stock[*]}" "${plugin[*]}" <<'PY'
import statistics, sys
s = [float(x) for x in sys.argv[1].split()]
q = [float(x) for x in sys.argv[2].split()]
ms, mq = statistics.median(s), statistics.median(q)
print(f"median: stock CPU {ms:.1f} t/s, plugin {mq:.1f} t/s: the plugin runs at {mq / ms:.3f} of the stock speed "
      f"({(1 - mq / ms) * 100:+.1f}% cost; goal <= 1%)")
PY
