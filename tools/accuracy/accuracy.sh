#!/usr/bin/env bash
# Accuracy harness: scores a plugin configuration against the stock CPU backend with llama-perplexity's
# KL-divergence mode over a fixed text, measures the CPU's own noise floor, and scores both against a
# high-precision reference (the model requantized to F32). See docs/models.md.
#
# The configuration under test is the environment this script runs in (GGML_XDNA_* variables) plus --env pairs;
# the reference runs have GGML_BACKEND_PATH and every GGML_XDNA_* variable removed, so they are the stock CPU.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

usage() {
    cat >&2 <<'EOF'
usage: accuracy.sh --model FILE [options]
  --model FILE        the GGUF model (e.g. from xdna-gen-model)
  --plugin FILE       libggml-xdna.so; the test runs load it through GGML_BACKEND_PATH (default: none, so the
                      configuration under test is the stock CPU itself)
  --env K=V           an extra variable for the test runs (repeatable)
  --test-model FILE   run the configuration under test on this model instead (e.g. a perturbed copy)
  --compare LIST      comma list of: plugin, noise, reference (default: plugin,noise,reference)
  --text FILE         default: data/accuracy-text.txt
  --ctx N             context per chunk (default 512)
  --chunks N          chunks to score (default: all the text holds)
  --threads N         default 2
  --llama-bin DIR     llama.cpp binaries (default: $LLAMA_BIN, else the configured build)
  --tools-bin DIR     directory of xdna-logprobs (default: $XDNA_TOOLS_BIN, else build/bin)
  --work DIR          where the log-probability files and the F32 reference go
                      (default: ${GGML_XDNA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ggml-xdna}/accuracy)
  --max-kld X         exit 1 when the configuration under test has a mean KLD above X against the stock CPU
  --min-same-top P    exit 1 when its top-token agreement is below P percent
  --no-plugin-check   do not require an XDNA device in the test environment when --plugin is given
  --no-ppl-check      skip the extra llama-perplexity --kl-divergence run of the configuration under test
Every figure of the table comes from llama-perplexity --kl-divergence-base files (xdna-logprobs compare);
llama-perplexity's own --kl-divergence statistics for the configuration under test are printed below it.
For scripts: lines "RESULT <name> kld_mean=.. kld_p99=.. same_top=.. max_dlogp=..".
EOF
    exit 2
}

die() { echo "accuracy.sh: $*" >&2; exit 2; }

model="" plugin="" test_model="" compare="plugin,noise,reference" text="$repo/data/accuracy-text.txt"
ctx=512 chunks=-1 threads=2 llama_bin="${LLAMA_BIN:-}" tools_bin="${XDNA_TOOLS_BIN:-}" work=""
max_kld="" min_same_top="" plugin_check=1 ppl_check=1
extra_env=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --model) model="${2:?--model needs a file}"; shift 2 ;;
        --plugin) plugin="${2:?--plugin needs a file}"; shift 2 ;;
        --env) [[ "${2:-}" == *=* ]] || die "--env needs K=V"; extra_env+=("$2"); shift 2 ;;
        --test-model) test_model="${2:?--test-model needs a file}"; shift 2 ;;
        --compare) compare="${2:?--compare needs a list}"; shift 2 ;;
        --text) text="${2:?--text needs a file}"; shift 2 ;;
        --ctx) ctx="${2:?}"; shift 2 ;;
        --chunks) chunks="${2:?}"; shift 2 ;;
        --threads) threads="${2:?}"; shift 2 ;;
        --llama-bin) llama_bin="${2:?}"; shift 2 ;;
        --tools-bin) tools_bin="${2:?}"; shift 2 ;;
        --work) work="${2:?}"; shift 2 ;;
        --max-kld) max_kld="${2:?}"; shift 2 ;;
        --min-same-top) min_same_top="${2:?}"; shift 2 ;;
        --no-plugin-check) plugin_check=0; shift ;;
        --no-ppl-check) ppl_check=0; shift ;;
        -h|--help) usage ;;
        *) die "unknown option '$1' (--help lists them)" ;;
    esac
done

[[ -n "$model" ]] || die "--model is required"
[[ -f "$model" ]] || die "$model: no such model file"
[[ -z "$test_model" || -f "$test_model" ]] || die "$test_model: no such model file"
[[ -f "$text" ]] || die "$text: no such text file"
[[ -z "$plugin" || -f "$plugin" ]] || die "$plugin: no such plugin file"
for n in "$ctx" "$threads"; do [[ "$n" =~ ^[0-9]+$ ]] || die "'$n' is not a positive integer"; done
[[ "$chunks" =~ ^-?[0-9]+$ ]] || die "--chunks: '$chunks' is not an integer"
for c in ${compare//,/ }; do
    case "$c" in plugin|noise|reference) ;; *) die "--compare: unknown comparison '$c'" ;; esac
done
if [[ -z "$llama_bin" ]]; then
    llama_bin="$(sed -n 's/^LLAMA_BUILD:PATH=//p' "$repo/build/CMakeCache.txt" 2>/dev/null)/bin"
