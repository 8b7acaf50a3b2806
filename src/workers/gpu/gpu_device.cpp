#include "workers/gpu/gpu_device.h"

#include "workers/gpu/gpu_worker.h"
#include "workers/gpu/llama_layers.h"
#include "workers/gpu/rpc_endpoint.h"

#include "config/config.h"
#include "util/log.h"

#include <cstdio>
#include <cstdlib>
#include <strings.h>

namespace xdna {

namespace {

constexpr int rpc_timeout_ms = 3000;   // a server on the network answers its hello in milliseconds

std::string device_names() {
    std::string names;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        if (ggml_backend_dev_type(d) == GGML_BACKEND_DEVICE_TYPE_ACCEL) continue;
        names += std::string(names.empty() ? "" : ", ") + ggml_backend_dev_name(d);
    }
    return names.empty() ? "none" : names;
}

gpu_choice add_rpc_server(const std::string & endpoint) {
    gpu_choice c;
    const size_t colon = endpoint.rfind(':');
    const std::string host = colon == std::string::npos ? "" : endpoint.substr(0, colon);
    const std::string port = colon == std::string::npos ? "" : endpoint.substr(colon + 1);
    char * end = nullptr;
    const long port_n = strtol(port.c_str(), &end, 10);
    if (host.empty() || port.empty() || *end != '\0' || port_n < 1 || port_n > 65535) {
        c.error = "GGML_XDNA_GPU=rpc:" + endpoint + " is not rpc:HOST:PORT";
        return c;
    }
    ggml_backend_reg_t rpc = ggml_backend_reg_by_name("RPC");
    using add_server_t = ggml_backend_reg_t (*)(const char * endpoint);
    auto add_server = rpc ? (add_server_t) ggml_backend_reg_get_proc_address(rpc, "ggml_backend_rpc_add_server") : nullptr;
    if (!add_server) {
        c.error = "GGML_XDNA_GPU=rpc:" + endpoint + " needs ggml's RPC backend (a llama.cpp built with GGML_RPC=ON)";
        return c;
    }
    // ggml-rpc aborts the process when the server is not there or does not speak its protocol, and waits for a
    // server that never answers: its own hello is tried first, under a timeout
    auto server = std::make_shared<rpc_endpoint>(host, port);
    std::string why;
    if (!server->hello(rpc_timeout_ms, &why)) {
        c.error = "GGML_XDNA_GPU=rpc:" + endpoint + ": " + why;
        return c;
    }
    // the endpoint's reg is kept private: registering it would make llama.cpp place model layers on it
    ggml_backend_reg_t reg = add_server(endpoint.c_str());
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) {
        c.error = "GGML_XDNA_GPU=rpc:" + endpoint + ": the server offers no device";
        return c;
    }
    c.dev = ggml_backend_reg_dev_get(reg, 0);
    c.rpc = server;
    return c;
}

}  // namespace

gpu_choice choose_gpu_device(const std::string & setting) {
    gpu_choice c;
    if (!strcasecmp(setting.c_str(), "none")) return c;
    if (!strncasecmp(setting.c_str(), "rpc:", 4)) return add_rpc_server(setting.substr(4));
    if (!setting.empty()) {
        c.dev = ggml_backend_dev_by_name(setting.c_str());
        if (!c.dev) {
            c.error = "GGML_XDNA_GPU=" + setting + " names no device (devices: " + device_names() + ")";
        } else if (ggml_backend_dev_type(c.dev) == GGML_BACKEND_DEVICE_TYPE_ACCEL) {
            // the XDNA device itself, BLAS and the like: not something a worker can hand rows to
            c.error = "GGML_XDNA_GPU=" + setting + " is an accelerator, not a GPU";
            c.dev = nullptr;
        }
        return c;
    }
    // By default only an integrated GPU (shared memory, as the Radeon of a Ryzen APU): a discrete GPU is faster
    // through llama.cpp's own offload (-ngl, or its offload of large batches at -ngl 0) than as a worker that gets
    // a share of the rows and copies activations and results over the bus, so it is a worker only when named.
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        if (ggml_backend_dev_type(ggml_backend_dev_get(i)) == GGML_BACKEND_DEVICE_TYPE_IGPU) {
            c.dev = ggml_backend_dev_get(i);
            return c;
        }
    }
    return c;
}

worker * make_gpu_worker(const config & cfg) {
    const gpu_choice c = choose_gpu_device(cfg.gpu);
    if (!c.error.empty()) {
        XDNA_LOG_ERROR("%s; running without a GPU worker", c.error.c_str());
        return nullptr;
    }
    if (!c.dev) return nullptr;
    if (cfg.gpu.empty()) {
        // the default device: an integrated GPU that llama.cpp itself computes layers on stays llama.cpp's (a second
        // instance there would hold a second copy of weights in the same memory for the few multiplies left on the
        // host); named, it is used whatever llama.cpp does
        const llama_layers l = llama_layers_of_this_process();
        if (l.on_gpu) {
            XDNA_LOG_INFO("no GPU worker on %s: llama.cpp puts model layers on its GPU (%s); with -ngl 0 the worker "
                          "takes rows of the prompt's multiplies there, and GGML_XDNA_GPU=%s uses it anyway",
                          ggml_backend_dev_name(c.dev), l.why.c_str(), ggml_backend_dev_name(c.dev));
            return nullptr;
        }
    }
    gpu_worker_options opts;
    opts.cache_bytes = cfg.gpu_cache_mb << 20;
    if (c.rpc) {
        // a server that exited would abort the process at the worker's next message (docs/gpu-worker.md)
        opts.alive = [rpc = c.rpc](std::string * why) { return rpc->alive(rpc_timeout_ms, why); };
    }
    auto * w = new gpu_worker(c.dev, opts);
    // llama.cpp's tools show INFO lines only with -v; with GGML_XDNA_DEBUG=1 the line is always shown
    char line[512];
    snprintf(line, sizeof(line), "GPU worker on %s (%s): %s, up to %zu MiB of resident weights",
             ggml_backend_dev_name(c.dev), ggml_backend_dev_description(c.dev),
             w->can_map_host() ? "maps host memory" : "copies activations and results", cfg.gpu_cache_mb);
    if (cfg.debug) XDNA_LOG_DEBUG("%s", line); else XDNA_LOG_INFO("%s", line);
    return w;
}

}  // namespace xdna
