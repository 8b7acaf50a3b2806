// Activation conversion: f32 rows (strided, as ggml's src1) to bf16 (against ggml's own rounding, byte for byte) and
// to int8 with one scale per row (within the rounding bound), on every instruction set.

#include "test_util.h"

#include <cfloat>
#include <cmath>

using namespace xdna_test;

namespace {

std::vector<float> activations(int64_t rows, int64_t stride, uint64_t seed) {
    std::vector<float> v = random_floats(rows * stride, seed, 3.0f);
    const uint32_t     specials[] = { 0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7f800000u, 0xff800000u, 0x00000001u,
                                      0x807fffffu, 0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0x80000000u, 0x3f80ffffu };
    if (rows * stride > 64) {
        for (size_t i = 0; i < sizeof(specials) / 4; ++i) {
            std::memcpy(&v[(i * 53) % (rows * stride)], &specials[i], 4);
        }
    }
    return v;
}

class ActBf16 : public ::testing::TestWithParam<xdna_convert_isa> {};

TEST_P(ActBf16, MatchesGgmlRounding) {
    isa_scope scope(GetParam());
    for (int64_t k : { 1, 7, 15, 16, 17, 31, 32, 33, 100, 1000, 2816, 4096, 4099 }) {
        for (int64_t extra : { 0, 3 }) {
            const int64_t rows = 5, stride = k + extra, ld = k + (extra ? 29 : 0);
            SCOPED_TRACE(testing::Message() << "k=" << k << " src stride=" << stride << " ld=" << ld);
            const std::vector<float> x = activations(rows, stride, k * 31 + extra);
            std::vector<ggml_bf16_t> out(rows * ld + 8);
            for (auto & b : out) {
                b.bits = 0xBEEF;
            }
            xdna_act_to_bf16(x.data(), stride * sizeof(float), rows, k, out.data(), ld);
            for (int64_t r = 0; r < rows; ++r) {
                std::vector<ggml_bf16_t> ref(k);
                ggml_fp32_to_bf16_row_ref(x.data() + r * stride, ref.data(), k);
                for (int64_t c = 0; c < k; ++c) {
                    ASSERT_EQ(out[r * ld + c].bits, ref[c].bits) << "row " << r << " column " << c;
                }
                for (int64_t c = k; c < ld; ++c) {
                    ASSERT_EQ(out[r * ld + c].bits, 0) << "padding column " << c;
                }
            }
            for (size_t i = rows * ld; i < out.size(); ++i) {
                ASSERT_EQ(out[i].bits, 0xBEEF) << "wrote past the last row";
            }
        }
    }
}

class ActInt8 : public ::testing::TestWithParam<xdna_convert_isa> {};

TEST_P(ActInt8, WithinRoundingBound) {
    isa_scope scope(GetParam());
    for (int64_t k : { 1, 15, 16, 17, 33, 100, 1000, 2816, 4096, 4099 }) {
        const int64_t rows = 6, stride = k + 5, ld = k + 11;
        SCOPED_TRACE(testing::Message() << "k=" << k);
        std::vector<float> x = random_floats(rows * stride, k, 2.0f);
        std::fill(x.begin() + 2 * stride, x.begin() + 2 * stride + k, 0.0f);  // row 2 all zero
        std::vector<int8_t> q(rows * ld, 0x5A);
        std::vector<float>  s(rows, -1.0f);
        ASSERT_TRUE(xdna_act_to_int8(x.data(), stride * sizeof(float), rows, k, q.data(), ld, s.data()));
        std::vector<int8_t> q_generic(rows * ld);
        std::vector<float>  s_generic(rows);
        {
            isa_scope generic(XDNA_CONVERT_GENERIC);
            ASSERT_TRUE(xdna_act_to_int8(x.data(), stride * sizeof(float), rows, k, q_generic.data(), ld,
                                         s_generic.data()));
        }
        xdna_convert_isa_set(GetParam());
        EXPECT_EQ(q, q_generic) << "differs from the generic path";
        for (int64_t r = 0; r < rows; ++r) {
            float absmax = 0.0f;
            for (int64_t c = 0; c < k; ++c) {
                absmax = std::max(absmax, std::fabs(x[r * stride + c]));
            }
            ASSERT_EQ(s[r], absmax / 127.0f);
            ASSERT_EQ(s[r], s_generic[r]);
            for (int64_t c = 0; c < k; ++c) {
                const int q_rc = q[r * ld + c];
                ASSERT_LE(std::abs(q_rc), 127);
                ASSERT_LE(std::fabs((double) q_rc * s[r] - x[r * stride + c]), (0.5 + 127.0 * 4 * FLT_EPSILON) * s[r])
                    << "row " << r << " column " << c;
            }
            for (int64_t c = k; c < ld; ++c) {
                ASSERT_EQ(q[r * ld + c], 0);
            }
        }
    }
}

TEST_P(ActInt8, NonFiniteRowIsReported) {
    isa_scope          scope(GetParam());
    const int64_t      k = 300, rows = 3;
    std::vector<float> x = random_floats(rows * k, 4);
    x[k + 17]            = NAN;
    std::vector<int8_t> q(rows * k, 9);
    std::vector<float>  s(rows, -1.0f);
    EXPECT_FALSE(xdna_act_to_int8(x.data(), k * sizeof(float), rows, k, q.data(), k, s.data()));
    EXPECT_EQ(s[1], 0.0f);
    for (int64_t c = 0; c < k; ++c) {
        ASSERT_EQ(q[k + c], 0);
    }
    EXPECT_GT(s[0], 0.0f);
    EXPECT_GT(s[2], 0.0f);
}

// Gathered rows (the tokens of one expert) give exactly what the strided form gives for the same rows.
TEST_P(ActInt8, GatheredRowsMatchStrided) {
    isa_scope          scope(GetParam());
    const int64_t      k = 2816, n_src = 40, ld = 3072;
    std::vector<float> x = random_floats(n_src * k, 12, 2.0f);
    const int64_t      pick[] = { 3, 17, 4, 39, 0, 21, 21 };
    const int64_t      n      = 7;
    std::vector<const float *> rows;
    for (int64_t p : pick) {
        rows.push_back(x.data() + p * k);
    }
    std::vector<ggml_bf16_t> g_bf16(n * ld), s_bf16(ld);
    std::vector<int8_t>      g_i8(n * ld), s_i8(ld);
    std::vector<float>       g_sc(n), s_sc(1);
    xdna_act_rows_to_bf16(rows.data(), n, k, g_bf16.data(), ld);
    ASSERT_TRUE(xdna_act_rows_to_int8(rows.data(), n, k, g_i8.data(), ld, g_sc.data()));
    for (int64_t i = 0; i < n; ++i) {
        xdna_act_to_bf16(rows[i], k * sizeof(float), 1, k, s_bf16.data(), ld);
        ASSERT_TRUE(xdna_act_to_int8(rows[i], k * sizeof(float), 1, k, s_i8.data(), ld, s_sc.data()));
        ASSERT_EQ(std::memcmp(g_bf16.data() + i * ld, s_bf16.data(), ld * sizeof(ggml_bf16_t)), 0) << "row " << i;
        ASSERT_EQ(std::memcmp(g_i8.data() + i * ld, s_i8.data(), ld), 0) << "row " << i;
        ASSERT_EQ(g_sc[i], s_sc[0]);
    }
}

std::string isa_name(const testing::TestParamInfo<xdna_convert_isa> & info) {
    return xdna_convert_isa_name(info.param);
}

INSTANTIATE_TEST_SUITE_P(Isa, ActBf16, ::testing::ValuesIn(available_isas()), isa_name);
INSTANTIATE_TEST_SUITE_P(Isa, ActInt8, ::testing::ValuesIn(available_isas()), isa_name);

}  // namespace
