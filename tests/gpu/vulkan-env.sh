#!/usr/bin/env bash
# Runs a command with the GPU worker's tests pointed at ggml-vulkan's first device (Mesa's lavapipe on a machine
# without a GPU; ggml-vulkan hides CPU-type devices unless GGML_VK_VISIBLE_DEVICES names them), the mapped path
# required (lavapipe imports host memory), and the current folder the one scripts/fetch-vulkan.sh made: llama.cpp's
# tools load their backends from their own folder and the current one, so they find its libggml-vulkan.so there.
# usage: vulkan-env.sh <folder of libggml-vulkan.so> <command> [args...]
set -euo pipefail
dir=$1
shift
[[ -e "$dir/libggml-vulkan.so" ]] || { echo "no $dir/libggml-vulkan.so (scripts/fetch-vulkan.sh makes it)"; exit 1; }
export GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0} XDNA_TEST_GPU=Vulkan0 XDNA_TEST_GPU_LIB="$dir/libggml-vulkan.so"
export XDNA_TEST_GPU_MAPS=${XDNA_TEST_GPU_MAPS:-1}
cd "$dir"
exec "$@"
