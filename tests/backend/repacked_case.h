// A multiply on a weight in the CPU backend's CPU_REPACK buffer type, built for the tests of repacked weights.
#pragma once

#include "backend_fixture.h"

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace xdna_test {


struct case_t {
    ggml_type type;
    int64_t   k, m, n, experts;   // experts > 0: MUL_MAT_ID with that many experts, 2 used per token
};

inline std::string name_of(const case_t & c) {
    return std::string(ggml_type_name(c.type)) + "_k" + std::to_string(c.k) + "_m" + std::to_string(c.m) + "_n" +
           std::to_string(c.n) + (c.experts ? "_e" + std::to_string(c.experts) : "");
}


inline std::vector<float> random_floats(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto & x : v) x = d(rng);
    return v;
}

// Fills an f32 result with NaN: the results of the runs below are computed into the same tensor, so that a part a
// backend left unwritten would otherwise still hold the last run's (the reference's) values.
inline void poison(ggml_tensor * node) {
    const std::vector<float> nan(ggml_nbytes(node) / sizeof(float), std::numeric_limits<float>::quiet_NaN());
    ggml_backend_tensor_set(node, nan.data(), 0, nan.size() * sizeof(float));
}

// Runs `node`'s graph on `backend` and returns the result bytes.
inline std::vector<uint8_t> run(ggml_backend_t backend, ggml_tensor * node) {
    poison(node);
    ggml_init_params p = { ggml_graph_overhead(), nullptr, true };
    ggml_context * gctx = ggml_init(p);
    ggml_cgraph * g = ggml_new_graph(gctx);
    ggml_build_forward_expand(g, node);
    EXPECT_EQ(ggml_backend_graph_compute(backend, g), GGML_STATUS_SUCCESS);
    std::vector<uint8_t> out(ggml_nbytes(node));
    ggml_backend_tensor_get(node, out.data(), 0, out.size());
    ggml_free(gctx);
    return out;
}

// One multiply on a repacked weight, with random activations (and a skewed routing for MUL_MAT_ID).
struct repacked_case {
    ggml_context *        wctx = nullptr;
    ggml_context *        actx = nullptr;
    ggml_backend_buffer_t wbuf = nullptr;
    ggml_backend_buffer_t abuf = nullptr;
    ggml_tensor *         node = nullptr;
    std::string           skip;   // why the case cannot run here

    // plain: the same weights in a plain CPU buffer (what llama.cpp's --no-repack gives)
    explicit repacked_case(const case_t & c, bool plain = false) {
        const loaded_backends & lb = load_backends();
        if (!lb.repack_buft) { skip = "this CPU backend has no CPU_REPACK buffer type"; return; }
        ggml_backend_buffer_type_t buft = plain ? ggml_backend_cpu_buffer_type() : lb.repack_buft;
        ggml_init_params p = { 16 * ggml_tensor_overhead(), nullptr, true };
        wctx = ggml_init(p);
        actx = ggml_init(p);

        const int64_t n_used = 2;
        ggml_tensor * w = c.experts ? ggml_new_tensor_3d(wctx, c.type, c.k, c.m, c.experts)
                                    : ggml_new_tensor_2d(wctx, c.type, c.k, c.m);
        wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, buft);
        ggml_backend_buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        if (!plain && w->extra == nullptr) { skip = std::string(ggml_type_name(c.type)) + " is not repacked by this CPU backend build"; return; }

        // real quantized data (the repack happens in set_tensor)
        const int64_t rows = c.m * (c.experts ? c.experts : 1);
        std::vector<float> wf = random_floats(rows * c.k, 1);
        std::vector<uint8_t> wq(ggml_nbytes(w));
        ggml_quantize_chunk(c.type, wf.data(), wq.data(), 0, rows, c.k, nullptr);
        ggml_backend_tensor_set(w, wq.data(), 0, wq.size());

