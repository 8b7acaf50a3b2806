// What the tests that drive the NPU worker on the emulator's kernel set share: a dense multiply of small integers
// (exact in bf16, so the NPU's products and f32 sums are exact), its check against fp64, and a CPU worker beside an
// NPU worker for the tests that drive both (test_npu_resident.cpp, test_npu_engine.cpp).
#pragma once

#include "config/config.h"
#include "workers/cpu/cpu_worker.h"
#include "workers/npu/npu_worker.h"

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <vector>

// One dense multiply of small integers: an f16 weight (rows x k) and f32 activations (k x tokens), exact in bf16, so
// the NPU's products and f32 sums are exact (expect_exact checks them against fp64).
struct integer_mm {
    ggml_context * ctx = nullptr;
    ggml_backend_buffer_t buf = nullptr;
    ggml_tensor * w = nullptr, * x = nullptr, * y = nullptr;

    integer_mm(int64_t k, int64_t rows, int64_t tokens) {
        ggml_init_params p = { 8 * ggml_tensor_overhead(), nullptr, true };
        ctx = ggml_init(p);
        w = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, k, rows);
        x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, tokens);
        y = ggml_mul_mat(ctx, w, x);
        buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
        for (int64_t i = 0; i < k * rows; ++i) ((ggml_fp16_t *) w->data)[i] = ggml_fp32_to_fp16(float((i * 13) % 9 - 4));
        for (int64_t i = 0; i < k * tokens; ++i) ((float *) x->data)[i] = float((i * 7 + 3) % 9 - 4);
    }
    ~integer_mm() {
        ggml_backend_buffer_free(buf);
        ggml_free(ctx);
    }
};

// Every t_step-th token and r_step-th row of the result `got` of w (f16, rows x K) times x (f32, tokens x K) against
// fp64: the inputs are small integers, so the products and their sums are exact in f32 and must match exactly.
inline void expect_exact(const ggml_tensor * w, const ggml_tensor * x, const std::vector<float> & got, int64_t t_step,
                         int64_t r_step) {
    const int64_t k = w->ne[0], rows = w->ne[1], tokens = x->ne[1];
    for (int64_t t = 0; t < tokens; t += t_step) {
        for (int64_t r = 0; r < rows; r += r_step) {
            double ref = 0;
            for (int64_t i = 0; i < k; ++i) {
                ref += double(ggml_fp16_to_fp32(((const ggml_fp16_t *) w->data)[r * k + i])) * ((const float *) x->data)[t * k + i];
            }
            ASSERT_EQ(got[t * rows + r], ref) << "token " << t << ", row " << r;
        }
    }
}

// A CPU worker (two threads) and an NPU worker on the emulator's kernel set, for the tests that drive both.
struct workers_pair {
    std::unique_ptr<xdna::cpu_worker> cpu;
    std::unique_ptr<xdna::npu_worker> npu;
    void make(int64_t cache_mb = -1) {   // the NPU's weight cache budget (-1: the configuration's)
        setenv("XDNA_EMU_LOG", "0", 0);
        ggml_backend_load_all_from_path(XDNA_LLAMA_BIN);
        cpu = xdna::cpu_worker::create(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU));
        ASSERT_TRUE(cpu);
        cpu->set_n_threads(2);
        xdna::config cfg = xdna::get_config();
        if (cache_mb >= 0) cfg.npu_cache_mb = cache_mb;
        npu = xdna::npu_worker::create(cfg);
        ASSERT_TRUE(npu) << "no NPU worker (emulator kernel set missing?)";
    }
};
