#!/usr/bin/env bash
# The CPU-side benchmarks on a machine with more cores (an offline 16-core machine): builds the pinned llama.cpp
# (CPU only) from a given source tree and the plugin, then runs, writing everything to $OUT (or build-dev/):
#   1. scripts/bench-overhead.sh: the plugin with its CPU worker only against the stock CPU (issue: plugin cost);
#   2. scripts/planner-e2e.sh: auto against fixed NPU shares, emulated NPU in null mode at two speeds;
#   3. MoE: llama-bench -p 512 -n 0 on Qwen3-30B-A3B-shaped layers, CPU alone against the plugin with the NPU
#      emulated in timed and null mode at the papers' XDNA1 speed.
# usage: scripts/device-benchmarks.sh <pinned llama.cpp source tree> [steps: overhead planner moe]
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src=$(cd "$1" && pwd); shift
steps=${*:-overhead planner moe}
work=$root/build-dev
out=${OUT:-$work}
mkdir -p "$work" "$out"
jobs=$(nproc)
cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
on() { [[ "$cpu_flags" == *" $1 "* ]] && echo ON || echo OFF; }
isa="-DGGML_AVX=$(on avx) -DGGML_AVX2=$(on avx2) -DGGML_BMI2=$(on bmi2) -DGGML_FMA=$(on fma) -DGGML_F16C=$(on f16c)
     -DGGML_AVX_VNNI=$(on avx_vnni) -DGGML_AVX512=$(on avx512f) -DGGML_AVX512_VBMI=$(on avx512vbmi)
     -DGGML_AVX512_VNNI=$(on avx512_vnni) -DGGML_AVX512_BF16=$(on avx512_bf16)"
if [[ ! -x $work/llama/bin/llama-bench ]]; then
    cmake -S "$src" -B "$work/llama" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON \
        -DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_SERVER=OFF -DLLAMA_OPENSSL=OFF $isa >"$out/llama-configure.log" 2>&1 || exit 1
    cmake --build "$work/llama" -j "$jobs" --target ggml ggml-base ggml-cpu llama-bench llama-quantize \
        >"$out/llama-build.log" 2>&1 || { tail -20 "$out/llama-build.log"; exit 1; }
fi
cmake -S "$root" -B "$work/plugin" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_SRC="$src" -DLLAMA_BUILD="$work/llama" \
    -DGGML_XDNA_BUILD_TESTS=OFF >"$out/plugin-configure.log" 2>&1 || { tail -20 "$out/plugin-configure.log"; exit 1; }
cmake --build "$work/plugin" -j "$jobs" >"$out/plugin-build.log" 2>&1 || { tail -20 "$out/plugin-build.log"; exit 1; }
export LLAMA_BIN=$work/llama/bin LLAMA_SRC=$src PLUGIN=$work/plugin/bin/libggml-xdna.so GEN=$work/plugin/bin/xdna-gen-model
export GGML_XDNA_CACHE=$work/cache XDNA_EMU_LOG=0 GGML_XDNA_NPU=emulator
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(nproc) threads"
for s in $steps; do
    case $s in
        overhead) bash "$root/scripts/bench-overhead.sh" 3 -t "$jobs" 2>&1 | tee "$out/overhead.txt" ;;
        planner) BUILD=$work/plugin LAYERS=4 PASSES=2 bash "$root/scripts/planner-e2e.sh" 2>&1 | tee "$out/planner.txt" ;;
        moe)
            m=$("$GEN" --model qwen3-30b-a3b --type Q4_0 --layers 2 --llama-src "$src" --llama-bin "$LLAMA_BIN")
            for cfg in "cpu GGML_XDNA_DISABLE=1" "timed XDNA_EMU_MODE=timed" "null XDNA_EMU_MODE=null" \
                       "null-w8 XDNA_EMU_MODE=null GGML_XDNA_NPU_W8=1"; do
                set -- $cfg
                name=$1; shift
                r=$(env "$@" GGML_XDNA_REPORT="$out/moe-$name.report" GGML_BACKEND_PATH="$PLUGIN" "$LLAMA_BIN/llama-bench" \
                    -m "$m" -p 512 -n 0 -r 3 -t "$jobs" -o csv 2>"$out/moe-$name.err" |
                    python3 -c 'import csv,sys; r=list(csv.DictReader(sys.stdin))[-1]; print(r["avg_ts"], r["stddev_ts"])')
                echo "qwen3-30b-a3b (2 layers, Q4_0) pp512 $name: $r t/s | $(tail -1 "$out/moe-$name.report" 2>/dev/null)"
            done | tee "$out/moe.txt" ;;
    esac
done