        if (c.experts) {
            ggml_tensor * x   = ggml_new_tensor_3d(actx, GGML_TYPE_F32, c.k, n_used, c.n);
            ggml_tensor * ids = ggml_new_tensor_2d(actx, GGML_TYPE_I32, n_used, c.n);
            node = ggml_mul_mat_id(actx, w, x, ids);
        } else {
            ggml_tensor * x = ggml_new_tensor_2d(actx, GGML_TYPE_F32, c.k, c.n);
            node = ggml_mul_mat(actx, w, x);
        }
        abuf = ggml_backend_alloc_ctx_tensors_from_buft(actx, ggml_backend_cpu_buffer_type());
        ggml_tensor * x = node->src[1];
        std::vector<float> xf = random_floats(ggml_nelements(x), 2);
        ggml_backend_tensor_set(x, xf.data(), 0, ggml_nbytes(x));
        if (c.experts) {
            // a skewed routing: most tokens to expert 0, the last expert unused
            std::vector<int32_t> ids(n_used * c.n);
            std::mt19937 rng(3);
            const int32_t e = (int32_t) c.experts;
            for (int64_t t = 0; t < c.n; ++t) {
                const int32_t first = (t % 4 == 0) ? (int32_t) (1 + rng() % (e - 2)) : 0;
                ids[t * n_used + 0] = first;
                ids[t * n_used + 1] = (first + 1 + (int32_t) (rng() % (e - 2))) % (e - 1);   // != first, never e-1
            }
            ggml_backend_tensor_set(node->src[2], ids.data(), 0, ids.size() * sizeof(int32_t));
        }
    }

    ~repacked_case() {
        if (abuf) ggml_backend_buffer_free(abuf);
        if (wbuf) ggml_backend_buffer_free(wbuf);
        if (actx) ggml_free(actx);
        if (wctx) ggml_free(wctx);
    }

    std::vector<uint8_t> result() const {
        std::vector<uint8_t> out(ggml_nbytes(node));
        ggml_backend_tensor_get(node, out.data(), 0, out.size());
        return out;
    }
};

// Normalised mean squared error of an f32 result against a reference.
inline double nmse(const std::vector<uint8_t> & ref, const std::vector<uint8_t> & got) {
    const float * a = (const float *) ref.data();
    const float * b = (const float *) got.data();
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size() / sizeof(float); ++i) {
        num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
        den += double(a[i]) * a[i];
    }
    return num / den;
}

// The NPU's rows of an m-row multiply at the share CTest sets (GGML_XDNA_NPU_SHARE): whole 256-row steps, every row
// at 1.
inline int64_t npu_rows_expected(int64_t m) {
    const char * v = getenv("GGML_XDNA_NPU_SHARE");
    const double share = v ? atof(v) : 0.0;
    return share >= 1.0 ? m : int64_t(share * m) / 256 * 256;
}

// Bytes of rows [r0, r1) of every result row (token, or token and expert slot) of an f32 result with m rows.
inline std::vector<uint8_t> rows_of(const std::vector<uint8_t> & res, int64_t m, int64_t r0, int64_t r1) {
    std::vector<uint8_t> out;
    const int64_t n = res.size() / sizeof(float) / m;
    for (int64_t t = 0; t < n; ++t) {
        const uint8_t * p = res.data() + (t * m + r0) * sizeof(float);
        out.insert(out.end(), p, p + (r1 - r0) * sizeof(float));
    }
    return out;
}

inline bool any_nonzero(const std::vector<uint8_t> & bytes) {
    const float * f = (const float *) bytes.data();
    for (size_t i = 0; i < bytes.size() / sizeof(float); ++i) if (f[i] != 0.0f) return true;
    return false;
}

// Real quantized data in weight `w`, from `seed`.
inline void fill_weight(ggml_tensor * w, uint32_t seed) {
    std::vector<float> wf = random_floats(size_t(w->ne[0] * w->ne[1]), seed);
    std::vector<uint8_t> wq(ggml_nbytes(w));
    ggml_quantize_chunk(w->type, wf.data(), wq.data(), 0, w->ne[1], w->ne[0], nullptr);
    ggml_backend_tensor_set(w, wq.data(), 0, wq.size());
}

// Two multiplies of one input (K and V, gate and up), on weights in the CPU_REPACK buffer type or a plain one.
struct pair_case {
    ggml_context *        wctx = nullptr;
    ggml_context *        actx = nullptr;
    ggml_backend_buffer_t wbuf = nullptr, abuf = nullptr;
    ggml_tensor *         y[2] = {};
    std::string           skip;

    pair_case(ggml_type type, int64_t k, int64_t m, int64_t n, bool repacked) {
        const loaded_backends & lb = load_backends();
        if (repacked && !lb.repack_buft) { skip = "this CPU backend has no CPU_REPACK buffer type"; return; }
        ggml_init_params p = { 16 * ggml_tensor_overhead(), nullptr, true };
        wctx = ggml_init(p);
        actx = ggml_init(p);
        ggml_tensor * w0 = ggml_new_tensor_2d(wctx, type, k, m), * w1 = ggml_new_tensor_2d(wctx, type, k, m);
        wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, repacked ? lb.repack_buft : ggml_backend_cpu_buffer_type());
        ggml_backend_buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        if (repacked && w0->extra == nullptr) { skip = std::string(ggml_type_name(type)) + " is not repacked here"; return; }
        fill_weight(w0, 11);
        fill_weight(w1, 12);
        ggml_tensor * x = ggml_new_tensor_2d(actx, GGML_TYPE_F32, k, n);
        y[0] = ggml_mul_mat(actx, w0, x);
        y[1] = ggml_mul_mat(actx, w1, x);
        abuf = ggml_backend_alloc_ctx_tensors_from_buft(actx, ggml_backend_cpu_buffer_type());
        std::vector<float> xf = random_floats(size_t(ggml_nelements(x)), 13);
        ggml_backend_tensor_set(x, xf.data(), 0, ggml_nbytes(x));
    }
    ~pair_case() {
        if (abuf) ggml_backend_buffer_free(abuf);
        if (wbuf) ggml_backend_buffer_free(wbuf);
        if (actx) ggml_free(actx);
        if (wctx) ggml_free(wctx);
    }
};

