// Precision requests honoured by every worker (claim.h; docs/architecture.md, "Precision requests"): a multiply that
// asks for f32 accumulation (ggml_prec_set_acc, ggml_mul_mat_set_prec before ggml 0.25) is claimed and computed by the
// plugin with the workers CTest selects on f16 weights (the NPU's bf16 kernels, its int8 path, half NPU and half CPU, the CPU alone)
// and compared with an fp64 reference, exactly: the inputs are small integers, exact in bf16 and in int8 (a 127 in
// every group of 1,024 weights and in every token makes both scales 1), and every partial sum is an integer below 2^24,
// so any f32 accumulation gives the reference bit for bit, while a bf16 (or f16) accumulator rounds sums above 256
// (2048): those sums here are around 9,000.
// A src1 request is claimed or declined as the NPU worker in this configuration can honour it.
#include "backend_fixture.h"

#include "backend/claim.h"
#include "xdna_ggml_compat.h"

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

using namespace xdna_test;

namespace {

bool npu_on() {
    const char * n = getenv("GGML_XDNA_NPU");
    const char * s = getenv("GGML_XDNA_NPU_SHARE");
    return !(n && strcmp(n, "off") == 0) && s && atof(s) > 0.0;
}

bool w8_on() {
    const char * v = getenv("GGML_XDNA_NPU_W8");
    return v && atoi(v) == 1;
}

void request_f32_accumulation(ggml_tensor * t) {
#if XDNA_HAS_PREC_REQUESTS
    ASSERT_TRUE(ggml_prec_set_acc(t, GGML_PREC_F32));
#else
    if (t->op == GGML_OP_MUL_MAT) {
        ggml_mul_mat_set_prec(t, GGML_PREC_F32);
    } else {
        const int32_t v = GGML_PREC_F32;   // no request API for MUL_MAT_ID before ggml 0.25: the slot it uses since
        memcpy(t->op_params, &v, sizeof(v));
    }
#endif
}

// Small non-negative integers with a 127 in every group of 1,024 (row of w, token of x).
std::vector<float> integers(int64_t rows, int64_t k, uint32_t seed) {
    std::vector<float> v(size_t(rows * k));
    uint32_t s = seed;
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = 0; i < k; ++i) {
            s = s * 1664525u + 1013904223u;
            v[size_t(r * k + i)] = (i % 1024 == (r * 37) % 1024) ? 127.0f : float((s >> 24) % 4);
        }
    }
    return v;
}

struct prec_case {
    ggml_context *        ctx  = nullptr;
    ggml_backend_buffer_t buf  = nullptr;
    ggml_tensor *         node = nullptr;
    std::vector<double>   ref;   // fp64, [token (and slot)][row]

    // experts == 0: MUL_MAT; otherwise MUL_MAT_ID with 2 of `experts` per token
    prec_case(int64_t k, int64_t m, int64_t n, int64_t experts) {
        ggml_init_params p = { 8 * ggml_tensor_overhead(), nullptr, true };
        ctx = ggml_init(p);
        const int64_t used = 2;
        // f16 weights (F32 ones stay with the CPU worker): the small integers are exact in f16, bf16 and int8
        ggml_tensor * w = experts ? ggml_new_tensor_3d(ctx, GGML_TYPE_F16, k, m, experts) : ggml_new_tensor_2d(ctx, GGML_TYPE_F16, k, m);
        ggml_tensor * x = experts ? ggml_new_tensor_3d(ctx, GGML_TYPE_F32, k, used, n) : ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, n);
        ggml_tensor * ids = experts ? ggml_new_tensor_2d(ctx, GGML_TYPE_I32, used, n) : nullptr;
        node = experts ? ggml_mul_mat_id(ctx, w, x, ids) : ggml_mul_mat(ctx, w, x);
        buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
        ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        const int64_t e = experts ? experts : 1, slots = experts ? used : 1;
        const std::vector<float> wf = integers(m * e, k, 1), xf = integers(slots * n, k, 2);
        std::vector<ggml_fp16_t> wh(wf.size());
        ggml_fp32_to_fp16_row(wf.data(), wh.data(), int64_t(wf.size()));
        ggml_backend_tensor_set(w, wh.data(), 0, ggml_nbytes(w));
        ggml_backend_tensor_set(x, xf.data(), 0, ggml_nbytes(x));
        std::vector<int32_t> id(size_t(used * n));
        for (int64_t t = 0; t < n; ++t) {
            id[size_t(t * used)]     = int32_t(t % e);
            id[size_t(t * used + 1)] = int32_t((t % e + 1 + (t / 3) % (e - 1)) % e);   // another expert
        }
        if (ids) ggml_backend_tensor_set(ids, id.data(), 0, id.size() * sizeof(int32_t));
        ref.assign(size_t(slots * n * m), 0.0);
        for (int64_t t = 0; t < n; ++t) {
            for (int64_t s = 0; s < slots; ++s) {
                const int64_t ex = experts ? id[size_t(t * used + s)] : 0;
                const float * xr = &xf[size_t((t * slots + s) * k)];
                for (int64_t r = 0; r < m; ++r) {
                    const float * wr = &wf[size_t((ex * m + r) * k)];
                    double acc = 0;
                    for (int64_t i = 0; i < k; ++i) acc += double(wr[i]) * xr[i];
                    ref[size_t((t * slots + s) * m + r)] = acc;
                }
            }
        }
    }
    ~prec_case() {
        ggml_backend_buffer_free(buf);
        ggml_free(ctx);
    }
};

