#!/usr/bin/env bash
# Hardware validation, for a user with a first-generation XDNA NPU (Ryzen 7040 / 8040 mobile, Ryzen 8600G / 8700G)
# and XRT: checks the driver, XRT and the kernel set, then runs the NPU smoke test, test-backend-ops, the accuracy
# harness and the benchmark on a model you give, and writes ONE report file (Markdown) to send back. The smoke test
# comes first: if a kernel gives wrong results (further from its fp64 reference than mlir-aie's own matrix-multiply
# test allows, NaN or Inf) or there is no usable kernel set, nothing else is run, and the report says which kernels
# failed and why. The NMSE limit derived on the emulator is reported beside the measured NMSE per K, not used to
# stop: the silicon's own figure, from a first hardware run, is what sets it. The report also holds the XRT and
# driver versions, the firmware, the kernels' instruction stream headers and every NPU error the steps logged.
#
#   scripts/validate-hardware.sh --model my-model.gguf            # builds what is missing, about 10-30 minutes
#   scripts/validate-hardware.sh --model my-model.gguf --quick    # shorter accuracy and benchmark runs
#
# Without an NPU (no driver, no XRT) every step still runs, against the software XDNA1 emulator the plugin is then
# built with; the report says so at the top. Nothing here needs root: the driver checks only read /sys and /dev.
#
# Options:
#   --model FILE       the GGUF model for the accuracy and benchmark steps (required)
#   --report FILE      the report (default: xdna-validation-<date-time>.md in the current folder)
#   --threads N        CPU threads (default: the physical cores)
#   --quick            test-backend-ops on Q4_0 weights only, accuracy over 1 chunk of 256 tokens, a one-pass benchmark
#                      with 64-token prompts (for a first look; the full run is what to send back)
#   --max-kld X        the accuracy step fails above this mean KL divergence against the stock CPU (default 0.05)
#   --build DIR        an existing build of this project (default: build it with scripts/build.sh)
#   --llama-bin DIR    the pinned llama.cpp's bin folder (default: the one the build was configured with)
#   --skip LIST        comma list of steps not to run: smoke, backend-ops, accuracy, bench
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() { sed -n '2,/^set /{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
die() { echo "validate-hardware.sh: $*" >&2; exit 2; }

stop=""
model="" report="" threads="" quick=0 max_kld=0.05 build="" llama_bin="" skip=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --model) model="${2:?--model needs a file}"; shift 2 ;;
        --report) report="${2:?--report needs a file}"; shift 2 ;;
        --threads) threads="${2:?--threads needs a number}"; shift 2 ;;
        --quick) quick=1; shift ;;
        --max-kld) max_kld="${2:?--max-kld needs a number}"; shift 2 ;;
        --build) build="${2:?--build needs a folder}"; shift 2 ;;
        --llama-bin) llama_bin="${2:?--llama-bin needs a folder}"; shift 2 ;;
        --skip) skip="${2:?--skip needs a list}"; shift 2 ;;
        -h|--help) usage 0 ;;
        *) die "unknown option '$1' (--help lists them)" ;;
    esac
done
[[ -n "$model" ]] || die "--model is required (the GGUF model to check accuracy and speed on)"
[[ -f "$model" ]] || die "$model: no such model file"
model=$(cd "$(dirname "$model")" && pwd)/$(basename "$model")
[[ "$max_kld" =~ ^[0-9]*\.?[0-9]+$ ]] || die "--max-kld: '$max_kld' is not a number"
for s in ${skip//,/ }; do
    case "$s" in smoke|backend-ops|accuracy|bench) ;; *) die "--skip: unknown step '$s'" ;; esac
done
if [[ -z "$threads" ]]; then
    # physical cores: the spec measured with -t 8 on the 8-core 8700G
    threads=$(lscpu -p=CORE 2>/dev/null | grep -v '^#' | sort -u | wc -l)
    [[ "$threads" -ge 1 ]] 2>/dev/null || threads=$(nproc)
fi
[[ "$threads" =~ ^[1-9][0-9]*$ ]] || die "--threads: '$threads' is not a thread count"
report=${report:-xdna-validation-$(date +%Y%m%d-%H%M%S).md}
work=$(mktemp -d -t xdna-validation.XXXXXX)
trap 'rm -rf "$work"' EXIT

