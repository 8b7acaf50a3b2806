#!/usr/bin/env bash
# Generate (or find in the model cache) a set of test models and print a table: name, layers, type, size, path.
#
# usage: scripts/gen-models.sh [MODEL[:LAYERS] ...] [-- xdna-gen-model options, e.g. --type Q4_0]
#   no MODEL: every tiny variant; "all": every model at full depth (tens of GB for the mixtures of experts)
#   TYPES="F16 Q8_0 Q4_0" (environment): the weight types to produce (default Q8_0)
# Environment: GGML_XDNA_CACHE (the cache root), LLAMA_SRC / LLAMA_BIN (llama.cpp source tree and binaries),
# XDNA_TOOLS_BIN (where xdna-gen-model is; default build/bin).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
gen="${XDNA_TOOLS_BIN:-$repo/build/bin}/xdna-gen-model"
[[ -x "$gen" ]] || { echo "gen-models.sh: $gen not found: build the project first (or set XDNA_TOOLS_BIN)" >&2; exit 2; }

models=()
while [[ $# -gt 0 && "$1" != "--" ]]; do models+=("$1"); shift; done
[[ "${1:-}" == "--" ]] && shift
extra=("$@")
if [[ ${#models[@]} -eq 0 ]]; then
    models=(llama-tiny qwen2.5-tiny qwen3-tiny qwen3moe-tiny gpt-oss-tiny)
elif [[ "${models[*]}" == "all" ]]; then
    mapfile -t models < <("$gen" --list | awk 'NR > 1 { print $1 }')
fi

printf '%-15s %6s %-8s %10s  %s\n' model layers type MiB path
for m in "${models[@]}"; do
    name="${m%%:*}" layers=()
    [[ "$m" == *:* ]] && layers=(--layers "${m##*:}")
    for type in ${TYPES:-Q8_0}; do
        path="$("$gen" --model "$name" --type "$type" "${layers[@]}" "${extra[@]}")"
        n_layers="$(sed -E 's/.*-L([0-9]+)-.*/\1/' <<< "$(basename "$path")")"
        mib="$(awk -v b="$(stat -c %s "$path")" 'BEGIN { printf "%.1f", b / 1048576 }')"
        printf '%-15s %6s %-8s %10s  %s\n' "$name" "$n_layers" "$type" "$mib" "$path"
    done
done
