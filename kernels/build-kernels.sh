#!/usr/bin/env bash
# Builds the npu1 (XDNA1: Ryzen 7040/8040, 8600G/8700G) kernel set of ggml-xdna with mlir-aie, and writes the
# kernel manifest the NPU runtime reads. See README.md in this folder: it needs an mlir-aie checkout with its
# environment set up (Python packages, Peano), and it has not been run by the project (no machine here has it).
#
#   kernels/build-kernels.sh --mlir-aie DIR [--out DIR] [--tokens 64,128,256,512] [--rows 256,512,1024] [--k 1024]
#                            [--k-complete 2048,4096] [--no-int8] [--no-wide-tiles] [--xclbin-per-block] [--jobs N]
#                            [--any-mlir-aie]
#
# The mlir-aie checkout must be at the pinned commit below (--any-mlir-aie accepts another one that contains the
# two fixes the designs need, with a warning): whole_array asserted m % 32 == 0 with B column-major from 2024-09
# until mlir-aie eca6ce66f (2025-04-02), which rejects every block here (m = 16), and aiecc writes instruction
# streams as raw words since mlir-aie b0baba5c0 (2025-03-20).
#
# Designs (mlir-aie programming_examples/basic/matrix_multiplication/whole_array, 4 columns, B column-major):
#   bf16:     bf16 x bf16 -> f32, core tile 16 x 64 x 64 (every block)
#   bf16_m64: bf16 x bf16 -> f32, core tile 64 x 64 x 32 (the upstream default; blocks of 256 tokens and more)
#   i8:       i8 x i8 -> i32,     core tile 16 x 128 x 64 (every block)
#   i8_m64:   i8 x i8 -> i32,     core tile 64 x 64 x 64 (blocks of 256 tokens and more)
# The wide tiles (m = 64) are what the published XDNA1 measurements favour where a block has the tokens for them
# (docs/emulator.md, "The timing model"); --no-wide-tiles leaves them out.
# Each (tokens, rows) block is one whole_array build; its instruction stream goes into the manifest. By default
# the blocks of one design share one xclbin (the one built for the largest block), which is what lets one
# hardware context serve every block size: the core program depends on K and the tile only. Check that on the
# hardware with xdna-npu-smoke; --xclbin-per-block gives every block its own xclbin (and context) instead.
set -euo pipefail

# The mlir-aie commit this recipe is written against (main, 2026-04; its whole_array Makefile is byte-identical to
# the one at 35da5c11) and the two commits any other checkout must contain.
pinned_mlir_aie=${GGML_XDNA_MLIR_AIE_PIN:-979629649}   # the override is for tests/npu/test-build-kernels.sh
required_mlir_aie="eca6ce66f b0baba5c0"

mlir_aie="" out="" tokens="64,128,256,512" rows="256,512,1024" ks="1024" k_complete="" int8=1 wide=1 per_block=0 jobs=2 any_mlir_aie=0
while [ $# -gt 0 ]; do
    case "$1" in
        --mlir-aie) mlir_aie="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --tokens) tokens="$2"; shift 2 ;;
        --rows) rows="$2"; shift 2 ;;
        --k) ks="$2"; shift 2 ;;
        --k-complete) k_complete="$2"; shift 2 ;;
        --no-int8) int8=0; shift ;;
        --no-wide-tiles) wide=0; shift ;;
        --xclbin-per-block) per_block=1; shift ;;
        --jobs) jobs="$2"; shift 2 ;;
        --any-mlir-aie) any_mlir_aie=1; shift ;;
        *) echo "build-kernels.sh: unknown option '$1' (see the header of this script)" >&2; exit 2 ;;
    esac
done

[ -n "$mlir_aie" ] || { echo "build-kernels.sh: --mlir-aie DIR (an mlir-aie source checkout) is required" >&2; exit 2; }
whole_array="$mlir_aie/programming_examples/basic/matrix_multiplication/whole_array"
[ -f "$whole_array/Makefile" ] || { echo "build-kernels.sh: no whole_array example under '$mlir_aie'" >&2; exit 2; }
# The pinned Makefile calls `aiecc`; `aiecc.py` is only a wrapper that runs `aiecc` itself, so with aiecc.py alone
# every block would fail at make time.
command -v aiecc >/dev/null ||
    { echo "build-kernels.sh: aiecc is not on PATH (aiecc.py alone is not enough: it runs aiecc): set up the mlir-aie environment first" >&2; exit 2; }
# The pinned toolchain, checked before anything is built.
head=$(git -C "$mlir_aie" rev-parse HEAD 2>/dev/null) ||
    { echo "build-kernels.sh: '$mlir_aie' is not a git checkout: cannot check it is mlir-aie $pinned_mlir_aie" >&2; exit 2; }
if [ "${head#"$pinned_mlir_aie"}" = "$head" ]; then
    if [ "$any_mlir_aie" != 1 ]; then
        echo "build-kernels.sh: mlir-aie is at ${head:0:12}, not the pinned $pinned_mlir_aie" \
             "(git -C '$mlir_aie' checkout $pinned_mlir_aie, or --any-mlir-aie to try this one)" >&2
        exit 2
    fi
    for c in $required_mlir_aie; do
        git -C "$mlir_aie" merge-base --is-ancestor "$c" HEAD 2>/dev/null ||
            { echo "build-kernels.sh: mlir-aie ${head:0:12} does not contain $c, which the designs need (see the header of this script)" >&2; exit 2; }
    done
    echo "build-kernels.sh: warning: mlir-aie ${head:0:12} is not the pinned $pinned_mlir_aie; check every kernel with xdna-npu-smoke" >&2
