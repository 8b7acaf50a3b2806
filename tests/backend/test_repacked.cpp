// What test-backend-ops never covers: multiplies on weights in the CPU backend's CPU_REPACK buffer type, computed
// through the plugin and compared with the stock CPU backend's result on the same weights. The CPU worker runs the
// same kernels on a row view of the repacked weight, so the results must be bit-identical.
#include "repacked_case.h"
#include "workers/cpu/cpu_worker.h"

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

using namespace xdna_test;

namespace {

class repacked : public ::testing::TestWithParam<case_t> {};

}  // namespace

TEST_P(repacked, plugin_result_is_bit_identical_to_stock_cpu) {
    const case_t c = GetParam();
    const loaded_backends & lb = load_backends();
    ASSERT_NE(lb.cpu_dev, nullptr);
    ASSERT_NE(lb.xdna_dev, nullptr) << "the plugin did not load";
    repacked_case rc(c);
    if (!rc.skip.empty()) GTEST_SKIP() << rc.skip;

    ggml_backend_t cpu  = ggml_backend_dev_init(lb.cpu_dev, nullptr);
    ggml_backend_t xdna = ggml_backend_dev_init(lb.xdna_dev, nullptr);
    ASSERT_TRUE(ggml_backend_supports_op(xdna, rc.node)) << "the plugin does not claim " << name_of(c);
    ASSERT_TRUE(ggml_backend_supports_buft(xdna, lb.repack_buft));

    const std::vector<uint8_t> ref = run(cpu, rc.node);
    const std::vector<uint8_t> got = run(xdna, rc.node);
    ASSERT_EQ(ref.size(), got.size());
    EXPECT_EQ(memcmp(ref.data(), got.data(), ref.size()), 0) << name_of(c) << ": plugin result differs from stock CPU";
    EXPECT_TRUE(any_nonzero(ref));

    ggml_backend_free(xdna);
    ggml_backend_free(cpu);
}

// The CPU worker's row slices (on multiples of 8 rows) put together give the stock CPU's result exactly.
TEST_P(repacked, cpu_worker_row_slices_are_bit_identical) {
    const case_t c = GetParam();
    const loaded_backends & lb = load_backends();
    repacked_case rc(c);
    if (!rc.skip.empty()) GTEST_SKIP() << rc.skip;

    ggml_backend_t cpu = ggml_backend_dev_init(lb.cpu_dev, nullptr);
    const std::vector<uint8_t> ref = run(cpu, rc.node);
    ggml_backend_free(cpu);

    std::unique_ptr<xdna::cpu_worker> worker = xdna::cpu_worker::create(lb.cpu_dev);
    ASSERT_NE(worker, nullptr);
    const xdna::multiply m = xdna::describe_multiply(rc.node);
    ASSERT_TRUE(m.repacked);
    ASSERT_EQ(worker->row_align(m), 8);
    std::vector<uint8_t> zero(ggml_nbytes(rc.node), 0);
    ggml_backend_tensor_set(rc.node, zero.data(), 0, zero.size());
    const int64_t cut = (c.m / 3) / 8 * 8;   // an uneven split on an 8-row boundary
    for (xdna::row_range r : { xdna::row_range{ 0, cut }, xdna::row_range{ cut, c.m } }) {
        const xdna::work_record res = worker->compute(m, r);
        ASSERT_TRUE(res.ok()) << res.why();
    }
    const std::vector<uint8_t> got = rc.result();
    EXPECT_EQ(memcmp(ref.data(), got.data(), ref.size()), 0) << name_of(c) << ": row slices differ from the whole";
}

INSTANTIATE_TEST_SUITE_P(
    cpu_repack, repacked,
    ::testing::Values(case_t{ GGML_TYPE_Q4_0, 256, 64, 32, 0 }, case_t{ GGML_TYPE_Q4_0, 2048, 256, 77, 0 },
                      case_t{ GGML_TYPE_Q4_K, 512, 128, 64, 0 }, case_t{ GGML_TYPE_IQ4_NL, 1024, 96, 33, 0 },
                      case_t{ GGML_TYPE_MXFP4, 512, 64, 40, 0 }, case_t{ GGML_TYPE_Q2_K, 512, 64, 48, 0 },
                      case_t{ GGML_TYPE_Q4_0, 256, 64, 40, 8 }, case_t{ GGML_TYPE_Q4_K, 256, 32, 36, 6 },
                      case_t{ GGML_TYPE_MXFP4, 256, 32, 64, 4 }),
    [](const ::testing::TestParamInfo<case_t> & i) { return name_of(i.param); });
