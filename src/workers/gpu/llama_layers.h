// Whether llama.cpp was asked to put model layers on a GPU itself (its -ngl), for the GPU worker's default device.
//
// A plugin cannot see which devices llama.cpp places layers on: those layers' multiplies never reach it, and their
// weights live in the GPU's own buffers. What it can read is what the process was asked to do: llama.cpp's tools take
// the layer count from -ngl / --gpu-layers / --n-gpu-layers (llama-bench: a comma-separated list), else from
// LLAMA_ARG_N_GPU_LAYERS, else their default, which puts every layer that fits on the GPU (auto; llama-bench: 99).
// `-dev none` / `--device none` keeps every layer off the GPUs. So llama.cpp leaves the GPU to the worker only when the
// count is 0 (every value of a list) or the devices are none.
#pragma once

#include <string>
#include <vector>

namespace xdna {

struct llama_layers {
    bool        on_gpu = true;   // llama.cpp puts model layers on its GPU (as far as the arguments tell)
    std::string why;             // what said so, for the log line: "-ngl 99", "llama.cpp's default (auto)", ...
};

// From a process's arguments (argv[1..]) and the value of LLAMA_ARG_N_GPU_LAYERS (null: unset).
llama_layers llama_layers_of(const std::vector<std::string> & args, const char * env_ngl);

// This process's (/proc/self/cmdline; where it cannot be read, as if nothing had been given).
llama_layers llama_layers_of_this_process();

}  // namespace xdna
