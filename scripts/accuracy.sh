#!/usr/bin/env bash
# The accuracy harness (tools/accuracy/accuracy.sh) with this checkout's build: the plugin from build/bin when it
# was built. Usage and options: tools/accuracy/accuracy.sh --help; docs/models.md explains the output.
#   scripts/accuracy.sh --model M.gguf [options]      the configuration under test: this environment's GGML_XDNA_*
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
args=()
if [[ " $* " != *" --plugin "* && -f "$repo/build/bin/libggml-xdna.so" ]]; then
    args+=(--plugin "$repo/build/bin/libggml-xdna.so")
fi
exec "$repo/tools/accuracy/accuracy.sh" "${args[@]}" "$@"
