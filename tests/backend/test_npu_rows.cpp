// The NPU worker on the CPU's repacked weights, with the NPU taking rows (GGML_XDNA_NPU_SHARE set by CTest):
// - on the NPU's rows, the NPU given repacked weights and given the same weights in a plain buffer agree exactly
//   (the conversion back is exact, so the NPU sees the same bf16 weights);
// - on the CPU worker's rows, the result is the stock CPU's, bit for bit;
// - the whole result matches the stock CPU's within test-backend-ops' tolerance for MUL_MAT (NMSE 5e-4);
// - the NPU really took the rows the share gives it (the plugin's report says so).
#include "repacked_case.h"

#include <cmath>
#include <fstream>
#include <regex>

using namespace xdna_test;

namespace {

class npu_rows : public ::testing::TestWithParam<case_t> {};

}  // namespace

TEST_P(npu_rows, repacked_and_plain_weights_agree_exactly_and_match_the_cpu) {
    const case_t c = GetParam();
    const loaded_backends & lb = load_backends();
    ASSERT_NE(lb.xdna_dev, nullptr) << "the plugin did not load";
    repacked_case rep(c), plain(c, true);
    if (!rep.skip.empty()) GTEST_SKIP() << rep.skip;
    // the same activations (and ids) in both
    ggml_backend_tensor_set(plain.node->src[1], rep.node->src[1]->data, 0, ggml_nbytes(rep.node->src[1]));

    ggml_backend_t cpu  = ggml_backend_dev_init(lb.cpu_dev, nullptr);
    const std::vector<uint8_t> ref = run(cpu, rep.node);
    ggml_backend_free(cpu);

    ggml_backend_t xdna = ggml_backend_dev_init(lb.xdna_dev, nullptr);
    ASSERT_TRUE(ggml_backend_supports_op(xdna, rep.node));
    const std::vector<uint8_t> got_rep   = run(xdna, rep.node);
    const std::vector<uint8_t> got_plain = run(xdna, plain.node);
    ggml_backend_free(xdna);   // writes the report

    const int64_t npu = npu_rows_expected(c.m);
    EXPECT_TRUE(rows_of(got_rep, c.m, 0, npu) == rows_of(got_plain, c.m, 0, npu))
        << name_of(c) << ": the NPU's rows differ between repacked and plain weights";
    EXPECT_TRUE(rows_of(got_rep, c.m, npu, c.m) == rows_of(ref, c.m, npu, c.m))
        << name_of(c) << ": the CPU worker's rows differ from the stock CPU's";
    const double e = nmse(ref, got_rep);
    EXPECT_LT(e, 5e-4) << name_of(c) << ": NMSE against the stock CPU";
    EXPECT_TRUE(any_nonzero(got_rep));
    EXPECT_EQ(npu_rows_reported(), 2 * npu) << "rows the NPU computed (two multiplies)";
    if (c.experts && npu > 0) {
        // the skewed routing sends most tokens to expert 0 and leaves the last one without any
        SUCCEED() << "mixture of experts with a skewed routing and an unused expert";
    }
}

INSTANTIATE_TEST_SUITE_P(
    cpu_repack, npu_rows,
    ::testing::Values(case_t{ GGML_TYPE_Q4_0, 1024, 256, 64, 0 }, case_t{ GGML_TYPE_Q4_0, 1280, 520, 77, 0 },
                      case_t{ GGML_TYPE_Q4_K, 2048, 512, 600, 0 }, case_t{ GGML_TYPE_IQ4_NL, 512, 264, 33, 0 },
                      case_t{ GGML_TYPE_MXFP4, 1024, 256, 40, 0 }, case_t{ GGML_TYPE_Q2_K, 768, 256, 48, 0 },
                      case_t{ GGML_TYPE_Q4_0, 1024, 512, 64, 8 }, case_t{ GGML_TYPE_MXFP4, 512, 256, 40, 4 },
                      case_t{ GGML_TYPE_Q4_K, 1024, 264, 96, 6 }),
    [](const ::testing::TestParamInfo<case_t> & i) { return name_of(i.param); });
