#!/usr/bin/env bash
# kernels/build-kernels.sh against a stand-in mlir-aie checkout (a git repository whose whole_array Makefile writes
# files named as mlir-aie's do): the pinned commit is checked before anything is built, aiecc must be on PATH
# (aiecc.py alone is refused), every block starts from an empty build/ (a stale intermediate file of another build is
# not reused), the device is npu1 even with NPU2=1 in the environment (as mlir-aie's env_setup.sh sets it on Strix),
# and the instruction stream, raw words in a file named .txt as aiecc writes it, is stored as .bin.
# usage: test-build-kernels.sh REPO_ROOT
set -euo pipefail
repo=$1
recipe="$repo/kernels/build-kernels.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The stand-in checkout. Like whole_array's, the Makefile keys its intermediate file by a suffix without the data
# types, and make rebuilds it only when it is missing.
mlir="$work/mlir-aie"
wa="$mlir/programming_examples/basic/matrix_multiplication/whole_array"
mkdir -p "$wa"
cat > "$wa/Makefile" <<'MK'
suffix=$(M)x$(K)x$(N)_$(m)x$(k)x$(n)_$(n_aie_cols)c
devicename ?= $(if $(filter 1,$(NPU2)),npu2,npu)
gen=$(if $(filter npu2,$(devicename)),004,003)
build/aie_$(suffix).mlir:
	mkdir -p build
	echo "dtype_in=$(dtype_in) dtype_out=$(dtype_out) b_col_maj=$(b_col_maj) devicename=$(devicename)" > $@
build/final_$(suffix).xclbin: build/aie_$(suffix).mlir
	cp $< $@
	printf '\000\001\$(gen)\006\040\000\000\000' > build/insts_$(suffix).txt
MK
git -C "$mlir" init -q
git -C "$mlir" -c user.name=t -c user.email=t@t add -A
git -C "$mlir" -c user.name=t -c user.email=t@t commit -qm "stand-in"
head=$(git -C "$mlir" rev-parse HEAD)
bin="$work/bin"
mkdir -p "$bin"
printf '#!/bin/sh\nexit 0\n' > "$bin/aiecc"
chmod +x "$bin/aiecc"
export PEANO_INSTALL_DIR="$work/peano"

# expect_error PATTERN COMMAND...: fails, exit status 2, one line matching PATTERN on stderr
expect_error() {
    local pattern="$1"; shift
    local rc=0
    "$@" > "$work/out" 2> "$work/err" || rc=$?
    [[ $rc == 2 ]] || { cat "$work/err"; fail "'$*': exit status $rc, expected 2"; }
    grep -q -- "$pattern" "$work/err" || { cat "$work/err"; fail "'$*': no error matching '$pattern'"; }
}

# No aiecc on PATH; aiecc.py alone is not enough.
expect_error "aiecc is not on PATH" env PATH="/usr/bin:/bin" "$recipe" --mlir-aie "$mlir" --out "$work/o0"
mv "$bin/aiecc" "$bin/aiecc.py"
expect_error "aiecc.py alone is not enough" env PATH="$bin:/usr/bin:/bin" "$recipe" --mlir-aie "$mlir" --out "$work/o0"
mv "$bin/aiecc.py" "$bin/aiecc"
# Not the pinned commit (the real pin: the stand-in is not it).
expect_error "not the pinned 979629649" env PATH="$bin:$PATH" "$recipe" --mlir-aie "$mlir" --out "$work/o1"
# Another commit is accepted only if it contains the fixes the designs need.
expect_error "does not contain eca6ce66f" env PATH="$bin:$PATH" "$recipe" --mlir-aie "$mlir" --out "$work/o1" --any-mlir-aie
[[ ! -e "$wa/build" ]] || fail "a refused checkout was built in"