fi
[[ -x "$llama_bin/llama-perplexity" ]] || die "$llama_bin/llama-perplexity not found (set --llama-bin or LLAMA_BIN)"
[[ -n "$tools_bin" ]] || tools_bin="$repo/build/bin"
[[ -x "$tools_bin/xdna-logprobs" ]] || die "$tools_bin/xdna-logprobs not found (build the project or set --tools-bin)"
if [[ -z "$work" ]]; then
    work="${GGML_XDNA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ggml-xdna}/accuracy"
fi
mkdir -p "$work"
run_dir="$(mktemp -d "$work/run.XXXXXX")"
trap 'rm -rf "$run_dir"' EXIT

# the stock CPU: no out-of-tree backend, no plugin configuration
stock_env=(env -u GGML_BACKEND_PATH)
while IFS='=' read -r k _; do
    [[ "$k" == GGML_XDNA_* ]] && stock_env+=(-u "$k")
done < <(env)
stock_env+=(GGML_XDNA_DISABLE=1)
# the configuration under test
test_env=(env)
[[ -n "$plugin" ]] && test_env+=("GGML_BACKEND_PATH=$plugin")
test_env+=("${extra_env[@]}")

ppl_args=(-f "$text" -c "$ctx" -t "$threads" --chunks "$chunks")

# run_ppl LOG ENV... -- ARGS...: llama-perplexity with the given environment; the log is kept on failure
run_ppl() {
    local log="$1"; shift
    local envs=()
    while [[ "$1" != "--" ]]; do envs+=("$1"); shift; done
    shift
    if ! "${envs[@]}" "$llama_bin/llama-perplexity" "${ppl_args[@]}" "$@" >"$log" 2>&1; then
        echo "accuracy.sh: llama-perplexity failed; the end of its log:" >&2
        tail -n 15 "$log" >&2
        exit 1
    fi
}

# the plugin must register its device in the test environment (the device list is printed synchronously, unlike
# the run's log, whose last lines llama.cpp may drop at exit)
check_plugin_loads() {
    [[ -n "$plugin" && "$plugin_check" == 1 ]] || return 0
    if ! "${test_env[@]}" "$llama_bin/llama-perplexity" --list-devices > "$run_dir/devices.txt" 2>&1 ||
       ! grep -qi "xdna" "$run_dir/devices.txt"; then
        echo "accuracy.sh: the plugin did not load: llama-perplexity --list-devices shows no XDNA device" >&2
        cat "$run_dir/devices.txt" >&2
        exit 1
    fi
}
# score NAME BASE_FILE TEST_FILE: KL(base || test) per position, its mean and 99th percentile, top-token agreement
# and the largest log-probability difference, all from the two log-probability files
declare -A R_KLD R_P99 R_TOP R_DLP
score() {
    local name="$1" base="$2" testfile="$3" out
    out="$("$tools_bin/xdna-logprobs" compare "$base" "$testfile")" || exit 1
    R_KLD[$name]="$(sed -n 's/^kld_mean: //p' <<< "$out")"
    R_P99[$name]="$(sed -n 's/^kld_p99: //p' <<< "$out")"
    R_TOP[$name]="$(sed -n 's/^same_top_pct: //p' <<< "$out")"
    R_DLP[$name]="$(sed -n 's/^max_abs_dlogp: //p' <<< "$out")"
}

# llama-perplexity's own statistics from a --kl-divergence log. llama.cpp prints through an asynchronous log
# thread that it does not flush at exit, so on a loaded machine the last lines can be missing: then "lost".
ppl_stats() {
    local log="$1" kld p99 top
    kld="$(sed -n 's/.*Mean *KLD: *\([-0-9.e+]*\).*/\1/p' "$log" | tail -n1)"
    p99="$(sed -n 's/.*99\.0% *KLD: *\([-0-9.e+]*\).*/\1/p' "$log" | tail -n1)"
    top="$(sed -n 's/.*Same top p: *\([-0-9.e+]*\).*/\1/p' "$log" | tail -n1)"
    if [[ -n "$kld" && -n "$p99" && -n "$top" ]]; then
        echo "mean KLD $kld, 99% KLD $p99, same top $top%"
    else
        echo "lost (llama.cpp's log thread was not flushed at exit; the table above does not depend on it)"
    fi
}

want() { [[ ",$compare," == *",$1,"* ]]; }
tmodel="${test_model:-$model}"

check_plugin_loads

# 1. the stock CPU (repacked weights where the CPU backend repacks them): the reference of "plugin" and "noise"
stock="$run_dir/stock.kld"
run_ppl "$run_dir/stock.log" "${stock_env[@]}" -- -m "$model" --kl-divergence-base "$stock"

# 2. the configuration under test: its log-probabilities, and llama-perplexity's own KL statistics against the stock
ppl_line=""
if want plugin || want reference; then
    testkld="$run_dir/test.kld"
    run_ppl "$run_dir/test-base.log" "${test_env[@]}" -- -m "$tmodel" --kl-divergence-base "$testkld" -lv 4
