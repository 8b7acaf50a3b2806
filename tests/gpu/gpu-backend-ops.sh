#!/usr/bin/env bash
# test-backend-ops on one op with the plugin's GPU worker on: every case the XDNA backend claims must pass, and the
# GPU worker must have computed rows of them (the end-of-run report says how many).
# The GPU is XDNA_TEST_GPU (a GGML_XDNA_GPU value such as CUDA0); unset, the script runs itself again under
# xdna-with-rpc-server, which starts a ggml-rpc-server on loopback and stops it afterwards.
# usage: gpu-backend-ops.sh <test-backend-ops> <libggml-xdna.so> <xdna-with-rpc-server> <ggml-rpc-server> <OP>
set -uo pipefail
bin=$1 plugin=$2 with_rpc=$3 rpc_server=$4 op=$5
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [[ -z "${XDNA_TEST_GPU:-}" || "${XDNA_TEST_GPU}" == rpc ]]; then
    exec "$with_rpc" "$rpc_server" -- bash "${BASH_SOURCE[0]}" "$@"
fi

report=$(mktemp)
trap 'rm -f "$report"' EXIT
GGML_XDNA_NPU=emulator GGML_XDNA_GPU="$XDNA_TEST_GPU" GGML_XDNA_REPORT="$report" bash "$here/../backend/run-test-backend-ops.sh" "$bin" "$plugin" "$op"
rc=$?
summary=$(grep -E '^ggml-xdna: [0-9]+ multiplies' "$report" | tail -1)
echo "GPU worker on $XDNA_TEST_GPU: ${summary:-no summary written}"
(( rc == 0 )) || exit "$rc"
gpu_rows=$(grep -oE 'gpu: [0-9]+ rows' <<<"$summary" | grep -oE '[0-9]+' || echo 0)
(( gpu_rows > 0 )) || { echo "the GPU worker computed no rows"; exit 1; }
grep -q 'runs failed' <<<"$summary" && { echo "GPU worker runs failed (their rows were redone on the CPU)"; exit 1; }
echo "1 passed, 0 failed"
