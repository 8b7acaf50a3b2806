// int8 weight conversion (GGML_XDNA_NPU_W8=1): one scale per row and 1,024 weights, every value within the int8
// rounding bound of ggml's own dequantization; the same bytes on every instruction set and from repacked weights.

#include "test_util.h"

#include <cfloat>
#include <cmath>

using namespace xdna_test;

namespace {

struct shape {
    int64_t K, N, E;
};

const shape k_shapes[] = {
    { 256, 8, 1 }, { 2816, 24, 1 }, { 4096, 64, 1 }, { 512, 24, 3 }, { 2816, 8, 3 }, { 3072, 16, 2 },
};

struct int8_out {
    std::vector<int8_t> q;
    std::vector<float>  s;
};

int8_out convert(const weight & w, int64_t N, int64_t E, int64_t ld, int64_t ld_s) {
    int8_out o;
    o.q.assign(N * E * ld, 0x5A);
    o.s.assign(N * E * ld_s, -1.0f);
    for (int64_t e = 0; e < E; ++e) {
        std::string err;
        EXPECT_TRUE(xdna_weight_to_int8(w.t, e, 0, N, o.q.data() + e * N * ld, ld, o.s.data() + e * N * ld_s, ld_s,
                                        &err))
            << err;
    }
    return o;
}

// Every group: scale = absmax / 127 of ggml's dequantized values, |q| <= 127, |q * scale - x| <= scale / 2.
void check_bound(const int8_out & o, const std::vector<float> & ref, int64_t K, int64_t rows, int64_t ld,
                 int64_t ld_s) {
    const int64_t n_groups = xdna_w8_groups(K);
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t g = 0; g < n_groups; ++g) {
            const int64_t c0 = g * XDNA_W8_GROUP, c1 = std::min(K, c0 + XDNA_W8_GROUP);
            float         absmax = 0.0f;
            for (int64_t c = c0; c < c1; ++c) {
                absmax = std::max(absmax, std::fabs(ref[r * K + c]));
            }
            const float scale = o.s[r * ld_s + g];
            ASSERT_EQ(scale, absmax / 127.0f) << "row " << r << " group " << g;
            // x * (1 / scale) is itself rounded: allow a few float ulps of 127 on top of half a step
            const double bound = (0.5 + 127.0 * 4 * FLT_EPSILON) * scale;
            for (int64_t c = c0; c < c1; ++c) {
                const int q = o.q[r * ld + c];
                ASSERT_LE(std::abs(q), 127);
                ASSERT_LE(std::fabs((double) q * scale - ref[r * K + c]), bound)
                    << "row " << r << " column " << c << " q " << q << " scale " << scale;
            }
        }
        for (int64_t c = K; c < ld; ++c) {
            ASSERT_EQ(o.q[r * ld + c], 0) << "padding column " << c;
        }
        for (int64_t g = n_groups; g < ld_s; ++g) {
            ASSERT_EQ(o.s[r * ld_s + g], -1.0f) << "scale written past the row's groups";
        }
    }
}

class WeightInt8 : public ::testing::TestWithParam<ggml_type> {};

