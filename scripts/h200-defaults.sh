#!/usr/bin/env bash
# The plugin's defaults next to a discrete GPU (an NVIDIA H200 machine: CUDA, 16 cores, no network): the pinned
# llama.cpp built with CUDA, the plugin against it, a generated Llama-3.2-3B-shaped Q4_0 model, then llama-bench
# (-p 512 -n 64 -r 3), interleaved in passes, at -ngl 0 and -ngl 99:
#   stock     stock llama.cpp (the plugin not loaded)
#   plugin    the same binary with the plugin loaded and nothing set (its defaults)
# and which devices each sees (llama-bench's backend column, the plugin's load line).
#
# usage: scripts/h200-defaults.sh <llama.cpp source tar.xz> [nlohmann_json prefix]
# Writes results.md and logs to $OUT when set, else build-h200-defaults/. Environment: PASSES (default 2), JOBS,
# CUDA_ARCH (default 90), LAYERS (default: all 28), LLAMA_BUILD (an existing build of the same llama.cpp: not rebuilt).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tarball=$(readlink -f "$1")
prefix=${2:+$(readlink -f "$2")}
work=/tmp/h200-defaults
out=${OUT:-$root/build-h200-defaults}
mkdir -p "$work" "$out"
jobs=${JOBS:-$(nproc)} passes=${PASSES:-2}
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 ))s] $*" | tee -a "$out/results.md" >&2; }

tar -xJf "$tarball" -C "$work" || exit 1
src=$work/llama lb=${LLAMA_BUILD:-$work/llama-build} pb=$work/plugin
cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
on() { [[ "$cpu_flags" == *" $1 "* ]] && echo ON || echo OFF; }
isa="-DGGML_AVX=$(on avx) -DGGML_AVX2=$(on avx2) -DGGML_BMI2=$(on bmi2) -DGGML_FMA=$(on fma) -DGGML_F16C=$(on f16c)
     -DGGML_AVX_VNNI=$(on avx_vnni) -DGGML_AVX512=$(on avx512f) -DGGML_AVX512_VBMI=$(on avx512vbmi)
     -DGGML_AVX512_VNNI=$(on avx512_vnni) -DGGML_AVX512_BF16=$(on avx512_bf16)"
say "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(nproc) threads; $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
[[ -n "${LLAMA_BUILD:-}" ]] || {   # (LLAMA_BUILD: an existing build of the same llama.cpp, for a dry run elsewhere)
cmake -S "$src" -B "$lb" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON \
    -DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
    -DGGML_CUDA_FA_ALL_QUANTS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_OPENSSL=OFF $isa >"$out/llama-configure.log" 2>&1 || { tail -20 "$out/llama-configure.log"; exit 1; }
timeout 330 cmake --build "$lb" -j "$jobs" --target ggml ggml-base ggml-cpu ggml-cuda llama-bench llama-quantize \
    >"$out/llama-build.log" 2>&1 || { tail -20 "$out/llama-build.log"; exit 1; }
say "llama.cpp with CUDA built"
}
cmake -S "$root" -B "$pb" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_SRC="$src" -DLLAMA_BUILD="$lb" \
    -DGGML_XDNA_BUILD_TESTS=OFF ${prefix:+-DCMAKE_PREFIX_PATH="$prefix"} >"$out/plugin-configure.log" 2>&1 ||
    { tail -20 "$out/plugin-configure.log"; exit 1; }
cmake --build "$pb" -j "$jobs" --target ggml-xdna xdna-gen-model >"$out/plugin-build.log" 2>&1 ||
    { tail -20 "$out/plugin-build.log"; exit 1; }
say "plugin built"
export GGML_XDNA_CACHE=$work/cache
model=$(timeout 240 "$pb/bin/xdna-gen-model" --model llama-3.2-3b --type Q4_0 ${LAYERS:+--layers "$LAYERS"} \
        --llama-src "$src" --llama-bin "$lb/bin" 2>"$out/gen-model.log") || { tail -20 "$out/gen-model.log"; exit 1; }
say "model: $(basename "$model") ($(( $(stat -c %s "$model") >> 20 )) MiB)"

for v in $(env | grep -oE '^GGML_XDNA_[A-Z0-9_]+'); do [[ $v == GGML_XDNA_CACHE ]] || unset "$v"; done
bench() {   # bench TAG NGL ENV...: one llama-bench run; prints "pp tg"
    local tag=$1 ngl=$2; shift 2
    env "$@" "$lb/bin/llama-bench" -m "$model" -p 512 -n 64 -r 3 -t 16 -ngl "$ngl" -o jsonl \
        >"$out/$tag.jsonl" 2>"$out/$tag.log" || { echo "0 0"; return; }
    python3 - "$out/$tag.jsonl" <<'EOF'
import json, sys
pp = tg = 0.0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["n_prompt"] > 0 and r["n_gen"] == 0: pp = r["avg_ts"]
    if r["n_gen"] > 0 and r["n_prompt"] == 0: tg = r["avg_ts"]
print(f"{pp:.0f} {tg:.1f}")
EOF
}
echo "| pass | -ngl | stock pp512 | plugin pp512 | ratio | stock tg64 | plugin tg64 | ratio |" >>"$out/results.md"
echo "|---|---|---|---|---|---|---|---|" >>"$out/results.md"
for pass in $(seq 1 "$passes"); do
    for ngl in 0 99; do
        read -r s_pp s_tg < <(bench "stock-ngl$ngl-p$pass" "$ngl" -u GGML_BACKEND_PATH)
        read -r p_pp p_tg < <(bench "plugin-ngl$ngl-p$pass" "$ngl" GGML_BACKEND_PATH="$pb/bin/libggml-xdna.so")
        awk -v p="$pass" -v n="$ngl" -v a="$s_pp" -v b="$p_pp" -v c="$s_tg" -v d="$p_tg" 'BEGIN {
            printf "| %s | %s | %s | %s | %.3f | %s | %s | %.3f |\n", p, n, a, b, (a > 0 ? b / a : 0), c, d, (c > 0 ? d / c : 0) }' \
            >>"$out/results.md"
    done
done
say "benchmarks done"
{
    echo
    echo "plugin's load line: $(grep -h 'ggml-xdna' "$out"/plugin-ngl0-p1.log | head -3)"
    echo "llama-bench's backends: stock $(grep -oE '"backends": *"[^"]*"' "$out/stock-ngl0-p1.jsonl" | head -1), plugin $(grep -oE '"backends": *"[^"]*"' "$out/plugin-ngl0-p1.jsonl" | head -1)"
} >>"$out/results.md"
cat "$out/results.md"
