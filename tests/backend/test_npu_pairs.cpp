// Two multiplies of one input computed as one (multiply::twin; K and V, gate and up in llama.cpp's graphs), at the
// share CTest sets (GGML_XDNA_NPU_SHARE), on the emulated NPU in exact mode:
// - each result of the pair is, byte for byte, what the same backend gives for that multiply alone (the same blocks,
//   activations and sums: pairing changes when the work runs, never what it computes);
// - the CPU worker's rows are the stock CPU's, bit for bit, and the whole result matches the stock CPU's within
//   test-backend-ops' tolerance for MUL_MAT (NMSE 5e-4);
// - the pair really was one multiply (its shape "x2" in the planner's lines of the report), and the NPU took its rows
//   of both;
// - can_pair() pairs only what it may.
#include "repacked_case.h"

#include "workers/multiply.h"

#include <cstdio>
#include <cstring>
#include <fstream>

using namespace xdna_test;

namespace {

// Whether the report's planner lines name the shape of a pair of these multiplies.
bool report_names_pair(ggml_type type, int64_t k, int64_t m, int64_t n) {
    const char * path = getenv("GGML_XDNA_REPORT");
    if (!path) return false;
    std::ifstream f(path);
    const std::string want = std::string(ggml_type_name(type)) + "(repacked) K=" + std::to_string(k) + " rows=" +
                             std::to_string(m) + " tokens=" + std::to_string(n) + " x2:";
    const std::string want_plain = std::string(ggml_type_name(type)) + " K=" + std::to_string(k) + " rows=" +
                                   std::to_string(m) + " tokens=" + std::to_string(n) + " x2:";
    for (std::string line; std::getline(f, line);) {
        if (line.rfind("planner: ", 0) == 0 &&
            (line.find(want) != std::string::npos || line.find(want_plain) != std::string::npos)) {
            return true;
        }
    }
    return false;
}

struct pair_param {
    ggml_type type;
    int64_t   k, m, n;
    bool      repacked;
};

std::string name_of(const pair_param & c) {
    return std::string(ggml_type_name(c.type)) + "_k" + std::to_string(c.k) + "_m" + std::to_string(c.m) + "_n" +
           std::to_string(c.n) + (c.repacked ? "_repacked" : "_plain");
}

class npu_pairs : public ::testing::TestWithParam<pair_param> {};

}  // namespace

TEST_P(npu_pairs, a_pair_computes_what_each_multiply_does_alone) {
    const pair_param c = GetParam();
    const loaded_backends & lb = load_backends();
    ASSERT_NE(lb.xdna_dev, nullptr) << "the plugin did not load";
    pair_case pc(c.type, c.k, c.m, c.n, c.repacked);
    if (!pc.skip.empty()) GTEST_SKIP() << pc.skip;
    if (const char * report = getenv("GGML_XDNA_REPORT")) std::remove(report);   // only this process's lines in it

    ggml_backend_t cpu = ggml_backend_dev_init(lb.cpu_dev, nullptr);
    const auto ref = run_graph(cpu, { pc.y[0], pc.y[1] });
    ggml_backend_free(cpu);

    ggml_backend_t alone = ggml_backend_dev_init(lb.xdna_dev, nullptr);
    ASSERT_TRUE(ggml_backend_supports_op(alone, pc.y[0]));
    const std::vector<uint8_t> alone0 = run_graph(alone, { pc.y[0] })[0];
    const std::vector<uint8_t> alone1 = run_graph(alone, { pc.y[1] })[0];
    ggml_backend_free(alone);

    ggml_backend_t xdna = ggml_backend_dev_init(lb.xdna_dev, nullptr);
    const auto got = run_graph(xdna, { pc.y[0], pc.y[1] });
    ggml_backend_free(xdna);   // writes the report: its last line is this backend's

    const int64_t npu = npu_rows_expected(c.m);
    EXPECT_TRUE(got[0] == alone0) << name_of(c) << ": the first result differs from the multiply computed alone";
    EXPECT_TRUE(got[1] == alone1) << name_of(c) << ": the second result differs from the multiply computed alone";
    for (int i = 0; i < 2; ++i) {
        EXPECT_TRUE(rows_of(got[i], c.m, npu, c.m) == rows_of(ref[i], c.m, npu, c.m))
            << name_of(c) << ": result " << i << ": the CPU worker's rows differ from the stock CPU's";
        EXPECT_LT(nmse(ref[i], got[i]), 5e-4) << name_of(c) << ": result " << i << ": NMSE against the stock CPU";
        EXPECT_TRUE(any_nonzero(got[i]));
    }
    EXPECT_EQ(npu_rows_reported(), 2 * npu) << "rows the NPU computed in the pair (both results)";
    EXPECT_TRUE(report_names_pair(c.type, c.k, c.m, c.n)) << "the planner's lines do not name the pair's shape";
}