// Computes the graph of `nodes` (in that order, next to each other) on `backend`; their results, in order.
inline std::vector<std::vector<uint8_t>> run_graph(ggml_backend_t backend, std::vector<ggml_tensor *> nodes) {
    ggml_init_params p = { ggml_graph_overhead(), nullptr, true };
    ggml_context * gctx = ggml_init(p);
    ggml_cgraph * g = ggml_new_graph(gctx);
    for (ggml_tensor * n : nodes) {
        poison(n);
        ggml_build_forward_expand(g, n);
    }
    EXPECT_EQ(ggml_backend_graph_compute(backend, g), GGML_STATUS_SUCCESS);
    std::vector<std::vector<uint8_t>> out;
    for (ggml_tensor * n : nodes) {
        out.emplace_back(ggml_nbytes(n));
        ggml_backend_tensor_get(n, out.back().data(), 0, out.back().size());
    }
    ggml_free(gctx);
    return out;
}

// c's multiply (rc) on the stock CPU, then through the plugin, whose report is written (the file emptied first): the
// plugin's CPU rows, past the NPU's at the share CTest sets, are the stock CPU's bit for bit, the whole is within
// test-backend-ops' tolerance for MUL_MAT (NMSE 5e-4), and the NPU computed its rows. The plugin's result.
inline std::vector<uint8_t> expect_as_stock(const case_t & c, repacked_case & rc) {
    const loaded_backends & lb = load_backends();
    if (const char * report = getenv("GGML_XDNA_REPORT")) std::remove(report);
    ggml_backend_t cpu = ggml_backend_dev_init(lb.cpu_dev, nullptr);
    const std::vector<uint8_t> ref = run(cpu, rc.node);
    ggml_backend_free(cpu);

    ggml_backend_t xdna = ggml_backend_dev_init(lb.xdna_dev, nullptr);
    EXPECT_TRUE(ggml_backend_supports_op(xdna, rc.node));
    const std::vector<uint8_t> got = run(xdna, rc.node);
    ggml_backend_free(xdna);   // writes the report

    const int64_t npu = npu_rows_expected(c.m);
    EXPECT_TRUE(rows_of(got, c.m, npu, c.m) == rows_of(ref, c.m, npu, c.m))
        << name_of(c) << ": the CPU worker's rows differ from the stock CPU's";
    EXPECT_LT(nmse(ref, got), 5e-4) << name_of(c) << ": NMSE against the stock CPU";
    EXPECT_TRUE(any_nonzero(got));
    EXPECT_EQ(npu_rows_reported(), npu) << name_of(c) << ": rows the NPU computed";
    return got;
}

// The same for a pair of m-row multiplies of one input (pc), computed as one graph: both results.
inline std::vector<std::vector<uint8_t>> expect_pair_as_stock(pair_case & pc, int64_t m) {
    const loaded_backends & lb = load_backends();
    if (const char * report = getenv("GGML_XDNA_REPORT")) std::remove(report);
    ggml_backend_t cpu = ggml_backend_dev_init(lb.cpu_dev, nullptr);
    const auto ref = run_graph(cpu, { pc.y[0], pc.y[1] });
    ggml_backend_free(cpu);
    ggml_backend_t xdna = ggml_backend_dev_init(lb.xdna_dev, nullptr);
    const auto got = run_graph(xdna, { pc.y[0], pc.y[1] });
    ggml_backend_free(xdna);

    const int64_t npu = npu_rows_expected(m);
    for (int i = 0; i < 2; ++i) {
        EXPECT_TRUE(rows_of(got[i], m, npu, m) == rows_of(ref[i], m, npu, m))
            << "result " << i << ": the CPU worker's rows differ from the stock CPU's";
        EXPECT_LT(nmse(ref[i], got[i]), 5e-4) << "result " << i << ": NMSE against the stock CPU";
    }
    EXPECT_EQ(npu_rows_reported(), 2 * npu) << "rows the NPU computed in the pair (both results)";
    return got;
}


}  // namespace xdna_test
