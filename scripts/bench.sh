#!/usr/bin/env bash
# The benchmark command: builds whatever is missing (scripts/build.sh), then runs the harness (tools/bench/bench.py):
# configurations run interleaved in passes with llama-bench (or --server: llama-server), and a Markdown table and a
# PNG chart are written. Every option is the harness's (--help); docs/benchmarks.md explains the method.
#
#   scripts/bench.sh                                        # qwen3-0.6b Q4_0 (generated), CPU alone vs defaults
#   scripts/bench.sh --model my.gguf --config cpu --config default --config share0.5 --config w8 -t 8
#   scripts/bench.sh --server --model my.gguf               # the spec's llama-server measurement
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export XDNA_BENCH_ENTRY="scripts/bench.sh"
for a in "$@"; do
    # nothing to build for the help or for redrawing an earlier run
    [[ "$a" == "-h" || "$a" == "--help" || "$a" == "--redraw" ]] && exec python3 "$root/tools/bench/bench.py" "${emulator[@]}" "$@"
done
XDNA_BENCH_BUILD=$("$root/scripts/build.sh" | tail -1)
export XDNA_BENCH_BUILD
# a plugin built without XRT has no NPU to drive: its benchmarks ask for the software XDNA1 (an --env of the caller's
# comes later and wins)
emulator=()
if ! ldd "$XDNA_BENCH_BUILD/bin/libggml-xdna.so" 2>/dev/null | grep -q libxrt_coreutil; then
    emulator=(--env GGML_XDNA_NPU=emulator)
    echo "bench.sh: the plugin was built without XRT: the NPU is the software XDNA1 (--env GGML_XDNA_NPU=emulator)" >&2
fi
exec python3 "$root/tools/bench/bench.py" "${emulator[@]}" "$@"