fi
if want plugin; then
    score "test_vs_cpu" "$stock" "$testkld"
    if [[ "$ppl_check" == 1 ]]; then
        run_ppl "$run_dir/test.log" "${test_env[@]}" -- -m "$tmodel" --kl-divergence-base "$stock" --kl-divergence
        ppl_line="$(ppl_stats "$run_dir/test.log")"
    fi
fi

# 3. the CPU's noise floor: the stock CPU without repacking against the repacked path
if want noise; then
    norepack="$run_dir/norepack.kld"
    run_ppl "$run_dir/norepack.log" "${stock_env[@]}" -- -m "$model" --no-repack --kl-divergence-base "$norepack"
    score "cpu_norepack_vs_cpu" "$stock" "$norepack"
fi

# 4. the high-precision reference: the model requantized to F32 (weights = their dequantized values) on the stock CPU
if want reference; then
    f32="$work/$(basename "$model" .gguf)-F32.gguf"
    if [[ ! -f "$f32" || "$f32" -ot "$model" ]]; then
        if ! "$llama_bin/llama-quantize" --allow-requantize "$model" "$f32.tmp.$$" F32 "$threads" >"$run_dir/f32.log" 2>&1; then
            rm -f "$f32.tmp.$$"
            echo "accuracy.sh: llama-quantize to F32 failed:" >&2
            tail -n 15 "$run_dir/f32.log" >&2
            exit 1
        fi
        mv "$f32.tmp.$$" "$f32"
    fi
    ref="$run_dir/f32.kld"
    run_ppl "$run_dir/f32.log" "${stock_env[@]}" -- -m "$f32" --kl-divergence-base "$ref"
    score "cpu_vs_f32" "$ref" "$stock"
    score "test_vs_f32" "$ref" "$testkld"
fi

positions="$("$tools_bin/xdna-logprobs" stats "$stock" | sed -n 's/^positions: //p')"
echo "model: $model${test_model:+ (test side: $test_model)}"
echo "configuration under test: ${plugin:-stock CPU (no plugin)}${extra_env[*]:+ with ${extra_env[*]}}$(env | grep '^GGML_XDNA_' | grep -v '^GGML_XDNA_CACHE=' | tr '\n' ' ' | sed 's/^/ env: /;s/ env: $//')"
echo "text: $(basename "$text"), n_ctx $ctx, $positions scored positions"
printf '%-34s %12s %12s %10s %12s\n' "comparison (base -> test)" "mean KLD" "99% KLD" "same top" "max|dlogp|"
declare -A LABEL=(
    [test_vs_cpu]="stock CPU -> test config"
    [cpu_norepack_vs_cpu]="stock -> stock --no-repack (noise)"
    [cpu_vs_f32]="F32 reference -> stock CPU"
    [test_vs_f32]="F32 reference -> test config"
)
for name in test_vs_cpu cpu_norepack_vs_cpu cpu_vs_f32 test_vs_f32; do
    [[ -n "${R_KLD[$name]:-}" ]] || continue
    printf '%-34s %12s %12s %9s%% %12s\n' "${LABEL[$name]}" "${R_KLD[$name]}" "${R_P99[$name]}" "${R_TOP[$name]}" "${R_DLP[$name]}"
done
[[ -z "$ppl_line" ]] || echo "llama-perplexity --kl-divergence, stock CPU -> test config: $ppl_line"
if [[ -n "$plugin" ]]; then
    summary="$(grep -o 'ggml-xdna: .*' "$run_dir/test-base.log" | tail -n 1 || true)"
    echo "plugin's own summary of the test run: ${summary:-lost with the end of the log}"
fi
for name in test_vs_cpu cpu_norepack_vs_cpu cpu_vs_f32 test_vs_f32; do
    [[ -n "${R_KLD[$name]:-}" ]] || continue
    echo "RESULT $name kld_mean=${R_KLD[$name]} kld_p99=${R_P99[$name]} same_top=${R_TOP[$name]} max_dlogp=${R_DLP[$name]}"
done

status=0
if [[ -n "$max_kld" && -n "${R_KLD[test_vs_cpu]:-}" ]] && awk -v a="${R_KLD[test_vs_cpu]}" -v b="$max_kld" 'BEGIN{exit !(a > b)}'; then
    echo "FAIL: mean KLD ${R_KLD[test_vs_cpu]} against the stock CPU is above $max_kld" >&2
    status=1
fi
if [[ -n "$min_same_top" && -n "${R_TOP[test_vs_cpu]:-}" ]] && awk -v a="${R_TOP[test_vs_cpu]}" -v b="$min_same_top" 'BEGIN{exit !(a < b)}'; then
    echo "FAIL: top-token agreement ${R_TOP[test_vs_cpu]}% with the stock CPU is below $min_same_top%" >&2
    status=1
fi
exit $status