fi
[ -n "${PEANO_INSTALL_DIR:-}" ] || { echo "build-kernels.sh: PEANO_INSTALL_DIR is not set (mlir-aie's env setup sets it)" >&2; exit 2; }
out="${out:-$(pwd)/kernels-npu1}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$out/build-logs"
mkdir -p "$work"

IFS=, read -r -a token_list <<< "$tokens"
IFS=, read -r -a row_list <<< "$rows"
IFS=, read -r -a k_list <<< "$ks"
if [ -n "$k_complete" ]; then IFS=, read -r -a kc_list <<< "$k_complete"; else kc_list=(); fi

# name dtype_in dtype_out m k n K
designs=()
for K in "${k_list[@]}" "${kc_list[@]}"; do designs+=("bf16_k$K bf16 f32 16 64 64 $K"); done
if [ "$wide" = 1 ]; then
    for K in "${k_list[@]}"; do designs+=("bf16_k${K}_m64 bf16 f32 64 64 32 $K"); done
fi
if [ "$int8" = 1 ]; then
    for K in "${k_list[@]}"; do designs+=("i8_k$K i8 i32 16 128 64 $K"); done
    if [ "$wide" = 1 ]; then
        for K in "${k_list[@]}"; do designs+=("i8_k${K}_m64 i8 i32 64 64 64 $K"); done
    fi
fi

blocks_file="$out/blocks.txt"   # design T R xclbin instr, one line per built block
: > "$blocks_file"
failed=0
for d in "${designs[@]}"; do
    read -r name din dout tm tk tn K <<< "$d"
    for T in "${token_list[@]}"; do
        [ $((T % (4 * tm))) = 0 ] || continue   # the tile's 4 rows of m must divide the block's tokens
        for R in "${row_list[@]}"; do
            # The example builds into its own build/ folder, and its intermediate files are keyed by a suffix that
            # encodes neither the data types nor b_col_maj (nor does the core object mm_<m>x<k>x<n>.o): leftovers
            # of an earlier build would be silently reused. Every block therefore starts from an empty build/.
            dir="$whole_array"
            rm -rf "$dir/build"
            suffix="${T}x${K}x${R}_${tm}x${tk}x${tn}_4c"
            log="$work/${name}_t${T}_r${R}.log"
            echo "== $name: $T tokens x $K x $R rows"
            # npu1 by name: makefile-common picks npu2 when NPU2=1, which mlir-aie's env_setup.sh exports on Strix
            # and Krackan machines (the manifest would then label npu2 kernels npu1)
            if ! make -C "$dir" -j"$jobs" devicename=npu NPU2=0 M="$T" K="$K" N="$R" m="$tm" k="$tk" n="$tn" \
                    n_aie_cols=4 b_col_maj=1 dtype_in="$din" dtype_out="$dout" "build/final_${suffix}.xclbin" > "$log" 2>&1; then
                echo "   FAILED (see $log); the block is left out of the manifest" >&2
                failed=$((failed + 1))
                continue
            fi
            # makefile-common names it insts_<suffix>.txt, but aiecc writes raw words into it: it is stored as .bin
            # (the NPU runtime reads the form from the content either way).
            instr=""
            for cand in "$dir/build/insts_${suffix}.bin" "$dir/build/insts_${suffix}.txt"; do
                if [ -f "$cand" ]; then instr="$cand"; break; fi
            done
            [ -n "$instr" ] || { echo "   no instruction file in $dir/build" >&2; failed=$((failed + 1)); continue; }
            mkdir -p "$out/$name"
            cp "$dir/build/final_${suffix}.xclbin" "$out/$name/t${T}_r${R}.xclbin"
            cp "$instr" "$out/$name/t${T}_r${R}.bin"
            echo "$name $din $dout $K $T $R $name/t${T}_r${R}.xclbin $name/t${T}_r${R}.bin $tm $tk $tn" >> "$blocks_file"
        done
    done
done

python3 - "$out" "$blocks_file" "$per_block" "$head" <<'PY'
import json, shutil, sys
out, blocks_file, per_block, mlir_aie_head = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4]
rows = [line.split() for line in open(blocks_file) if line.strip()]
designs = {}
for name, din, dout, K, T, R, xclbin, instr, tm, tk, tn in rows:
    key = f"{name}_t{T}_r{R}" if per_block else name
    d = designs.setdefault(key, {"name": key, "xclbin": xclbin, "kernel": "MLIR_AIE", "a": din, "b": din,
                                 "c": dout, "b_layout": "nk", "k": int(K),
                                 "tile": {"m": int(tm), "k": int(tk), "n": int(tn), "columns": 4},
                                 "blocks": [], "_largest": 0})
    d["blocks"].append({"name": f"{name}_t{T}_r{R}", "tokens": int(T), "rows": int(R), "instr": instr})
    if not per_block and int(T) * int(R) > d["_largest"]:
        d["_largest"], d["xclbin"] = int(T) * int(R), xclbin
for d in designs.values():
    if not per_block:
        shutil.copyfile(f"{out}/{d['xclbin']}", f"{out}/{d['name']}.xclbin")
        d["xclbin"] = f"{d['name']}.xclbin"
    del d["_largest"]
manifest = {"format": "ggml-xdna-kernels", "version": 1, "target": "npu1", "emulator": False,
            "comment": f"built by kernels/build-kernels.sh with mlir-aie whole_array at {mlir_aie_head}",
            "designs": list(designs.values())}
with open(f"{out}/manifest.json", "w") as f:
    json.dump(manifest, f, indent=2)
print(f"{len(rows)} blocks in {len(designs)} designs -> {out}/manifest.json")
PY
if [ "$failed" -gt 0 ]; then
    echo "build-kernels.sh: $failed block(s) failed to build and are missing from the manifest" >&2
fi
echo "Check every kernel on the NPU: xdna-npu-smoke --kernels $out/manifest.json --check"
