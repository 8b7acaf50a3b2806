// The devices the GPU-worker tests run on, and multiplies to run.
//
// The device under test is XDNA_TEST_GPU, a GGML_XDNA_GPU-style setting (CUDA0, Vulkan0, ...); unset or "rpc", the
// test starts a ggml-rpc-server on loopback (XDNA_TEST_RPC_SERVER) and uses it as the GPU. XDNA_TEST_GPU_LIB names a
// backend library to load besides the pinned build's (libggml-vulkan.so of the same release). The CPU device is tested
// as well: it is the one device here that maps host memory, so it covers the worker's mapped path.
#pragma once

#include "rpc_server.h"
#include "convert/xdna_convert.h"
#include "workers/gpu/gpu_device.h"

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace xdna_test {

struct gpu_env {
    ggml_backend_dev_t         cpu_dev     = nullptr;
    ggml_backend_buffer_type_t repack_buft = nullptr;
    ggml_backend_dev_t         gpu_dev     = nullptr;   // the device under test
    std::string                gpu_setting;             // as GGML_XDNA_GPU would say it
    std::string                error;                   // why there is no device under test
    std::unique_ptr<rpc_server> server;
};

inline gpu_env & env() {
    static gpu_env e = [] {
        gpu_env g;
        ggml_backend_load_all_from_path(XDNA_TEST_LLAMA_BIN);
        // a GPU backend built elsewhere (the Vulkan backend of the same release, tests/gpu/vulkan-env.sh)
        if (const char * lib = getenv("XDNA_TEST_GPU_LIB"); lib && *lib && !ggml_backend_load(lib)) {
            g.error = std::string("cannot load ") + lib;
            return g;
        }
        g.cpu_dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
        if (g.cpu_dev) {
            auto get_extra = (ggml_backend_dev_get_extra_bufts_t) ggml_backend_reg_get_proc_address(
                ggml_backend_dev_backend_reg(g.cpu_dev), "ggml_backend_dev_get_extra_bufts");
            for (auto * t = get_extra ? get_extra(g.cpu_dev) : nullptr; t && *t; ++t) {
                if (strcmp(ggml_backend_buft_name(*t), "CPU_REPACK") == 0) g.repack_buft = *t;
            }
        }
        const char * want = getenv("XDNA_TEST_GPU");
        g.gpu_setting = want && *want ? want : "rpc";
        if (g.gpu_setting == "rpc") {
            g.server = std::make_unique<rpc_server>(XDNA_TEST_RPC_SERVER);
            if (!g.server->ok()) {
                g.error = "cannot start " XDNA_TEST_RPC_SERVER;
                return g;
            }
            g.gpu_setting = "rpc:" + g.server->endpoint();
        }
        const xdna::gpu_choice c = xdna::choose_gpu_device(g.gpu_setting);
        g.gpu_dev = c.dev;
        g.error = c.error;
        if (!c.dev && c.error.empty()) g.error = g.gpu_setting + " selects no device";
        return g;
    }();
    return e;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto & x : v) x = d(rng);
    return v;
}

struct mm_case {
    ggml_type type;
    int64_t   k, m, n;
    int64_t   experts = 0;   // > 0: MUL_MAT_ID with that many experts, 2 used per token
};

inline std::string name_of(const mm_case & c) {
    return std::string(ggml_type_name(c.type)) + "_k" + std::to_string(c.k) + "_m" + std::to_string(c.m) + "_n" +
           std::to_string(c.n) + (c.experts ? "_e" + std::to_string(c.experts) : "");
}

// One multiply with its weight in `weight_buft` (a plain CPU buffer by default) and its activations and result in a
// CPU buffer, as llama.cpp has them with -ngl 0.
struct mm_tensors {
    ggml_context *        wctx = nullptr;
    ggml_context *        actx = nullptr;
    ggml_backend_buffer_t wbuf = nullptr;
    ggml_backend_buffer_t abuf = nullptr;
    ggml_tensor *         node = nullptr;
    std::vector<float>    wf;   // the weight as floats (before quantization)

