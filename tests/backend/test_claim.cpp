// The claim policy, case by case, on tensors built in a ggml context (no CPU backend asked: the policy's own rules).
#include "backend/claim.h"

#include "ggml.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace xdna;

namespace {

struct claim_test : ::testing::Test {
    ggml_context * ctx = nullptr;
    claim_context cc;

    void SetUp() override {
        ggml_init_params p = { 256 * ggml_tensor_overhead(), nullptr, true };
        ctx = ggml_init(p);
        cc.min_batch = 32;
    }
    void TearDown() override { ggml_free(ctx); }

    ggml_tensor * mm(ggml_type wt, int64_t k, int64_t m, int64_t n) {
        ggml_tensor * w = ggml_new_tensor_2d(ctx, wt, k, m);
        ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, n);
        return ggml_mul_mat(ctx, w, x);
    }
};

}  // namespace

TEST_F(claim_test, prompt_sized_mul_mat_is_claimed) {
    std::string why;
    EXPECT_TRUE(claim(mm(GGML_TYPE_Q4_0, 256, 64, 32), cc, &why)) << why;
    EXPECT_TRUE(claim(mm(GGML_TYPE_Q8_0, 256, 64, 512), cc));
    EXPECT_TRUE(claim(mm(GGML_TYPE_F16, 256, 64, 100), cc));
    EXPECT_TRUE(claim(mm(GGML_TYPE_F32, 256, 64, 100), cc));
    EXPECT_TRUE(claim(mm(GGML_TYPE_Q4_K, 256, 64, 100), cc));
}

TEST_F(claim_test, small_batches_stay_on_the_cpu) {
    std::string why;
    EXPECT_FALSE(claim(mm(GGML_TYPE_Q4_0, 256, 64, 31), cc, &why));
    EXPECT_EQ(why, "fewer tokens than GGML_XDNA_MIN_BATCH");
    EXPECT_FALSE(claim(mm(GGML_TYPE_Q4_0, 256, 64, 1), cc));
    cc.min_batch = 1000000;   // the spec's "CPU alone" switch
    EXPECT_FALSE(claim(mm(GGML_TYPE_Q4_0, 256, 64, 512), cc));
    cc.min_batch = 32;
    cc.small_batches = true;  // GGML_XDNA_NPU_DECODE
    EXPECT_TRUE(claim(mm(GGML_TYPE_Q4_0, 256, 64, 1), cc));
}

TEST_F(claim_test, only_leaf_weights) {
    // a KV-cache-like view, or a computed src0, changes between calls: never claimed
    ggml_tensor * kv = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 256, 1024);
    ggml_tensor * k  = ggml_view_2d(ctx, kv, 256, 64, kv->nb[1], 0);
    ggml_tensor * x  = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 256, 64);
    std::string why;
    EXPECT_FALSE(claim(ggml_mul_mat(ctx, k, x), cc, &why));
    EXPECT_EQ(why, "src0 is not a leaf weight");
    ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 256, 64);
    EXPECT_FALSE(claim(ggml_mul_mat(ctx, ggml_scale(ctx, a, 2.0f), x), cc));
}

TEST_F(claim_test, batched_and_non_f32_activations_are_declined) {
    ggml_tensor * w  = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 256, 64, 4);
    ggml_tensor * x  = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 256, 64, 4);
    EXPECT_FALSE(claim(ggml_mul_mat(ctx, w, x), cc));
    ggml_tensor * w2 = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 256, 64);
    ggml_tensor * x3 = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 256, 64, 2);
    EXPECT_FALSE(claim(ggml_mul_mat(ctx, w2, x3), cc));
    ggml_tensor * xh = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 256, 64);
    EXPECT_FALSE(claim(ggml_mul_mat(ctx, w2, xh), cc));
}

TEST_F(claim_test, mul_mat_id_by_token_count) {
    ggml_tensor * w   = ggml_new_tensor_3d(ctx, GGML_TYPE_Q4_0, 256, 64, 8);
    ggml_tensor * x   = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 256, 2, 40);
    ggml_tensor * ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 2, 40);
    std::string why;
    EXPECT_TRUE(claim(ggml_mul_mat_id(ctx, w, x, ids), cc, &why)) << why;
    ggml_tensor * xs  = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 256, 2, 16);
    ggml_tensor * ids2 = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 2, 16);
    EXPECT_FALSE(claim(ggml_mul_mat_id(ctx, w, xs, ids2), cc));
}