# ---- the report: a summary table of steps, then one section per step -------------------------------------------------
declare -a S_NAME S_STATUS S_NOTE
body="$work/body.md"
: >"$body"
record() {   # record STEP STATUS NOTE: one row of the summary (STATUS: PASS, FAIL, SKIP or INFO)
    S_NAME+=("$1"); S_STATUS+=("$2"); S_NOTE+=("$3")
    printf '  %-28s %-4s %s\n' "$1" "$2" "$3" >&2
}
section() { printf '\n## %s\n\n' "$1" >>"$body"; }
text() { printf '%s\n' "$*" >>"$body"; }
block() {   # block FILE [LINES]: the end of a log, fenced
    { echo '```'; tail -n "${2:-40}" "$1" | sed 's/\x1b\[[0-9;]*m//g'; echo '```'; } >>"$body"
}
skipped() { [[ ",$skip," == *",$1,"* ]]; }

# ---- 0. the machine ------------------------------------------------------------------------------------------------
echo "== the machine" >&2
cpu=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')
os=$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-}")
section "Machine"
text "- CPU: ${cpu:-unknown} ($(nproc) logical CPUs, $threads threads used)"
text "- memory: $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null)"
text "- OS: ${os:-unknown}, Linux $(uname -r)"
text "- ggml-xdna: $(git -C "$root" describe --always --dirty 2>/dev/null || echo 'not a git checkout')"
text "- model: $(basename "$model") ($(du -h "$model" | cut -f1))"
if [[ "$cpu" =~ Ryzen.*(7[0-9]40|7[0-9]45|8[0-9]40|8[0-9]45|8600G|8700G|Z1) ]]; then
    record "processor" INFO "$cpu: a first-generation XDNA (Phoenix / Hawk Point) part"
else
    record "processor" INFO "${cpu:-unknown}: not a known XDNA1 part"
fi

# ---- 1. the driver, XRT -------------------------------------------------------------------------------------------
echo "== the driver and XRT" >&2
section "Driver and XRT"
npu_pci=""
for d in /sys/bus/pci/devices/*; do
    [[ -r "$d/vendor" && -r "$d/device" ]] || continue
    if [[ "$(cat "$d/vendor")" == "0x1022" && "$(cat "$d/device")" == "0x1502" ]]; then npu_pci=$(basename "$d"); fi
done
accel=$(ls /dev/accel/accel* 2>/dev/null | head -1)
driver=""
[[ -d /sys/module/amdxdna ]] && driver="amdxdna"
[[ -n "$npu_pci" && -e "/sys/bus/pci/devices/$npu_pci/driver" ]] && driver=$(basename "$(readlink "/sys/bus/pci/devices/$npu_pci/driver")")
text "- PCI device 1022:1502 (the XDNA1 NPU): ${npu_pci:-not found}"
text "- kernel driver: ${driver:-none loaded}; accel device: ${accel:-none}"
text "- firmware files: $(cd /lib/firmware/amdnpu 2>/dev/null && find . -type f | sort | tr '\n' ' ' || true)"
# in-tree amdxdna (Linux 6.14+) ends a hung run after 60 s; AMD's out-of-tree xdna-driver has a 2 s TDR instead
driver_file=$(modinfo -F filename amdxdna 2>/dev/null)
if [[ -n "$driver_file" ]]; then
    text "- amdxdna module: $driver_file, version $(modinfo -F version amdxdna 2>/dev/null || echo '?'), srcversion $(modinfo -F srcversion amdxdna 2>/dev/null || echo '?')"
    text "- firmware the module asks for: $(modinfo -F firmware amdxdna 2>/dev/null | tr '\n' ' ')"
    case "$driver_file" in
        */kernel/drivers/accel/*) record "driver kind" INFO "in-tree amdxdna: a hung NPU run is ended after 60 s" ;;
        *) record "driver kind" INFO "amdxdna outside the kernel tree (AMD's xdna-driver): its TDR ends a hung run after 2-4 s" ;;
    esac
fi
text "- locked-memory limit (ulimit -l): $(ulimit -l) (the driver pins buffers against it unless the process has CAP_IPC_LOCK)"
hardware=0
if [[ -n "$npu_pci" && -n "$driver" && -n "$accel" ]]; then
    if [[ -r "$accel" && -w "$accel" ]]; then
        record "NPU driver" PASS "$driver bound to $npu_pci, $accel usable"
        hardware=1
    else
        record "NPU driver" FAIL "$accel exists but this user cannot open it (add yourself to its group: ls -l $accel)"
    fi
elif [[ -n "$npu_pci" ]]; then
    record "NPU driver" FAIL "an XDNA1 NPU ($npu_pci) but no working driver (amdxdna: Linux 6.14+, or AMD's xdna-driver)"
else
    record "NPU driver" INFO "no XDNA1 NPU on this machine: the steps below run on the software XDNA1 emulator"
fi
xrt_root=${XRT_ROOT:-/opt/xilinx/xrt}
if [[ -x "$xrt_root/bin/xrt-smi" ]]; then
    "$xrt_root/bin/xrt-smi" examine >"$work/xrt-smi.log" 2>&1
    rc=$?
    text ""
    text "\`xrt-smi examine\` (exit $rc):"
    block "$work/xrt-smi.log" 60
    text ""
    text "XRT, driver and firmware versions (xrt-smi):"
    grep -iE 'version|firmware|branch|hash' "$work/xrt-smi.log" | sed 's/^ */- /' >>"$body"
    if [[ $rc -eq 0 ]]; then record "XRT" PASS "xrt-smi examine works ($xrt_root)"
    else record "XRT" FAIL "xrt-smi examine failed (exit $rc)"; fi
