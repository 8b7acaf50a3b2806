#!/usr/bin/env bash
# The microbenchmarks, behind one command: builds whatever is missing (scripts/build.sh), then runs
#   xdna-microbench  the per-multiply routing overhead (claim policy, compute engine, scheduler hand-offs) and the
#                    split planner's decision time (tools/microbench)
#   bench-convert    the NPU weight and activation conversion throughput per weight type (tools/bench-convert)
#   xdna-bench-npu-feed  the NPU worker's host feed rate, the software XDNA1 in null mode (tools/bench-npu-feed)
# Google Benchmark prints the first two tables; with --out DIR their results are also written as JSON into DIR.
#
#   scripts/microbench.sh                  # everything, Google Benchmark's default run times
#   scripts/microbench.sh --quick          # shorter runs (CI, a busy machine)
#   scripts/microbench.sh --threads 4      # CPU threads of the backends in the multiply benchmarks (default 1)
#   scripts/microbench.sh --filter planner # only benchmarks whose name matches (a regular expression)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

quick=0 threads=1 filter="" out=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) quick=1; shift ;;
        --threads) threads="${2:?--threads needs a number}"; shift 2 ;;
        --filter) filter="${2:?--filter needs a regular expression}"; shift 2 ;;
        --out) out="${2:?--out needs a folder}"; shift 2 ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "microbench.sh: unknown option '$1' (--help lists them)" >&2; exit 2 ;;
    esac
done
[[ "$threads" =~ ^[1-9][0-9]*$ ]] || { echo "microbench.sh: --threads: '$threads' is not a thread count" >&2; exit 2; }
[[ -z "$out" ]] || mkdir -p "$out"

build=${XDNA_BENCH_BUILD:-$("$root/scripts/build.sh" | tail -1)}
bin="$build/bin"

# run NAME PROGRAM ARGS...: one Google Benchmark program, with the common options
run() {
    local name=$1; shift
    local args=()
    [[ -n "$filter" ]] && args+=("--benchmark_filter=$filter")
    [[ -n "$out" ]] && args+=("--benchmark_out=$out/$name.json" "--benchmark_out_format=json")
    "$@" "${args[@]}"
}

echo "== the plugin's routing overhead and the split planner's decision time (xdna-microbench)"
[[ -x "$bin/xdna-microbench" ]] || { echo "microbench.sh: $bin/xdna-microbench was not built" >&2; exit 1; }
mb_args=("--threads=$threads")
(( quick )) && mb_args+=(--benchmark_min_time=0.05)
run xdna-microbench "$bin/xdna-microbench" "${mb_args[@]}"

echo
echo "== weight and activation conversion throughput per type (bench-convert)"
if [[ -x "$bin/bench-convert" ]]; then
    bc_args=()
    # bench-convert sets its own run time per benchmark; --quick keeps to the most common types
    (( quick )) && bc_args+=(--types=q4_0,q8_0,q4_K)
    run bench-convert "$bin/bench-convert" "${bc_args[@]}"
else
    echo "bench-convert was not built (tools/bench-convert)"
fi

echo
echo "== the NPU worker's host feed rate, the software XDNA1 in null mode (xdna-bench-npu-feed)"
if [[ -x "$bin/xdna-bench-npu-feed" ]]; then
    # tokens per multiply, repetitions; --quick measures fewer repetitions
    if (( quick )); then "$bin/xdna-bench-npu-feed" 512 2; else "$bin/xdna-bench-npu-feed" 512 5 0 moe; fi
else
    echo "xdna-bench-npu-feed was not built (tools/bench-npu-feed)"
fi