// Computes `node` on the plugin (a test failure unless it is claimed and computed).
std::vector<float> run_on_plugin(ggml_tensor * node) {
    const loaded_backends & lb = load_backends();
    ggml_backend_t xdna = ggml_backend_dev_init(lb.xdna_dev, nullptr);
    EXPECT_TRUE(ggml_backend_supports_op(xdna, node));
    ggml_init_params p = { ggml_graph_overhead(), nullptr, true };
    ggml_context * gctx = ggml_init(p);
    ggml_cgraph * g = ggml_new_graph(gctx);
    ggml_build_forward_expand(g, node);
    EXPECT_EQ(ggml_backend_graph_compute(xdna, g), GGML_STATUS_SUCCESS);
    std::vector<float> out(size_t(ggml_nelements(node)));
    ggml_backend_tensor_get(node, out.data(), 0, ggml_nbytes(node));
    ggml_free(gctx);
    ggml_backend_free(xdna);   // writes the report
    return out;
}

}  // namespace

TEST(precision, f32_accumulation_requested_is_given_by_every_worker) {
    const loaded_backends & lb = load_backends();
    ASSERT_NE(lb.xdna_dev, nullptr) << "the plugin did not load";
    if (const char * report = getenv("GGML_XDNA_REPORT")) std::remove(report);   // this run's lines only
    // K of four 1,024 blocks, rows past whole 256-row blocks (half of them: 256 to the NPU), a token count no block
    // size divides
    prec_case mm(4096, 520, 40, 0), id(2048, 512, 48, 4);
    request_f32_accumulation(mm.node);
    request_f32_accumulation(id.node);
    ASSERT_EQ(xdna::claim_acc_request(mm.node), xdna::prec_f32);
    for (prec_case * c : { &mm, &id }) {
        const std::vector<float> got = run_on_plugin(c->node);
        ASSERT_EQ(got.size(), c->ref.size());
        size_t bad = 0, first = 0;
        double big = 0;
        for (size_t i = 0; i < got.size(); ++i) {
            big = std::max(big, c->ref[i]);
            if (double(got[i]) != c->ref[i] && bad++ == 0) first = i;
        }
        EXPECT_EQ(bad, 0u) << ggml_op_name(c->node->op) << ": " << bad << " of " << got.size() << " results differ from "
                           << "the fp64 reference; first: " << (bad ? got[first] : 0.0f) << " vs " << c->ref[first];
        EXPECT_GT(big, 4096.0) << "sums large enough that a bf16 or f16 accumulator would round them";
    }
    if (npu_on()) {
        EXPECT_GT(npu_rows_reported(), 0) << "the NPU took no rows";
    }
}

TEST(precision, src1_request_claimed_only_where_the_npu_honours_it) {
    const loaded_backends & lb = load_backends();
    ASSERT_NE(lb.xdna_dev, nullptr) << "the plugin did not load";
    ggml_backend_t xdna = ggml_backend_dev_init(lb.xdna_dev, nullptr);
    prec_case c(1024, 256, 64, 0);
    const bool npu = npu_on(), w8 = w8_on();
    // f32 kept: only without an NPU worker; bf16 allowed: unless the NPU feeds int8; int8 allowed: always
    const struct { int32_t req; bool claimed; } rows[] = {
        { xdna::prec_f32, !npu }, { xdna::prec_bf16, !(npu && w8) }, { xdna::prec_q8, true }, { xdna::prec_default, true },
    };
    for (const auto & r : rows) {
        memcpy((char *) c.node->op_params + 3 * sizeof(int32_t), &r.req, sizeof(r.req));
        EXPECT_EQ(ggml_backend_supports_op(xdna, c.node), r.claimed) << "src1 request " << r.req;
    }
    ggml_backend_free(xdna);
}