elif (( hardware )); then
    record "XRT" FAIL "no XRT at $xrt_root (install AMD's XRT with the xdna-driver, or set XRT_ROOT)"
else
    record "XRT" INFO "no XRT at $xrt_root"
fi

# ---- 2. the build --------------------------------------------------------------------------------------------------
echo "== the build" >&2
if [[ -z "$build" ]]; then
    build=$("$root/scripts/build.sh" 2>"$work/build.log" | tail -1) || { tail -30 "$work/build.log" >&2; die "the build failed"; }
fi
plugin="$build/bin/libggml-xdna.so"
[[ -f "$plugin" ]] || die "$plugin: not built"
if [[ -z "$llama_bin" ]]; then
    llama_bin="$(sed -n 's/^LLAMA_BUILD:PATH=//p' "$build/CMakeCache.txt" 2>/dev/null)/bin"
fi
[[ -x "$llama_bin/llama-bench" ]] || die "$llama_bin: no llama-bench there (pass --llama-bin)"
section "Build"
if ldd "$plugin" 2>/dev/null | grep -q libxrt_coreutil; then
    emulated=0
    record "plugin build" PASS "against XRT ($(ldd "$plugin" | awk '/libxrt_coreutil/ { print $3 }'))"
else
    emulated=1
    if (( hardware )); then
        record "plugin build" FAIL "built against the emulator although this machine has an NPU: install XRT's headers and rebuild (rm -rf $build)"
    else
        record "plugin build" INFO "against the software XDNA1 emulator (no XRT when it was built)"
    fi
fi
text "- plugin: built against $( ((emulated)) && echo 'the software XDNA1 emulator' || echo 'XRT')"
# a plugin built without XRT drives the software XDNA1 only when asked for
(( emulated )) && export GGML_XDNA_NPU=${GGML_XDNA_NPU:-emulator}
text "- llama.cpp: $("$llama_bin/llama-cli" --version 2>&1 | grep -m1 -i 'version' || echo unknown)"
GGML_BACKEND_PATH="$plugin" "$llama_bin/llama-server" --list-devices >"$work/devices.log" 2>&1
text "- devices llama.cpp sees with the plugin:"
block "$work/devices.log" 10
if grep -q "XDNA" "$work/devices.log"; then record "plugin loads" PASS "$(grep -m1 'XDNA' "$work/devices.log" | sed 's/^ *//')"
else record "plugin loads" FAIL "llama.cpp does not list the XDNA device (see the report)"; fi

# ---- 3. the kernel set and the NPU smoke test -----------------------------------------------------------------------
echo "== the kernel set and the NPU smoke test" >&2
section "Kernel set and NPU smoke test"
manifest=${GGML_XDNA_NPU_KERNELS:-}
if [[ -z "$manifest" ]]; then
    for m in "$build/bin/kernels/manifest.json" "$build/kernels/manifest.json" "$build/share/ggml-xdna/kernels/manifest.json"; do
        [[ -f "$m" ]] && { manifest=$m; break; }
    done