# A stale intermediate of an earlier build of the same suffix, with other types and B row-major.
mkdir -p "$wa/build"
echo "dtype_in=i16 dtype_out=i16 b_col_maj=0" > "$wa/build/aie_64x1024x256_16x64x64_4c.mlir"
# NPU2=1 as mlir-aie's env_setup.sh exports it on Strix / Krackan: the blocks are built for npu1 all the same.
out="$work/kernels"
NPU2=1 GGML_XDNA_MLIR_AIE_PIN=${head:0:9} PATH="$bin:$PATH" \
    "$recipe" --mlir-aie "$mlir" --out "$out" --tokens 64,128 --rows 256 > "$work/log" 2>&1 ||
    { cat "$work/log"; fail "the build failed"; }
for d in bf16_k1024:bf16:f32 i8_k1024:i8:i32; do
    IFS=: read -r name din dout <<< "$d"
    for t in 64 128; do
        x="$out/$name/t${t}_r256.xclbin"
        [[ -f $x ]] || fail "$x missing"
        grep -q "dtype_in=$din dtype_out=$dout b_col_maj=1 " "$x" || fail "$x was built from a stale file: $(cat "$x")"
        grep -q " devicename=npu$" "$x" || fail "$x was not built for npu1 with NPU2=1 set: $(cat "$x")"
        i="$out/$name/t${t}_r256.bin"
        [[ -f $i ]] || fail "$i missing (the instruction stream is stored as .bin)"
        cmp -s "$i" <(printf '\000\001\003\006\040\000\000\000') || fail "$i is not the npu1 stream aiecc wrote"
        [[ ! -e "$out/$name/t${t}_r256.txt" ]] || fail "a .txt instruction file was written"
    done
done
python3 - "$out/manifest.json" "$head" <<'PY' || fail "manifest"
import json, sys
m = json.load(open(sys.argv[1]))
assert sys.argv[2] in m["comment"], m["comment"]
blocks = [b for d in m["designs"] for b in d["blocks"]]
assert len(blocks) == 4, blocks
assert all(b["instr"].endswith(".bin") for b in blocks), blocks
PY

# The wide tiles: a block of 256 tokens is built in the m64 designs too (whole_array's m, k, n as the manifest's tile
# says), one of 128 only in the narrow ones; --no-wide-tiles leaves them out.
wide="$work/wide"
GGML_XDNA_MLIR_AIE_PIN=${head:0:9} PATH="$bin:$PATH" \
    "$recipe" --mlir-aie "$mlir" --out "$wide" --tokens 128,256 --rows 256 > "$work/log" 2>&1 ||
    { cat "$work/log"; fail "the build with the wide tiles failed"; }
GGML_XDNA_MLIR_AIE_PIN=${head:0:9} PATH="$bin:$PATH" \
    "$recipe" --mlir-aie "$mlir" --out "$work/narrow" --tokens 128,256 --rows 256 --no-wide-tiles > "$work/log" 2>&1 ||
    { cat "$work/log"; fail "the build without the wide tiles failed"; }
python3 - "$wide/manifest.json" "$work/narrow/manifest.json" <<'PY' || fail "manifest of the wide tiles"
import json, sys
tiles = {"bf16_k1024": (16, 64, 64), "bf16_k1024_m64": (64, 64, 32), "i8_k1024": (16, 128, 64), "i8_k1024_m64": (64, 64, 64)}
m = {d["name"]: d for d in json.load(open(sys.argv[1]))["designs"]}
assert sorted(m) == sorted(tiles), sorted(m)
for name, (tm, tk, tn) in tiles.items():
    d = m[name]
    assert d["tile"] == {"m": tm, "k": tk, "n": tn, "columns": 4}, (name, d["tile"])
    assert sorted(b["tokens"] for b in d["blocks"]) == ([128, 256] if tm == 16 else [256]), (name, d["blocks"])
narrow = [d["name"] for d in json.load(open(sys.argv[2]))["designs"]]
assert sorted(narrow) == ["bf16_k1024", "i8_k1024"], narrow
PY
[[ -f "$wide/bf16_k1024_m64/t256_r256.xclbin" ]] || fail "the wide bf16 block was not built"
echo "build-kernels.sh: pin checked, aiecc required, npu1 with NPU2=1 set, fresh build/ per block, instruction streams as .bin, wide tiles"
