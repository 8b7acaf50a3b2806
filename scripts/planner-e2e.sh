#!/usr/bin/env bash
# End to end: the auto split against the fixed NPU shares 0, 0.25, 0.5, 0.75 and 1, with the emulated NPU in null mode
# (modelled NPU time, no arithmetic, so the emulated NPU does not take the CPU worker's cores), by default modelled on
# measured 8700G figures (docs/emulator.md, "The timing model"). For each NPU speed it runs llama-bench -p 512 -n 0 on
# a generated model for every configuration, interleaved (in a balanced order: pass_order), in PASSES passes, prints
# the table of prompt tokens/s, and checks that auto reaches at least MIN_RATIO (0.97) of the best fixed share, and
# that next to a slow NPU (the speed "slow") auto gives it little or nothing.
# It also shows, unchecked, auto (and kept) against the best share pass by pass, and over each process the multiplies'
# own time and how busy the NPU was in them (from the plugin's report).
#
# Environment (all optional):
#   BUILD        the plugin's build directory (default: build); the llama.cpp binaries are taken from its
#                configuration (LLAMA_BUILD), or from LLAMA_BIN / LLAMA_SRC
#   MODEL TYPE LAYERS   the generated model (default: qwen3-0.6b Q4_0, 4 layers); see xdna-gen-model --list
#   THREADS      llama-bench -t (default: all cores)      REPS: llama-bench -r (default 3)      PASSES (default 2)
#   SHARES       the fixed shares to compare (default "0 0.25 0.5 0.75 1")
#   SPEEDS       the NPU speeds, a list of (default "8700g"):
#                  8700g           the timing model of XDNA1 silicon (measured 8700G figures), default power mode
#                  8700g-balanced  the same at the balanced power mode's clock (1.03 GHz instead of 1.80)
#                  N               a flat what-if rate of N bf16 GFLOP/s (int8 at 2.15x; 3140 is a tuned kernel's
#                                  ceiling, the papers)
#                  fast, slow      flat rates relative to this machine's CPU: its rate in the plugin at share 0
#                                  (prompt tokens/s times the model's matrix-multiply FLOP per token) times FAST_RATIO
#                                  (1.5) or SLOW_RATIO (0.2); or the emulator settings in FAST_NPU, SLOW_NPU, e.g.
#                                  "XDNA_EMU_BF16_GFLOPS=90 XDNA_EMU_INT8_GOPS=90"
#   MIN_RATIO    auto / best fixed share that must be reached (default 0.97)
#   CENTRE       how the passes of a configuration are summed up: mean, or median (default: median from 3 passes on, so
#                that one pass slowed by the machine (runs of one setting differ by up to 27% on a 16-vCPU VM) does
#                not decide; mean for 1 or 2)
#   SLOW_MAX_NPU the most of the rows auto may give the slow NPU (default 0.2)
#   REQUIRE_NPU  0 skips the check that the NPU worker took part (to try the script without one)
#   KEPT=1       also "kept": auto in a process that reads what an earlier auto run learned (GGML_XDNA_PLANNER_STATE;
#                one untimed auto run per speed writes it first, and each "kept" run updates it); checked like auto
#   ORDER        balanced (default: every setting equally often at every place and right after each other one, over
#                2 x settings passes, or as many as there are settings where they are even), or alternate (every
#                second pass reversed)
#   REPORTS      a folder to keep every process's report in (<speed>-<setting>-<pass>.report, and the state files of
#                "kept"), e.g. to see what auto learned in a process that ran slow; by default they are deleted
#   Any XDNA_EMU_* or GGML_XDNA_* variable set outside is passed on (e.g. XDNA_EMU_DISPATCH_US).
# Exit status: 0 when the checks pass at every speed, 1 otherwise, 2 when the setup is wrong.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-$root/build}
model_name=${MODEL:-qwen3-0.6b} type=${TYPE:-Q4_0} layers=${LAYERS:-4}
threads=${THREADS:-$(nproc)} reps=${REPS:-3} passes=${PASSES:-2}
centre=${CENTRE:-$( ((passes >= 3)) && echo median || echo mean)}
[[ $centre == mean || $centre == median ]] || { echo "CENTRE must be mean or median" >&2; exit 2; }
order_kind=${ORDER:-balanced}
[[ $order_kind == balanced || $order_kind == alternate ]] || { echo "ORDER must be balanced or alternate" >&2; exit 2; }
shares=(${SHARES:-0 0.25 0.5 0.75 1})
min_ratio=${MIN_RATIO:-0.97} slow_max_npu=${SLOW_MAX_NPU:-0.2}

