// The XDNA1 timing model against the published measurements it was fitted to (data/xdna1-gemm-points.json), the
// table in docs/emulator.md against the same data, and the model's shape where no point pins it.
#include "xdna1_points.h"
#include "xdna1_timing.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

using namespace xdna;

static std::vector<xdna1_point> points() { return xdna1_load_points(XDNA1_POINTS); }

TEST(xdna1_timing, every_published_point_within_15_percent) {
    const auto pts = points();
    ASSERT_GE(pts.size(), 12u);
    for (const xdna1_point & p : pts) {
        EXPECT_LE(std::abs(xdna1_point_error(p)), 0.15)
            << p.types << " tile " << p.tile.m << "/" << p.tile.k << "/" << p.tile.n << " " << p.block.M << "x"
            << p.block.K << "x" << p.block.N << ": model " << xdna1_point_model(p) << " against " << p.lo << "-" << p.hi;
    }
}

TEST(xdna1_timing, the_docs_table_is_the_data_s) {
    std::ifstream f(XDNA1_EMULATOR_DOC);
    ASSERT_TRUE(f) << XDNA1_EMULATOR_DOC;
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string doc = ss.str(), table = xdna1_points_table(points());
    EXPECT_NE(doc.find(table), std::string::npos)
        << "docs/emulator.md does not hold the table `xdna-npu-model table` prints now:\n" << table;
}

TEST(xdna1_timing, the_silicon_s_own_figures) {
    EXPECT_DOUBLE_EQ(xdna1_dispatch_s, 169.8e-6);
    EXPECT_DOUBLE_EQ(xdna1_queued_s, 36.7e-6);
    EXPECT_DOUBLE_EQ(xdna1_clock_of_mode("default"), 1.80e9);
    EXPECT_DOUBLE_EQ(xdna1_clock_of_mode("turbo"), 1.80e9);
    EXPECT_DOUBLE_EQ(xdna1_clock_of_mode("balanced"), 1.03e9);
    EXPECT_DOUBLE_EQ(xdna1_clock_of_mode("powersaver"), 0.80e9);
    EXPECT_EQ(xdna1_clock_of_mode("fast"), 0.0);
}

// Where the model extrapolates (the project's blocks: 64-512 tokens by 256-1,024 rows), its shape: throughput tracks
// the tile's m, a block costs at least what its whole tiles cost, time scales with the clock, int8 beats bf16.
TEST(xdna1_timing, shape_where_no_point_pins_it) {
    xdna1_block b;
    b.M = 512; b.K = 1024; b.N = 1024;
    xdna1_tile narrow, wide;
    narrow.m = 16; narrow.k = 64; narrow.n = 64;
    wide.m = 64; wide.k = 64; wide.n = 32;
    const double tn = xdna1_block_seconds(narrow, b), tw = xdna1_block_seconds(wide, b);
    EXPECT_LT(tw, 0.85 * tn);   // m = 64 clearly faster than m = 16 on a block it fits
    EXPECT_NEAR(xdna1_block_seconds(narrow, b, xdna1_clock_balanced_hz) / tn, 1.80 / 1.03, 1e-9);
    xdna1_block padded = b;
    padded.M = 500;   // the design computes the padding's zeros too
    EXPECT_DOUBLE_EQ(xdna1_block_seconds(narrow, padded), tn);
    xdna1_block small = b;
    small.M = 64;
    const double gflops_small = 2.0 * 64 * 1024 * 1024 / xdna1_block_seconds(narrow, small) / 1e9;
    const double gflops_big = 2.0 * 512 * 1024 * 1024 / tn / 1e9;
    EXPECT_LT(gflops_small, gflops_big);   // a run's pipeline fill and drain weigh more on a small block
    xdna1_block q = b;
    q.macs = xdna1_macs::i8; q.a_bytes = q.b_bytes = 1;
    xdna1_tile q_tile;
    q_tile.m = 64; q_tile.k = 64; q_tile.n = 64;
    EXPECT_LT(xdna1_block_seconds(q_tile, q), tw);
    // a flat rate's bound: nothing is faster than the cores' peak
    const double peak = 16 * 128 * 2 * 1.80e9;
    EXPECT_GT(xdna1_block_seconds(wide, b), 2.0 * 512 * 1024 * 1024 / peak);
}
