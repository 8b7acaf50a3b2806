#!/usr/bin/env bash
# A ggml-rpc-server killed (SIGKILL, as a crash) while llama-perplexity runs with it as the plugin's GPU worker
# (GGML_XDNA_GPU=rpc:127.0.0.1:PORT), at times spread over the run. Before each of its runs the GPU worker checks
# that ggml-rpc's connection is still open; a server found gone takes no more work and its rows go to the CPU. A
# server that dies while a run is in flight is ggml-rpc's to handle, and it aborts the process ("Remote RPC server
# crashed", ggml-rpc.cpp), or a write to the closed socket ends it (SIGPIPE): stock llama.cpp's --rpc does the same.
# Checked: every run ends within its time limit (none hangs), every run that finishes prints the stock CPU's
# perplexities (none is wrong), and every run that does not was ended by ggml-rpc. Printed: how many of each, and the
# same for stock llama.cpp with --rpc (its layers on the server) killed likewise.
# usage: rpc-server-killed.sh <llama bin> <plugin> <xdna-gen-model> <llama src> <text> [runs]
set -euo pipefail
bin=$1 plugin=$2 gen=$3 src=$4 text=$5 runs=${6:-8}
model=$("$gen" --model llama-tiny --type Q8_0 --llama-src "$src" --llama-bin "$bin")
source "$(dirname "${BASH_SOURCE[0]}")/../lib/perplexity.sh"
work=$(mktemp -d)
server_pid=
cleanup() { [[ -n "$server_pid" ]] && kill -9 "$server_pid" 2>/dev/null; wait 2>/dev/null; [[ -n "${KEEP:-}" ]] || rm -rf "$work"; }
trap cleanup EXIT
for v in $(env | grep -oE '^GGML_XDNA_[A-Z0-9_]+'); do unset "$v"; done
chunks=3   # compared; the run computes more, so that most of it is computing (a kill lands in a run or between runs)
args=(-m "$model" -f "$text" -c 128 --chunks 16 -b 128 -t 1 -dev none)
passed=0 failed=0
check() {   # check <name> <condition...>
    local name=$1; shift
    if "$@"; then echo "ok   $name"; passed=$((passed + 1)); else echo "FAIL $name"; failed=$((failed + 1)); fi
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
start_server() {   # a fresh server on a free port: $port, $server_pid
    port=$(free_port)
    env -u GGML_BACKEND_PATH "$bin/ggml-rpc-server" -H 127.0.0.1 -p "$port" -t 1 -d CPU >"$work/server.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 100); do
        python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && return
        sleep 0.1
    done
    echo "the RPC server did not start"; exit 1
}
# run <log> <kill after s or -> <command...>: the command with a fresh server, killed after that long; "rc seconds"
run() {
    local log=$1 after=$2 rc=0 t0; shift 2
    start_server
    t0=$(date +%s.%N)
    if [[ $after != - ]]; then (sleep "$after"; kill -9 "$server_pid" 2>/dev/null) & fi
    timeout 120 env "${@//@PORT@/$port}" >"$log" 2>&1 || rc=$?
    local t1; t1=$(date +%s.%N)
    kill -9 "$server_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    server_pid=
    awk -v rc="$rc" -v a="$t0" -v b="$t1" 'BEGIN { printf "%s %.1f\n", rc, b - a }'

}

stock=$(ppl_run $chunks env GGML_XDNA_DISABLE=1 GGML_BACKEND_PATH="$plugin" "$bin/llama-perplexity" "${args[@]}")
want=$(ppl_values $chunks "$stock")
plugin_cmd=(GGML_BACKEND_PATH="$plugin" GGML_XDNA_NPU=off GGML_XDNA_GPU=rpc:127.0.0.1:@PORT@
            "$bin/llama-perplexity" "${args[@]}")
stock_cmd=(GGML_XDNA_DISABLE=1 GGML_BACKEND_PATH="$plugin" "$bin/llama-perplexity" "${args[@]:0:${#args[@]}-2}"
           --rpc 127.0.0.1:@PORT@ -ngl 99)   # without -dev none: its layers on the server
read -r rc whole < <(run "$work/whole.log" - "${plugin_cmd[@]}")
check "undisturbed, the run finishes and the GPU worker takes rows" grep -qE "gpu: [1-9][0-9]* rows" "$work/whole.log"

tally() {   # tally <name> <command...>: runs killed at times spread over the command's undisturbed run
    local name=$1 i after rc s whole finished=0 aborted=0 other=0 hung=0 wrong=0 lost=0; shift
    read -r rc whole < <(run "$work/$name-whole.log" - "$@")
    echo "$name: an undisturbed run: status $rc after ${whole} s"
    for i in $(seq "$runs"); do
        after=$(awk -v w="$whole" -v i="$i" -v n="$runs" 'BEGIN { printf "%.2f", w * i / (n + 1) }')
        read -r rc s < <(run "$work/$name-$i.log" "$after" "$@")
        local log=$work/$name-$i.log
        grep -q "the GPU worker takes no more work\|no RPC server listens there" "$log" && lost=$((lost + 1))
        if [[ $rc == 124 ]]; then hung=$((hung + 1))
        elif [[ $rc == 0 ]]; then
            finished=$((finished + 1))
            [[ "$(ppl_values $chunks "$(cat "$log")")" == "$want" ]] || wrong=$((wrong + 1))
        elif grep -q "Remote RPC server crashed\|Failed to connect" "$log" || [[ $rc == 141 ]]; then
            aborted=$((aborted + 1))
        else other=$((other + 1)); tail -3 "$log"
        fi
        echo "$name: killed after ${after} s: status $rc after ${s} s"
    done
    echo "$name: $runs runs: $finished finished (with the stock perplexities: $((finished - wrong)); the plugin found" \
         "the server gone in $lost of them), $aborted ended by ggml-rpc, $other otherwise, $hung hung"
    check "$name: no run hangs" test "$hung" -eq 0
    check "$name: every run that finishes prints the stock perplexities" test "$wrong" -eq 0
    check "$name: every other run was ended by ggml-rpc" test "$other" -eq 0
}
tally plugin "${plugin_cmd[@]}"
tally stock-rpc "${stock_cmd[@]}"
echo "rpc-server-killed: $passed passed, $failed failed"
[[ $failed == 0 ]]