die() { echo "planner-e2e: $*" >&2; exit 2; }
cache_var() { sed -n "s/^$1:PATH=//p" "$build/CMakeCache.txt" 2>/dev/null; }
llama_bin=${LLAMA_BIN:-$(cache_var LLAMA_BUILD)/bin}
llama_src=${LLAMA_SRC:-$(cache_var LLAMA_SRC)}
plugin=$build/bin/libggml-xdna.so gen=$build/bin/xdna-gen-model
[[ -f "$plugin" ]] || die "no plugin at $plugin (build first: scripts/build.sh)"
[[ -x "$gen" ]] || die "no model generator at $gen"
[[ -x "$llama_bin/llama-bench" ]] || die "no llama-bench in '$llama_bin' (set LLAMA_BIN)"

model=$("$gen" --model "$model_name" --type "$type" --layers "$layers" --llama-src "$llama_src" --llama-bin "$llama_bin")
work=$(mktemp -d)
keep_reports() {   # the exit status stays the script's: no state files (KEPT unset) is not a failure
    if [[ -n "${REPORTS:-}" ]] && mkdir -p "$REPORTS"; then
        cp "$work"/*.report "$REPORTS"/ 2>/dev/null || true
        cp "$work"/state-*.txt "$REPORTS"/ 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap keep_reports EXIT

# llama-bench's prompt tokens/s for one configuration; its report file (what each worker did) is kept in $work
bench() {   # bench <tag> <env assignments...>
    local tag=$1; shift
    rm -f "$work/$tag.report"
    env GGML_XDNA_NPU=emulator "$@" GGML_BACKEND_PATH="$plugin" GGML_XDNA_REPORT="$work/$tag.report" \
        "$llama_bin/llama-bench" -m "$model" -p 512 -n 0 -r "$reps" -t "$threads" -o jsonl \
        >"$work/$tag.jsonl" 2>"$work/$tag.err" || { tail -20 "$work/$tag.err" >&2; die "llama-bench failed ($tag)"; }
    grep -oE '"avg_ts": *[0-9.eE+-]+' "$work/$tag.jsonl" | head -1 | grep -oE '[0-9.eE+-]+$' || true
}

# the share of all rows the NPU computed in a run, from the backends' summaries in its report ("npu: R rows" against
# every worker's rows; the planner's own line, if there, repeats them and is left out)
npu_fraction() {
    [[ -f "$1" ]] || { echo "?"; return; }
    grep -v 'planner' "$1" | grep -oE '(npu|gpu|cpu): [0-9]+ rows' |
        awk '{ n = $2 + 0; all += n; if ($1 == "npu:") npu += n } END { if (all) printf "%.3f", npu / all; else print "?" }'
}

# "total first-use" seconds of a run's multiplies, a line per report line (the report's "N multiplies in X s (Y s of
# it where a weight was converted ...)")
mult_lines() { sed -nE 's/^ggml-xdna: [0-9]+ multiplies in ([0-9.]+) s \(([0-9.]+) s of it.*/\1 \2/p' "$1"; }
# the multiplies' own time in a run, ms, those in which a weight was converted for the NPU on first use left out (the
# report's "N multiplies in X s (Y s of it where a weight was converted ...)"): the split's work apart from the rest
# of a prompt, which moves as much between processes as the splits differ. Over the whole process: llama-bench's
# untimed warm-up prompt, where auto learns, is in it, so it shows what learning costs a process of one prompt
mult_ms() {
    [[ -f "$1" ]] || { echo "?"; return; }
    mult_lines "$1" | awk '{ t += $1 - $2; n++ } END { if (n) printf "%.1f", 1000 * t; else print "?" }'
}

# The multiplies' own time of one prompt, ms: the process's REPS timed prompts and its warm-up, or only the REPS timed
# ones where the warm-up converted weights (every first use of a weight is in it, and is left out)
prompt_ms() {
    [[ -f "$1" ]] || { echo "?"; return; }
    mult_lines "$1" | awk -v reps="$reps" '{ t += $1 - $2; if ($2 > 0) conv = 1; n++ }
            END { if (n) printf "%.2f", 1000 * t / (conv ? reps : reps + 1); else print "?" }'
}

# How busy the NPU was over the multiplies, %: its busy time (the report's "device busy" share of the NPU worker's time)
# over the multiplies' whole time, first uses in both. Where it is well below the NPU's share of the work, the NPU
# waited for its host (or for the CPU's team that drives it) inside the multiplies.
npu_busy() {
    [[ -f "$1" ]] || { echo "?"; return; }
    grep '^ggml-xdna: ' "$1" | awk '{ if (match($0, /[0-9]+ multiplies in [0-9.]+ s/)) { split(substr($0, RSTART, RLENGTH), w, " "); wall += w[4] }
        if (match($0, /npu: [0-9]+ rows, [0-9.]+ s \(device busy [0-9]+%/)) { split(substr($0, RSTART, RLENGTH), b, /[ (%]+/); busy += b[4] * b[8] / 100 } }
        END { if (wall > 0) printf "%.0f", 100 * busy / wall; else print "?" }'
}

speed_names=(${SPEEDS:-8700g})
for speed in "${speed_names[@]}"; do
    [[ $speed =~ ^(8700g|8700g-balanced|fast|slow|[0-9]+([.][0-9]+)?)$ ]] ||
        die "unknown NPU speed '$speed' in SPEEDS (8700g, 8700g-balanced, fast, slow or a number of GFLOP/s)"
done
# fast and slow: the CPU's matrix-multiply rate in this run's setting (the plugin, all rows on the CPU worker), from
# the prompt rate and the model's FLOP per token (dense models: q, k, v, o and the three FFN matrices per layer).
if [[ " ${speed_names[*]} " =~ " "(fast|slow)" " ]] && [[ -z "${FAST_NPU:-}" || -z "${SLOW_NPU:-}" ]]; then
    read -r embd heads kv hdim ff experts < <("$gen" --list |
        awk -v m="$model_name" '$1 == m { split($7, h, "/"); print $5, h[1], h[2], $8, $9, $NF }')
    [[ -n "${embd:-}" ]] || die "model $model_name not in xdna-gen-model --list"
    [[ "$experts" == "-" ]] || die "set FAST_NPU and SLOW_NPU for a mixture-of-experts model"
    cpu_ts=$(bench calibrate GGML_XDNA_NPU_SHARE=0)
    [[ -n "$cpu_ts" ]] || die "no tokens/s from the calibration run"
    gflops=$(awk -v t="$cpu_ts" -v e="$embd" -v h="$heads" -v k="$kv" -v d="$hdim" -v f="$ff" -v l="$layers" \
        'BEGIN { q = h * d; kvd = k * d; per_tok = 2 * l * (e * (q + 2 * kvd) + q * e + 3 * e * f);
                 printf "%.1f", t * per_tok / 1e9 }')
    rate() { awk -v g="$gflops" -v r="$1" 'BEGIN { printf "%.1f", g * r }'; }
    fast=$(rate "${FAST_RATIO:-1.5}") slow=$(rate "${SLOW_RATIO:-0.2}")
    echo "CPU at share 0: $cpu_ts prompt tokens/s = $gflops GFLOP/s of matrix multiplies"
    FAST_NPU=${FAST_NPU:-XDNA_EMU_BF16_GFLOPS=$fast XDNA_EMU_INT8_GOPS=$fast}
    SLOW_NPU=${SLOW_NPU:-XDNA_EMU_BF16_GFLOPS=$slow XDNA_EMU_INT8_GOPS=$slow}
fi

configs=("${shares[@]}" auto)
bounds=()
kept=${KEPT:-0}
[[ $kept == 1 ]] && configs+=(kept)
status=0
table="$work/table" table_ms="$work/table-ms" table_busy="$work/table-busy"
{
    printf '%-46s' "the multiplies' own time, ms (first uses out)"
    for c in "${configs[@]}"; do printf ' %9s' "$c"; done
    printf ' %10s\n' "best/auto"
} >"$table_ms"
{
    printf '%-46s' "the NPU busy, % of the multiplies' time (all)"
    for c in "${configs[@]}"; do printf ' %9s' "$c"; done
    printf '\n'
} >"$table_busy"
{
    printf '%-46s' "prompt tokens/s (llama-bench -p 512)"
    for c in "${configs[@]}"; do printf ' %9s' "$c"; done
    printf ' %10s %10s' "auto/best" "auto NPU"
    [[ $kept == 1 ]] && printf ' %10s' "kept/best"
    printf ' %10s' "paired"
    [[ $kept == 1 ]] && printf ' %11s' "kept paired"
    printf '\n'
} >"$table"

# The order of the settings in pass p (1-based) of n settings, as indexes: the rows of a Williams design, so that over
# n passes (2n where n is odd, every second one a row reversed) every setting runs equally often at every place and
# right after each other one. A process may leave the machine's caches, memory or clocks otherwise than it found
# them; with every second pass merely reversed, auto always ran right next to share 1 (after it, or before it), which
# does not average such an effect out. ORDER=alternate keeps that older order (to compare with earlier runs).
pass_order() {
    local p=$1 n=$2 row i j
    if [[ $order_kind == alternate ]]; then
        if ((p % 2)); then seq 0 $((n - 1)); else seq $((n - 1)) -1 0; fi
        return
    fi
    local -a base=(0) out=()
    for ((j = 1; j < n; j++)); do base+=($((j % 2 ? (j + 1) / 2 : n - j / 2))); done
    if ((n % 2)); then row=$(((p - 1) / 2 % n)); else row=$(((p - 1) % n)); fi
    for i in "${base[@]}"; do out+=($(((i + row) % n))); done
    if ((n % 2 && p % 2 == 0)); then for ((j = n - 1; j >= 0; j--)); do echo "${out[j]}"; done; else printf '%s\n' "${out[@]}"; fi
}

for speed in "${speed_names[@]}"; do
    case $speed in
        8700g) speed_env=(XDNA_EMU_POWER_MODE=default) label="NPU modelled on measured 8700G figures" ;;
        8700g-balanced) speed_env=(XDNA_EMU_POWER_MODE=balanced) label="the same, balanced power mode" ;;
        fast) speed_env=($FAST_NPU) label="fast NPU (flat, what-if)" ;;
        slow) speed_env=($SLOW_NPU) label="slow NPU (flat, what-if)" ;;
        *) speed_env=(XDNA_EMU_BF16_GFLOPS=$speed XDNA_EMU_INT8_GOPS=$(awk -v g="$speed" 'BEGIN { print g * 2.15 }'))
           label="$speed GFLOP/s NPU (flat, what-if)" ;;
    esac
    # per configuration, every pass: its tokens/s, its multiplies' time, that of one prompt, its NPU busy
    declare -A runs=() runs_ms=() runs_pm=() runs_busy=()
    centre_in() {   # centre_in "<values>" [printf format (%.2f)]
        tr ' ' '\n' <<<"$1" | sort -g | awk -v c="$centre" -v f="${2:-%.2f}" 'NF { v[n++] = $1; s += $1 }
        END { printf f, c == "mean" ? s / n : n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2 }'; }
    centre_of() { centre_in "${runs[$1]}"; }
    state=(GGML_XDNA_PLANNER_STATE="$work/state-$speed.txt")
    [[ $kept == 1 ]] && bench "$speed-prime" XDNA_EMU_MODE=null "${speed_env[@]}" GGML_XDNA_NPU_SHARE=auto "${state[@]}" >/dev/null
    for ((p = 1; p <= passes; p++)); do
        order=(); for i in $(pass_order "$p" "${#configs[@]}"); do order+=("${configs[i]}"); done
        for c in "${order[@]}"; do
            share=$c extra=()
            [[ $c == kept ]] && share=auto extra=("${state[@]}")
            ts=$(bench "$speed-$c-$p" XDNA_EMU_MODE=null "${speed_env[@]}" GGML_XDNA_NPU_SHARE="$share" "${extra[@]}")
            [[ -n "$ts" ]] || die "no tokens/s from llama-bench ($speed, share $c)"
            runs[$c]="${runs[$c]:-} $ts"
            runs_ms[$c]="${runs_ms[$c]:-} $(mult_ms "$work/$speed-$c-$p.report")"
            runs_pm[$c]="${runs_pm[$c]:-} $(prompt_ms "$work/$speed-$c-$p.report")"
            runs_busy[$c]="${runs_busy[$c]:-} $(npu_busy "$work/$speed-$c-$p.report")"
            echo "  $speed NPU, pass $p, share $c: $ts tokens/s (NPU took $(npu_fraction "$work/$speed-$c-$p.report") of the rows)"
        done
    done
    # the NPU must really have taken part: share 1 gives it every row
    last=${shares[${#shares[@]} - 1]}
    frac1=$(npu_fraction "$work/$speed-$last-1.report")
    if [[ ${REQUIRE_NPU:-1} == 1 ]] && { [[ "$frac1" == "?" ]] || awk -v f="$frac1" 'BEGIN { exit !(f == 0) }'; }; then
        die "the NPU worker took no rows at share $last: is it built and enabled (emulator kernels found)?"
    fi
    best=0 best_c=
    for c in "${shares[@]}"; do
        m=$(centre_of "$c")
        if awk -v a="$m" -v b="$best" 'BEGIN { exit !(a > b) }'; then best=$m best_c=$c; fi
    done
    auto=$(centre_of auto)
    ratio=$(awk -v a="$auto" -v b="$best" 'BEGIN { printf "%.3f", a / b }')
    kept_ratio=-
    [[ $kept == 1 ]] && kept_ratio=$(awk -v s="$(centre_of kept)" -v b="$best" 'BEGIN { printf "%.3f", s / b }')
    # auto (and kept) against that share pass by pass, the centre of those ratios: the machine drifts between passes (a setting's
    # runs differ by up to 27%), and a ratio within one pass leaves that drift out; shown, not checked
    paired_of() { centre_in "$(paste -d ' ' <(echo ${runs[$1]} | tr ' ' '\n') <(echo ${runs[$best_c]} | tr ' ' '\n') |
        awk '{ print $1 / $2 }')" %.3f; }
    paired=$(paired_of auto)
    auto_npu=$(npu_fraction "$work/$speed-auto-$passes.report")
    {
        printf '%-46s' "$label"
        for c in "${configs[@]}"; do printf ' %9.2f' "$(centre_of "$c")"; done
        printf ' %10s %10s' "$ratio" "$auto_npu"
        [[ $kept == 1 ]] && printf ' %10s' "$kept_ratio"
        printf ' %10s' "$paired"
        [[ $kept == 1 ]] && printf ' %11s' "$(paired_of kept)"
        printf '\n'
    } >>"$table"
    if ! grep -q '?' <<<"${runs_ms[*]}"; then   # a plugin that reports its multiplies' own time
        best_ms=
        for c in "${shares[@]}"; do
            m=$(centre_in "${runs_ms[$c]}")
            if [[ -z "$best_ms" ]] || awk -v a="$m" -v b="$best_ms" 'BEGIN { exit !(a < b) }'; then best_ms=$m; fi
        done
        {
            printf '%-46s' "$label"
            for c in "${configs[@]}"; do printf ' %9.1f' "$(centre_in "${runs_ms[$c]}")"; done
            printf ' %10s\n' "$(awk -v b="$best_ms" -v a="$(centre_in "${runs_ms[auto]}")" 'BEGIN { printf "%.3f", b / a }')"
        } >>"$table_ms"
    fi
    if ! grep -q '?' <<<"${runs_busy[*]}"; then
        {
            printf '%-46s' "$label"
            for c in "${configs[@]}"; do printf ' %9s' "$(centre_in "${runs_busy[$c]}" %.0f)"; done
            printf '\n'
        } >>"$table_busy"
    fi
    # The bound on CPU and NPU together: the prompt's time outside the claimed multiplies (the CPU alone, share 0)
    # plus the multiplies' work at the sum of the two workers' own rates on them (each alone: shares 0 and 1), per
    # prompt (prompt_ms); shown, not checked
    if [[ -n "${runs[0]:-}" && -n "${runs[1]:-}" ]] && ! grep -q '?' <<<"${runs_pm[0]:-?} ${runs_pm[1]:-?}"; then
        bound=$(awk -v ts0="$(centre_of 0)" -v c="$(centre_in "${runs_pm[0]}")" -v n="$(centre_in "${runs_pm[1]}")" \
            'BEGIN { tc = c / 1000; tn = n / 1000;
                outside = 512 / ts0 - tc; if (outside < 0) outside = 0;
                printf "%.1f", 512 / (outside + 1 / (1 / tc + 1 / tn)) }')
        bounds+=("$label: bound $bound tokens/s, auto/bound $(awk -v a="$auto" -v b="$bound" 'BEGIN { printf "%.3f", a / b }')")
    fi
    if awk -v r="$ratio" -v m="$min_ratio" 'BEGIN { exit !(r < m) }'; then
        echo "FAIL: $speed NPU: auto $auto tokens/s is $ratio of the best fixed share ($best_c: $best), below $min_ratio"
        status=1
    fi
    if [[ $kept == 1 ]] && awk -v r="$kept_ratio" -v m="$min_ratio" 'BEGIN { exit !(r < m) }'; then
        echo "FAIL: $speed NPU: auto with the kept state is $kept_ratio of the best fixed share ($best_c: $best), below $min_ratio"
        status=1
    fi
    if [[ $speed == slow ]] && { [[ "$auto_npu" == "?" ]] || awk -v f="$auto_npu" -v m="$slow_max_npu" 'BEGIN { exit !(f > m) }'; }; then
        echo "FAIL: slow NPU: auto gave the NPU $auto_npu of the rows (at most $slow_max_npu expected)"
        status=1
    fi
    unset runs runs_ms runs_pm runs_busy
done

echo
echo "== $model_name $type, $layers layers, -t $threads, -r $reps, $passes interleaved passes ($centre of them), emulated NPU in null mode"
cat "$table"
echo "(auto NPU: the share of the rows auto gave the NPU in the last pass; paired: auto (kept paired: kept) / that share within each pass, the $centre of those; NPU speeds: ${speed_names[*]}$([[ -n "${FAST_NPU:-}" ]] && echo "; fast NPU: $FAST_NPU; slow NPU: $SLOW_NPU" || true))"
if [[ $(wc -l <"$table_ms") -gt 1 ]]; then
    echo "over each whole process, llama-bench's untimed warm-up prompt in it; $passes passes ($centre of them);" \
         "best/auto: the fastest fixed share's time over auto's; shown, not checked:"
    cat "$table_ms"
fi
[[ $(wc -l <"$table_busy") -gt 1 ]] && cat "$table_busy"
if ((${#bounds[@]})); then
    echo "the bound on CPU and NPU together (outside the multiplies as the CPU alone, the multiplies at the two workers'"
    echo "own rates added, from shares 0 and 1); shown, not checked:"
    printf '  %s\n' "${bounds[@]}"
fi
# what the planner had learned per shape at the end of the last auto run (the plugin appends it to its report)
last_auto=$(ls -t "$work"/*-auto-*.report 2>/dev/null | head -1 || true)
if [[ -n "$last_auto" ]] && grep -q '^planner: ' "$last_auto"; then
    echo "what the planner learned in the last auto run ($(basename "$last_auto" .report)):"
    grep '^planner: ' "$last_auto" | sed 's/^planner: /  /'
fi
[[ $status == 0 ]] && echo "PASS: auto >= $min_ratio x the best fixed share at every NPU speed"
exit $status
