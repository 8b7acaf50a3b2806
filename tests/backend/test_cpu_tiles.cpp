// The CPU worker's rows in tiles (GGML_XDNA_CPU_TILES, set by CTest with the share; cpu_tiles.h): a multiply and a
// pair of multiplies of one input, on repacked weights, with token counts on and off the tiles' 16-token blocks, and
// with the CPU's team driving the NPU between its slices:
// - the CPU worker's rows are the stock CPU's, bit for bit (the same kernels on the same rows and tokens, whoever
//   computes which), and the whole result matches it within test-backend-ops' tolerance for MUL_MAT (NMSE 5e-4);
// - the report says the CPU's rows were in tiles where GGML_XDNA_CPU_TILES=1, and that they were not where it is 0.
// And ggml's chunking of a repacked weight's rows, as cpu_tiles_narrow_rows reads it, on the cases that decide auto.
#include "repacked_case.h"

#include "workers/cpu/cpu_tiles.h"

using namespace xdna_test;

namespace {

int tiles_asked() {
    const char * v = getenv("GGML_XDNA_CPU_TILES");
    return v ? atoi(v) : -1;
}

// From the last report line: the CPU worker's runs in tiles (0 where the clause is missing).
long long tiled_reported() {
    return reported("in tiles in ([0-9]+) runs");
}

void expect_tiles(const std::string & name) {
    const long long runs = tiled_reported();
    if (tiles_asked() == 1) {
        EXPECT_GT(runs, 0) << name << ": the report does not say the CPU's rows were in tiles";
    } else if (tiles_asked() == 0) {
        EXPECT_EQ(runs, 0) << name << ": the report says the CPU's rows were in tiles";
    }
}

class cpu_tiles_multiply : public ::testing::TestWithParam<case_t> {};

}  // namespace

TEST_P(cpu_tiles_multiply, the_cpu_rows_in_tiles_are_the_stock_cpus) {
    const case_t c = GetParam();
    ASSERT_NE(load_backends().xdna_dev, nullptr) << "the plugin did not load";
    repacked_case rc(c);
    if (!rc.skip.empty()) GTEST_SKIP() << rc.skip;
    expect_as_stock(c, rc);
    expect_tiles(name_of(c));
}

// 77 and 300 tokens: a last block of tokens that is not a whole 16 (ggml's kernels take those 4 at a time, then one)
INSTANTIATE_TEST_SUITE_P(
    shapes, cpu_tiles_multiply,
    ::testing::Values(case_t{ GGML_TYPE_Q4_0, 1024, 1024, 64, 0 }, case_t{ GGML_TYPE_Q4_0, 1024, 1024, 77, 0 },
                      case_t{ GGML_TYPE_Q4_0, 2048, 512, 300, 0 }),
    [](const ::testing::TestParamInfo<case_t> & i) { return name_of(i.param); });

TEST(cpu_tiles_pair, the_cpu_rows_of_a_pair_in_tiles_are_the_stock_cpus) {
    ASSERT_NE(load_backends().xdna_dev, nullptr) << "the plugin did not load";
    const int64_t k = 1024, m = 1536, n = 93;
    pair_case pc(GGML_TYPE_Q4_0, k, m, n, true);
    if (!pc.skip.empty()) GTEST_SKIP() << pc.skip;
    expect_pair_as_stock(pc, m);
    expect_tiles("pair");
}

// ggml's chunks of a repacked weight's rows (repack.cpp, forward_mul_mat: about rows / (4 x threads), at least 8, on
// 8-row bounds), worked by hand: the rows outside whole 16-row groups
TEST(cpu_tiles_rule, narrow_rows_follow_ggmls_chunks) {
    EXPECT_EQ(xdna::cpu_tiles_narrow_rows(256, 16), 256);    // 32 chunks of 8
    EXPECT_EQ(xdna::cpu_tiles_narrow_rows(512, 16), 512);    // 64 chunks of 8
    EXPECT_EQ(xdna::cpu_tiles_narrow_rows(768, 16), 256);    // chunks of 12 on 8-row bounds: 16, 8, 16, 8, ...
    EXPECT_EQ(xdna::cpu_tiles_narrow_rows(1024, 16), 0);     // 64 chunks of 16: the CPU alone's K, V, O and down
    EXPECT_EQ(xdna::cpu_tiles_narrow_rows(3072, 16), 0);     // 64 chunks of 48: gate and up
    EXPECT_EQ(xdna::cpu_tiles_narrow_rows(1000, 16), 8);     // 62 chunks of 16 and the last 8 rows
    EXPECT_EQ(xdna::cpu_tiles_narrow_rows(256, 8), 256);     // -t 8: 32 chunks of 8
    EXPECT_EQ(xdna::cpu_tiles_narrow_rows(512, 8), 0);       // 32 chunks of 16
    EXPECT_EQ(xdna::cpu_tiles_narrow_rows(768, 8), 256);     // 32 chunks of 24
    EXPECT_EQ(xdna::cpu_tiles_narrow_rows(64, 16), 64);      // 8 chunks of 8, 8 threads idle
    EXPECT_EQ(xdna::cpu_tiles_narrow_rows(256, 1), 0);       // one thread: one chunk
    EXPECT_EQ(xdna::cpu_tiles_narrow_rows(0, 16), 0);
}