TEST_F(claim_test, never_other_ops) {
    ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 256, 64);
    ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 256, 64);
    EXPECT_FALSE(claim(ggml_add(ctx, a, b), cc));
    EXPECT_FALSE(claim(ggml_soft_max(ctx, a), cc));
    EXPECT_FALSE(claim(ggml_rms_norm(ctx, a, 1e-6f), cc));
    ggml_tensor * q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 32, 4);
    ggml_tensor * k = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 64, 256, 4);
    ggml_tensor * v = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 64, 256, 4);
    EXPECT_FALSE(claim(ggml_flash_attn_ext(ctx, q, k, v, nullptr, 0.125f, 0.0f, 0.0f), cc));
    // layout ops are accepted: the scheduler and test-backend-ops ask about every tensor
    EXPECT_TRUE(claim(a, cc));
    EXPECT_TRUE(claim(ggml_view_1d(ctx, a, 16, 0), cc));
    EXPECT_TRUE(claim(ggml_transpose(ctx, a), cc));
}

TEST_F(claim_test, weights_must_be_in_host_memory_or_cpu_repack) {
    EXPECT_TRUE(claim_weight_buft(ggml_backend_cpu_buffer_type(), cc));
}

// Precision requests (claim.h): raw op_params, as ggml_mul_mat_set_prec / ggml_prec_set_acc (slot 0) and
// ggml_prec_set_src(.., 1) (slot 3) write them.
namespace {
void set_request(ggml_tensor * t, int slot, int32_t v) {
    memcpy((char *) t->op_params + slot * sizeof(int32_t), &v, sizeof(v));
}
}  // namespace

TEST_F(claim_test, every_accumulator_request_a_worker_can_meet_is_claimed) {
    for (int32_t acc : { prec_default, prec_f32, prec_bf16, prec_f16 }) {
        for (int32_t npu : { prec_default, prec_bf16, prec_q8 }) {
            cc.npu_src1_prec = npu;
            ggml_tensor * t = mm(GGML_TYPE_Q4_0, 256, 64, 64);
            set_request(t, 0, acc);
            std::string why;
            EXPECT_TRUE(claim(t, cc, &why)) << "accumulator request " << acc << ", NPU feeds " << npu << ": " << why;
        }
    }
}

TEST_F(claim_test, accumulator_requests_below_any_float_or_unknown_are_declined) {
    for (int32_t acc : { int32_t(prec_q8), int32_t(prec_q4), 1, 11, 99, -1 }) {
        ggml_tensor * t = mm(GGML_TYPE_Q4_0, 256, 64, 64);
        set_request(t, 0, acc);
        std::string why;
        EXPECT_FALSE(claim(t, cc, &why)) << acc;
        EXPECT_EQ(why, "accumulator precision request not allowed or unknown");
    }
}

TEST_F(claim_test, src1_requests_against_what_the_npu_converts_to) {
    // (request, what the NPU worker feeds: 0 = no NPU worker, bf16, or int8 with GGML_XDNA_NPU_W8) -> claimed
    struct row { int32_t req, npu; bool claimed; };
    const row rows[] = {
        { prec_default, prec_bf16, true }, { prec_default, prec_q8, true },
        { prec_f32, prec_default, true },  { prec_f32, prec_bf16, false }, { prec_f32, prec_q8, false },
        { prec_bf16, prec_bf16, true },    { prec_bf16, prec_q8, false },
        { prec_f16, prec_bf16, true },     { prec_f16, prec_q8, false },   // ggml ranks BF16 above F16
        { prec_q8, prec_bf16, true },      { prec_q8, prec_q8, true },
        { prec_q4, prec_bf16, true },      { prec_q4, prec_q8, true },
    };
    for (const row & r : rows) {
        for (bool id : { false, true }) {
            cc.npu_src1_prec = r.npu;
            ggml_tensor * t;
            if (id) {
                ggml_tensor * w   = ggml_new_tensor_3d(ctx, GGML_TYPE_Q4_0, 256, 64, 4);
                ggml_tensor * x   = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 256, 2, 40);
                ggml_tensor * ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 2, 40);
                t = ggml_mul_mat_id(ctx, w, x, ids);
            } else {
                t = mm(GGML_TYPE_Q4_0, 256, 64, 64);
            }
            set_request(t, 3, r.req);
            std::string why;
            EXPECT_EQ(claim(t, cc, &why), r.claimed) << (id ? "MUL_MAT_ID" : "MUL_MAT") << " src1 request " << r.req
                                                     << ", NPU feeds " << r.npu;
            if (!r.claimed) {
                EXPECT_EQ(why, "src1 precision request the NPU worker cannot honour");
            }
        }
    }
    cc.npu_src1_prec = prec_bf16;
    ggml_tensor * t = mm(GGML_TYPE_Q4_0, 256, 64, 64);
    set_request(t, 3, 12);
    std::string why;
    EXPECT_FALSE(claim(t, cc, &why));
    EXPECT_EQ(why, "unknown src1 precision request");
}
