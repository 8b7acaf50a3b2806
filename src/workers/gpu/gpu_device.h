// Which device the GPU worker runs on (GGML_XDNA_GPU), and creating the process's GPU worker.
//
//   (empty)          the first integrated GPU registered with ggml (shared memory), unless llama.cpp puts model layers
//                    on a GPU itself (its -ngl, llama_layers.h); a discrete GPU, or a CPU-type Vulkan device such as
//                    Mesa's lavapipe (which ggml-vulkan reports as a GPU), only when named
//   none             no GPU worker
//   rpc:HOST:PORT    a ggml RPC server (ggml-rpc-server): added through the "RPC" registry's
//                    ggml_backend_rpc_add_server, used privately (not registered, so llama.cpp never places layers on
//                    it); the server must already listen and answer ggml-rpc's hello within 3 s
//   NAME             the registered device of that name (case-insensitive: CUDA0, Vulkan0, RPC0, or CPU as a stand-in
//                    that maps host memory)
//
// A device llama.cpp also uses for layers (-ngl) stays llama.cpp's by default. Named, the worker is a second, private
// instance on it and only ever sees multiplies whose weights are in host memory.
#pragma once

#include "workers/worker.h"

#include "ggml-backend.h"

#include <memory>
#include <string>

namespace xdna {

struct config;

class rpc_endpoint;

struct gpu_choice {
    ggml_backend_dev_t            dev = nullptr;   // null: no GPU worker
    std::string                   error;           // set when the setting names something that cannot be used (one line)
    std::shared_ptr<rpc_endpoint> rpc;             // rpc:HOST:PORT: the server, checked before each run
};

// Resolves a GGML_XDNA_GPU value against the registered devices.
gpu_choice choose_gpu_device(const std::string & setting);

// The process's GPU worker as configured, or null (turned off, no GPU, or a setting that cannot be used: logged).
// It lives as long as the process: freeing device backends while the process exits is unsafe on some backends.
worker * make_gpu_worker(const config & cfg);

}  // namespace xdna