fi
if [[ -n "$manifest" && -f "$manifest" ]]; then
    # designs (one hardware context each) and their blocks; "emulator": true marks the software XDNA1's own set
    kset=$(python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
d = m.get("designs", [])
print(len(d), sum(len(x.get("blocks", [])) for x in d), "emulator" if m.get("emulator") else "npu", m.get("target", "?"))
' "$manifest" 2>/dev/null)
    read -r n_designs n_blocks kind target <<<"$kset"
    if [[ -z "$kset" ]]; then
        record "kernel set" FAIL "$manifest is not a readable kernel manifest"
    elif (( hardware )) && [[ "$kind" == emulator ]]; then
        record "kernel set" FAIL "$manifest is the emulator's kernel set; the NPU needs kernels built with mlir-aie (kernels/README.md)"
    else
        record "kernel set" PASS "$n_designs designs, $n_blocks kernels for $target ($( [[ $kind == emulator ]] && echo "the emulator's set" || echo "NPU kernels")): $manifest"
    fi
else
    record "kernel set" FAIL "no kernel manifest (GGML_XDNA_NPU_KERNELS, or kernels/ next to the plugin): see kernels/README.md"
fi
kset_status=${S_STATUS[${#S_STATUS[@]}-1]}
if [[ -n "$manifest" && -f "$manifest" ]]; then
    # the first words of every instruction stream: what the NPU runtime checks before loading one (npu1: word 0
    # 0x06030100, word 3 the stream's size in bytes; "XEMU": the emulator's own streams)
    python3 - "$manifest" >"$work/headers.md" 2>&1 <<'PY'
import json, os, struct, sys
m = json.load(open(sys.argv[1]))
base = os.path.dirname(os.path.abspath(sys.argv[1]))
print("| block | instruction file | bytes | words 0-3 | reads as |")
print("|---|---|---|---|---|")
bad = 0
for d in m.get("designs", []):
    for b in d.get("blocks", []):
        path = os.path.join(base, b.get("instr", ""))
        try:
            data = open(path, "rb").read()
        except OSError as e:
            print(f"| {b.get('name')} | {b.get('instr')} | - | - | unreadable: {e.strerror} |"); bad += 1; continue
        w = struct.unpack("<4I", data[:16]) if len(data) >= 16 else ()
        if data[:4] == b"XEMU":
            kind = "the emulator's stream"
        elif len(w) < 4:
            kind = "too short for a header"; bad += 1
        elif (w[0] >> 16) & 0xff != 3 or w[0] >> 24 != 6:
            kind = "npu2 (Strix / Krackan)" if (w[0] >> 16) & 0xff == 4 else "not npu1"; bad += 1
        elif w[3] != len(data):
            kind = f"npu1, but its header says {w[3]} bytes"; bad += 1
        else:
            kind = "npu1"
        print(f"| {b.get('name')} | {b.get('instr')} | {len(data)} | {' '.join(f'0x{x:08x}' for x in w)} | {kind} |")
print(f"\n{bad} bad header(s)")
PY
    text ""
    text "Instruction stream headers:"
    cat "$work/headers.md" >>"$body"
    if grep -q '^[1-9][0-9]* bad header' "$work/headers.md"; then
        record "kernel headers" FAIL "$(tail -1 "$work/headers.md"): the NPU runtime refuses those streams (rebuild for npu1: kernels/README.md)"
    fi
fi
if skipped smoke; then
    record "NPU smoke test" SKIP "--skip smoke"
elif [[ ! -x "$build/bin/xdna-npu-smoke" ]]; then
    record "NPU smoke test" FAIL "$build/bin/xdna-npu-smoke was not built"
else
    "$build/bin/xdna-npu-smoke" --check-tolerance ${manifest:+--kernels "$manifest"} >"$work/smoke.log" 2>&1
    rc=$?
    block "$work/smoke.log" 200
    summary=$(grep -E '^[0-9]+ kernels' "$work/smoke.log" | tail -1)
    # the measured NMSE per K beside the limit derived on the emulator: reported, for the silicon's own limit later
    nmse_k=$(awk '$2 ~ /^bf16/ && $4 ~ /^[0-9.e+-]+$/ { split($3, s, "x"); k = s[2]
                  if (!(k in worst) || $4 + 0 > worst[k] + 0) worst[k] = $4; lim[k] = $NF }
                  END { for (k in worst) { above = (worst[k] + 0 > lim[k] + 0) ? ", above it" : ""
                                           printf "K = %s: NMSE up to %s (emulator-derived limit %s%s); ", k, worst[k], lim[k], above } }' \
                 "$work/smoke.log")
    [[ -n "$nmse_k" ]] && record "NPU NMSE per K" INFO "${nmse_k%; }"
    if [[ $rc -eq 0 ]]; then record "NPU smoke test" PASS "${summary:-every kernel matches its fp64 reference}"
    else
        # the failing kernels with their reasons, first in the report: everything later depends on them
        grep -E '^FAIL |FAILED: ' "$work/smoke.log" >"$work/smoke-fail.log"
        record "NPU smoke test" FAIL "${summary:-exit $rc}; $(grep -c . "$work/smoke-fail.log") failing line(s), first: $(head -1 "$work/smoke-fail.log" | sed 's/  */ /g')"
        text ""
        text "**The smoke test failed, so no other step was run.** The failing kernels:"
        block "$work/smoke-fail.log" 1000
        stop="not run: the NPU smoke test failed (fix or rebuild the kernels first: kernels/README.md)"
    fi
fi
if [[ -z "$stop" && "$kset_status" == FAIL ]]; then
    stop="not run: no usable kernel set (kernels/README.md)"
fi

# ---- 4. test-backend-ops --------------------------------------------------------------------------------------------
echo "== test-backend-ops" >&2
section "test-backend-ops -b XDNA"
tbo_filter=()
(( quick )) && tbo_filter=(-p 'type_a=q4_0') && text "(--quick: only the cases with Q4_0 weights)"
for op in MUL_MAT MUL_MAT_ID; do
    if [[ -n "$stop" ]]; then record "test-backend-ops $op" SKIP "$stop"; continue; fi
    if skipped backend-ops; then record "test-backend-ops $op" SKIP "--skip backend-ops"; continue; fi
    GGML_BACKEND_PATH="$plugin" "$llama_bin/test-backend-ops" test -b XDNA -o "$op" "${tbo_filter[@]}" >"$work/tbo-$op.log" 2>&1
    rc=$?
    clean=$(sed 's/\x1b\[[0-9;]*m//g' "$work/tbo-$op.log")
    ok=$(grep -cE "^  $op\(.*\): OK$" <<<"$clean")
    bad=$(grep -cE "^  $op\(.*\): .*FAIL$" <<<"$clean")
    text "- $op: $ok passed, $bad failed (exit $rc)"
    if (( bad > 0 )); then grep -E "FAIL" <<<"$clean" >"$work/tbo-fail.log"; block "$work/tbo-fail.log" 1000; fi
    if [[ $rc -eq 0 && $bad -eq 0 && $ok -gt 0 ]]; then record "test-backend-ops $op" PASS "$ok cases on the XDNA backend"
    else record "test-backend-ops $op" FAIL "$ok passed, $bad failed, exit $rc"; fi
done

# ---- 5. accuracy ------------------------------------------------------------------------------------------------------
echo "== accuracy (KL divergence against the stock CPU)" >&2
section "Accuracy against the stock CPU"
if [[ -n "$stop" ]]; then
    record "accuracy" SKIP "$stop"
elif skipped accuracy; then
    record "accuracy" SKIP "--skip accuracy"
else
    acc_args=(--model "$model" --plugin "$plugin" --compare plugin,noise --threads "$threads" --llama-bin "$llama_bin"
              --tools-bin "$build/bin" --max-kld "$max_kld" --work "$work/accuracy")
    (( quick )) && acc_args+=(--ctx 256 --chunks 1) || acc_args+=(--ctx 512 --chunks 8)
    # llama-perplexity's logger can lose its last lines at exit (seen with the stock CPU too): a run that printed no
    # statistics at all is run again, up to three times; a run that printed them stands
    for attempt in 1 2 3; do
        "$root/tools/accuracy/accuracy.sh" "${acc_args[@]}" >"$work/accuracy.log" 2>&1
        rc=$?
        grep -q '^RESULT test_vs_cpu' "$work/accuracy.log" && break
    done
    text "tools/accuracy/accuracy.sh, comparisons plugin and noise, $( ((quick)) && echo '1 chunk of 256 tokens' || echo '8 chunks of 512 tokens'), $threads threads:"
    block "$work/accuracy.log" 14
    kld=$(sed -n 's/^RESULT test_vs_cpu kld_mean=\([^ ]*\).*/\1/p' "$work/accuracy.log")
    noise=$(sed -n 's/^RESULT cpu_norepack_vs_cpu kld_mean=\([^ ]*\).*/\1/p' "$work/accuracy.log")
    if [[ $rc -eq 0 && -n "$kld" ]]; then record "accuracy" PASS "mean KLD $kld against the stock CPU (the CPU's own noise: $noise)"
    else record "accuracy" FAIL "${kld:+mean KLD $kld above $max_kld; }exit $rc"; fi
fi

# ---- 6. the benchmark -------------------------------------------------------------------------------------------------
echo "== the benchmark" >&2
section "Benchmark"
if [[ -n "$stop" ]]; then
    record "benchmark" SKIP "$stop"
elif skipped bench; then
    record "benchmark" SKIP "--skip bench"
else
    configs=(--config cpu --config default --config w8)
    (( quick )) && bench_args=(--passes 1 -p 64 -r 1) || bench_args=(--passes 3 -p 512 -r 3)
    label="on a real XDNA1 NPU"
    (( emulated )) && label="on the software XDNA1 emulator (${XDNA_EMU_MODE:-exact} mode): no NPU hardware involved"
    XDNA_BENCH_ENTRY="scripts/validate-hardware.sh (benchmark step)" python3 "$root/tools/bench/bench.py" \
        --model "$model" "${configs[@]}" "${bench_args[@]}" -t "$threads" --out "$work/bench" \
        --llama-bin "$llama_bin" --plugin "$plugin" --label "$label" ${GGML_XDNA_NPU:+--env GGML_XDNA_NPU="$GGML_XDNA_NPU"} \
        >"$work/bench.log" 2>&1
    rc=$?
    if [[ $rc -eq 0 && -f "$work/bench/results.md" ]]; then
        sed -n '/^| model |/,/^$/p' "$work/bench/results.md" >>"$body"
        sed -n '/^- /p' "$work/bench/results.md" >>"$body"
        best=$(python3 - "$work/bench/results.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
def med(c):
    xs = sorted(x for p in c["samples_per_pass"] for x in p)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])
out = []
for c in r["cells"]:
    rows = c["workers"]["per_worker"]
    npu = rows.get("npu", {}).get("rows", 0)
    total = sum(w["rows"] for w in rows.values())
    share = f", NPU {100 * npu / total:.0f}% of rows" if total else ""
    out.append(f"{c['config']} {med(c):.1f} t/s{share}")
print("; ".join(out))
EOF
)
        record "benchmark" PASS "$best"
        if ! grep -q '"npu"' "$work/bench/results.json"; then
            record "NPU took part" INFO "the NPU computed no rows in any configuration (the plugin has no NPU worker, or it dropped out)"
        fi
    else
        block "$work/bench.log" 30
        record "benchmark" FAIL "the harness exited with $rc"
    fi
fi

# ---- every NPU error the steps logged -------------------------------------------------------------------------------
section "NPU errors and warnings in the steps' logs"
grep -rhE --exclude=body.md --exclude=headers.md --exclude=npu-errors.log 'ggml-xdna: (npu: |NPU )|xdna-npu: |\[xdna-emu\] (injected|run #|the driver)|XRT: ' "$work" 2>/dev/null |
    sed -E 's/\x1b\[[0-9;]*m//g; s/run #[0-9]+/run #N/g' | sort | uniq -c | sort -rn >"$work/npu-errors.log"
if [[ -s "$work/npu-errors.log" ]]; then
    text "Each distinct line once, with how often it came:"
    block "$work/npu-errors.log" 200
else
    text "none"
fi

# ---- the report ------------------------------------------------------------------------------------------------------
fails=0
{
    echo "# ggml-xdna hardware validation"
    echo
    if (( hardware && ! emulated )); then
        echo "**On NPU hardware** ($(date -u '+%Y-%m-%d %H:%M UTC'))."
    else
        echo "**No NPU hardware was used: every NPU step ran on the software XDNA1 emulator** ($(date -u '+%Y-%m-%d %H:%M UTC'))."
    fi
    (( quick )) && echo && echo "Quick run (--quick): shorter accuracy and benchmark runs than a full validation."
    echo
    echo "| step | result | details |"
    echo "|---|---|---|"
    for i in "${!S_NAME[@]}"; do
        echo "| ${S_NAME[$i]} | ${S_STATUS[$i]} | ${S_NOTE[$i]//|/\\|} |"
        [[ "${S_STATUS[$i]}" == FAIL ]] && fails=$((fails + 1))
    done
    cat "$body"
} >"$report"
echo "== $fails step(s) failed; the report: $report" >&2
(( fails == 0 ))