INSTANTIATE_TEST_SUITE_P(
    shapes, npu_pairs,
    ::testing::Values(pair_param{ GGML_TYPE_Q4_0, 1024, 520, 77, true }, pair_param{ GGML_TYPE_Q4_K, 2048, 512, 600, true },
                      pair_param{ GGML_TYPE_F16, 1280, 264, 40, false }),
    [](const ::testing::TestParamInfo<pair_param> & i) { return name_of(i.param); });

// What may be computed as one: MUL_MATs of the same input with weights of the same type, shape and layout.
TEST(can_pair, pairs_only_multiplies_of_one_input_and_alike_weights) {
    ggml_init_params p = { 32 * ggml_tensor_overhead(), nullptr, true };
    ggml_context * ctx = ggml_init(p);
    ggml_tensor * x  = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 8);
    ggml_tensor * x2 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 8);
    ggml_tensor * wa = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, 64, 32), * wb = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, 64, 32);
    ggml_tensor * wq8 = ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, 64, 32), * wtall = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, 64, 48);
    static float in[64 * 8], other[64 * 8];
    x->data  = in;
    x2->data = other;
    ggml_tensor * same = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 8), * wide = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 128, 4);
    same->data = wide->data = in;   // the same input in another tensor; the same bytes in another layout
    ggml_tensor * a = ggml_mul_mat(ctx, wa, x);
    EXPECT_TRUE(xdna::can_pair(a, ggml_mul_mat(ctx, wb, x)));
    EXPECT_TRUE(xdna::can_pair(a, ggml_mul_mat(ctx, wb, same))) << "the same input in another tensor";
    EXPECT_FALSE(xdna::can_pair(a, ggml_mul_mat(ctx, wb, x2))) << "another input";
    ggml_tensor * wwide = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, 128, 32);
    EXPECT_FALSE(xdna::can_pair(a, ggml_mul_mat(ctx, wwide, wide))) << "the same bytes in another layout";
    EXPECT_FALSE(xdna::can_pair(a, ggml_mul_mat(ctx, wq8, x))) << "another weight type";
    EXPECT_FALSE(xdna::can_pair(a, ggml_mul_mat(ctx, wtall, x))) << "another weight shape";
    ggml_tensor * precise = ggml_mul_mat(ctx, wb, x);
    const int32_t f32_acc = 10;   // op_params[0]: the least accumulator precision (ggml.h's GGML_PREC_F32)
    memcpy(precise->op_params, &f32_acc, sizeof(f32_acc));
    EXPECT_FALSE(xdna::can_pair(a, precise)) << "another precision request";
    ggml_tensor * ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 1, 8);
    ggml_tensor * we  = ggml_new_tensor_3d(ctx, GGML_TYPE_Q4_0, 64, 32, 4);
    ggml_tensor * x3  = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 1, 8);
    ggml_tensor * id0 = ggml_mul_mat_id(ctx, we, x3, ids);
    EXPECT_FALSE(xdna::can_pair(id0, ggml_mul_mat_id(ctx, we, x3, ids))) << "MUL_MAT_ID";
    ggml_free(ctx);
}
