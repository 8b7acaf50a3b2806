# Shared by the model tests: arguments, the stock/plugin environments, model generation through the cache.
# Every script takes: GEN_MODEL LLAMA_BIN PLUGIN [more...]; PLUGIN may be "none" (the plugin was not built).
set -euo pipefail
gen_model="$1" llama_bin="$2" plugin="$3"
shift 3
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
text="$repo/data/accuracy-text.txt"
work="$(mktemp -d -t xdna-models-test.XXXXXX)"
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
need_plugin() { [[ "$plugin" != none && -f "$plugin" ]] || skip "the plugin (libggml-xdna.so) was not built"; }

# stock CPU: no out-of-tree backend and the plugin hidden even if something loads it
stock_env=(env -u GGML_BACKEND_PATH GGML_XDNA_DISABLE=1)
stock() { "${stock_env[@]}" "$@"; }
# through the plugin, CPU worker only
with_plugin() { env GGML_BACKEND_PATH="$plugin" GGML_XDNA_NPU=off GGML_XDNA_GPU=none "$@"; }

# gen NAME TYPE [options]: the model's path (generated once, then from the cache)
gen() {
    local name="$1" type="$2"
    shift 2
    "$gen_model" --model "$name" --type "$type" "$@" || fail "xdna-gen-model --model $name --type $type failed"
}

# a prompt long enough (>= 32 tokens) that the plugin claims its matrix multiplies
head -c 700 "$text" > "$work/prompt.txt"