    mm_tensors(const mm_case & c, ggml_backend_buffer_type_t weight_buft = nullptr, uint32_t seed = 1) {
        ggml_init_params p = { 16 * ggml_tensor_overhead(), nullptr, true };
        wctx = ggml_init(p);
        actx = ggml_init(p);
        const int64_t n_used = 2;
        ggml_tensor * w = c.experts ? ggml_new_tensor_3d(wctx, c.type, c.k, c.m, c.experts)
                                    : ggml_new_tensor_2d(wctx, c.type, c.k, c.m);
        wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, weight_buft ? weight_buft : ggml_backend_cpu_buffer_type());
        ggml_backend_buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        // a type the CPU build does not repack (no extra, e.g. Q2_K without AVX-512) is left unset in CPU_REPACK's
        // buffer, whose set_tensor would dereference the missing extra: the test skips it (REQUIRE_REPACKED)
        if (!xdna_tensor_in_repack_buffer(w) || w->extra != nullptr) set_weight(seed);

        if (c.experts) {
            ggml_tensor * x   = ggml_new_tensor_3d(actx, GGML_TYPE_F32, c.k, n_used, c.n);
            ggml_tensor * ids = ggml_new_tensor_2d(actx, GGML_TYPE_I32, n_used, c.n);
            node = ggml_mul_mat_id(actx, w, x, ids);
        } else {
            node = ggml_mul_mat(actx, w, ggml_new_tensor_2d(actx, GGML_TYPE_F32, c.k, c.n));
        }
        abuf = ggml_backend_alloc_ctx_tensors_from_buft(actx, ggml_backend_cpu_buffer_type());
        ggml_tensor * x = node->src[1];
        std::vector<float> xf = random_floats(ggml_nelements(x), seed + 100);
        ggml_backend_tensor_set(x, xf.data(), 0, ggml_nbytes(x));
        if (c.experts) {
            std::vector<int32_t> ids(n_used * c.n);
            std::mt19937 rng(seed + 200);
            for (int64_t t = 0; t < c.n; ++t) {
                const int32_t a = (int32_t) (rng() % c.experts);
                ids[t * n_used + 0] = a;
                ids[t * n_used + 1] = (a + 1 + (int32_t) (rng() % (c.experts - 1))) % (int32_t) c.experts;
            }
            ggml_backend_tensor_set(node->src[2], ids.data(), 0, ids.size() * sizeof(int32_t));
        }
    }

    // New weight values in the same memory (as when freed memory is reused for another tensor of the same shape).
    void set_weight(uint32_t seed) {
        ggml_tensor * w = ggml_get_first_tensor(wctx);
        const int64_t rows = ggml_nrows(w);
        wf = random_floats(rows * w->ne[0], seed);
        std::vector<uint8_t> bytes(ggml_nbytes(w));
        ggml_quantize_chunk(w->type, wf.data(), bytes.data(), 0, rows, w->ne[0], nullptr);
        ggml_backend_tensor_set(w, bytes.data(), 0, bytes.size());
    }

    ~mm_tensors() {
        if (abuf) ggml_backend_buffer_free(abuf);
        if (wbuf) ggml_backend_buffer_free(wbuf);
        if (actx) ggml_free(actx);
        if (wctx) ggml_free(wctx);
    }

    std::vector<float> result() const {
        std::vector<float> out(ggml_nelements(node));
        ggml_backend_tensor_get(node, out.data(), 0, ggml_nbytes(node));
        return out;
    }
    void fill_result(float v) {
        std::vector<float> f(ggml_nelements(node), v);
        ggml_backend_tensor_set(node, f.data(), 0, ggml_nbytes(node));
    }
    // rows of output row r (each token, each expert slot) are at flat index i*ne0 + r
    int64_t rows() const { return node->ne[0]; }
};

// The stock CPU backend's result of the whole multiply.
inline std::vector<float> cpu_reference(mm_tensors & mm) {
    ggml_backend_t cpu = ggml_backend_dev_init(env().cpu_dev, nullptr);
    ggml_init_params p = { ggml_graph_overhead(), nullptr, true };
    ggml_context * gctx = ggml_init(p);
    ggml_cgraph * g = ggml_new_graph(gctx);
    ggml_build_forward_expand(g, mm.node);
    ggml_backend_graph_compute(cpu, g);
    std::vector<float> out = mm.result();
    ggml_free(gctx);
    ggml_backend_free(cpu);
    return out;
}

// Normalized mean squared error of rows [begin, end) of `got` against `ref` (test-backend-ops' measure).
inline double nmse_rows(const std::vector<float> & ref, const std::vector<float> & got, int64_t ne0, int64_t begin, int64_t end) {
    double err = 0.0, norm = 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
        const int64_t r = (int64_t) (i % ne0);
        if (r < begin || r >= end) continue;
        const double d = (double) ref[i] - got[i];
        err += d * d;
        norm += (double) ref[i] * ref[i];
    }
    return norm > 0 ? err / norm : err;
}

}  // namespace xdna_test