TEST_P(WeightInt8, WithinRoundingBoundOnEveryIsa) {
    const ggml_type type = GetParam();
    for (const shape & s : k_shapes) {
        SCOPED_TRACE(testing::Message() << type_label(type) << " K=" << s.K << " N=" << s.N << " E=" << s.E);
        weight w;
        make_plain(w, type, s.K, s.N, s.E, quantized_rows(type, s.K, 96, 11));
        const std::vector<float> ref  = reference_f32(type, w.plain.data(), s.K, s.N * s.E);
        const int64_t            ld   = s.K + 24;
        const int64_t            ld_s = xdna_w8_groups(s.K) + 1;
        int8_out                 first;
        for (xdna_convert_isa isa : available_isas()) {
            SCOPED_TRACE(xdna_convert_isa_name(isa));
            isa_scope scope(isa);
            int8_out  o = convert(w, s.N, s.E, ld, ld_s);
            check_bound(o, ref, s.K, s.N * s.E, ld, ld_s);
            if (HasFatalFailure()) {
                return;
            }
            if (isa == XDNA_CONVERT_GENERIC) {
                first = std::move(o);
            } else {
                ASSERT_EQ(o.q, first.q) << "int8 differs from the generic path";
                ASSERT_EQ(std::memcmp(o.s.data(), first.s.data(), o.s.size() * 4), 0);
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, WeightInt8, ::testing::ValuesIn(convertible_types()),
                         [](const auto & p) { return type_label(p.param); });

class RepackedInt8 : public ::testing::TestWithParam<ggml_type> {};

// A repacked weight gives the same int8 bytes and scales as the same weight in plain layout.
TEST_P(RepackedInt8, SameAsPlain) {
    ASSERT_NE(cpu_device(), nullptr);
    const ggml_type type = GetParam();
    for (const shape & s : k_shapes) {
        SCOPED_TRACE(testing::Message() << type_label(type) << " K=" << s.K << " N=" << s.N << " E=" << s.E);
        weight      rp, pl;
        std::string why;
        if (!make_repacked(rp, type, s.K, s.N, s.E, quantized_rows(type, s.K, 96, 11), &why)) {
            GTEST_SKIP() << why;
        }
        make_plain(pl, type, s.K, s.N, s.E, quantized_rows(type, s.K, 96, 11));
        const int64_t ld = s.K, ld_s = xdna_w8_groups(s.K);
        for (xdna_convert_isa isa : available_isas()) {
            isa_scope scope(isa);
            int8_out  a = convert(rp, s.N, s.E, ld, ld_s);
            int8_out  b = convert(pl, s.N, s.E, ld, ld_s);
            ASSERT_EQ(a.q, b.q) << xdna_convert_isa_name(isa);
            ASSERT_EQ(std::memcmp(a.s.data(), b.s.data(), a.s.size() * 4), 0) << xdna_convert_isa_name(isa);
        }
        // and a row range that starts inside an 8-row group
        std::vector<int8_t> q(5 * s.K);
        std::vector<float>  sc(5 * ld_s);
        ASSERT_TRUE(xdna_weight_to_int8(rp.t, s.E - 1, 3, 8, q.data(), s.K, sc.data(), ld_s, nullptr));
        int8_out b = convert(pl, s.N, s.E, ld, ld_s);
        ASSERT_EQ(std::memcmp(q.data(), b.q.data() + ((s.E - 1) * s.N + 3) * s.K, q.size()), 0);
    }
}

INSTANTIATE_TEST_SUITE_P(RepackTypes, RepackedInt8, ::testing::ValuesIn(repack_types()),
                         [](const auto & p) { return type_label(p.param); });

TEST(WeightInt8Special, ZeroGroupAndNonFinite) {
    const int64_t      K = 2048, N = 2;
    std::vector<float> v = random_floats(K * N, 3);
    std::fill(v.begin() + 1024, v.begin() + 2048, 0.0f);  // row 0, group 1: all zero
    weight w;
    make_plain(w, GGML_TYPE_F32, K, N, 1,
               std::vector<uint8_t>((const uint8_t *) v.data(), (const uint8_t *) (v.data() + v.size())));
    std::vector<int8_t> q(K * N, 1);
    std::vector<float>  s(2 * N, -1.0f);
    std::string         err;
    ASSERT_TRUE(xdna_weight_to_int8(w.t, 0, 0, N, q.data(), K, s.data(), 2, &err)) << err;
    EXPECT_EQ(s[1], 0.0f);
    for (int64_t c = 1024; c < 2048; ++c) {
        ASSERT_EQ(q[c], 0);
    }
    ((float *) w.t->data)[K + 5] = NAN;
    EXPECT_FALSE(xdna_weight_to_int8(w.t, 0, 0, N, q.data(), K, s.data(), 2, &err));
    EXPECT_NE(err.find("row 1"), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos);
    ((float *) w.t->data)[K + 5] = INFINITY;
    EXPECT_FALSE(xdna_weight_to_int8(w.t, 0, 1, 2, q.data(), K, s.data(), 2, &err));
    EXPECT_TRUE(xdna_weight_to_int8(w.t, 0, 0, 1, q.data(), K, s.data(), 2, &err)) << "row 0 is finite: " << err;
}

}  // namespace
