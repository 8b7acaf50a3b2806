#!/usr/bin/env bash
# A generated model works with text prompts in llama-cli, llama-server and llama-bench (llama-perplexity and
# llama-completion have their own tests), on the stock CPU.
# usage: run-llama-tools.sh GEN_MODEL LLAMA_BIN PLUGIN NAME TYPE
source "$(dirname "$0")/common.sh"
name="$1" type="$2"
model="$(gen "$name" "$type")"

# llama-bench: one prompt-processing and one generation row
stock "$llama_bin/llama-bench" -m "$model" -t 2 -p 32 -n 4 -r 1 -o csv > "$work/bench.csv" 2> "$work/bench.log" ||
    { tail -n 20 "$work/bench.log" >&2; fail "llama-bench failed"; }
grep -q '"32","0"' "$work/bench.csv" && grep -q '"0","4"' "$work/bench.csv" || { cat "$work/bench.csv"; fail "llama-bench printed no pp32/tg4 rows"; }

# llama-cli: one chat turn through the model's chat template
stock timeout 120 "$llama_bin/llama-cli" -m "$model" -p "Hello, who are you?" -n 16 -t 2 --temp 0 -st \
    < /dev/null > "$work/cli.txt" 2> "$work/cli.log" || { tail -n 20 "$work/cli.log" >&2; fail "llama-cli failed"; }
reply="$(sed -n '/^> Hello, who are you?/,$p' "$work/cli.txt" | sed 1d | grep -v '^\[ Prompt' | tr -d '[:space:]' || true)"
[[ -n "$reply" ]] || { cat "$work/cli.txt"; fail "llama-cli printed no reply"; }
! grep -qi "error" "$work/cli.txt" || { cat "$work/cli.txt"; fail "llama-cli reported an error"; }

# llama-server: a completion over HTTP
port=$(( 20000 + ($$ % 20000) ))
# started through env itself, not the stock function: a function run in the background is a subshell of its own, and
# killing that (the trap below) left the server running
"${stock_env[@]}" "$llama_bin/llama-server" -m "$model" -t 2 -c 512 --host 127.0.0.1 --port "$port" \
    > "$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/health" > /dev/null 2>&1 && break
    kill -0 $server 2>/dev/null || { tail -n 20 "$work/server.log" >&2; fail "llama-server exited"; }
    sleep 0.2
done
curl -sf "http://127.0.0.1:$port/completion" -H 'Content-Type: application/json' \
    -d '{"prompt": "The lighthouse stood on the northern edge of the island", "n_predict": 16, "temperature": 0}' \
    > "$work/server.json" || { tail -n 20 "$work/server.log" >&2; fail "llama-server did not answer /completion"; }
grep -q '"content":"[^"]' "$work/server.json" || { cat "$work/server.json"; fail "llama-server returned no content"; }
grep -q '"tokens_predicted":16' "$work/server.json" || { cat "$work/server.json"; fail "llama-server did not predict 16 tokens"; }
echo "$name $type: llama-bench, llama-cli and llama-server work"
