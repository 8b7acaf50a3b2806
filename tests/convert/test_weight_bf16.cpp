// bf16 weight conversion against ggml's own dequantization rounded to bf16 by ggml, byte for byte, for every type
// ggml can dequantize, plain and repacked, 2-D and 3-D, whole and partial row ranges, on every instruction set.

#include "test_util.h"

#include <cmath>
#include <thread>

using namespace xdna_test;

namespace {

struct shape {
    int64_t K, N, E;
};

std::vector<shape> shapes() {
    std::vector<shape> v;
    for (int64_t K : { 256, 512, 2816, 4096 }) {
        for (int64_t N : { 8, 24, 64, 256 }) {
            v.push_back({ K, N, 1 });
        }
        for (int64_t N : { 8, 24, 64 }) {
            v.push_back({ K, N, 3 });  // 3 experts; N * E <= 256 rows of test data
        }
    }
    return v;
}

constexpr int64_t POOL_ROWS = 256;
constexpr int64_t PAD       = 40;  // destination columns past K, which must come out zero
const uint16_t    GUARD     = 0xBEEF;

// Converts rows [r0, r1) of expert e and compares with the reference rows of the plain data.
void check_range(const weight & w, int64_t K, int64_t N, int64_t e, int64_t r0, int64_t r1,
                 const std::vector<ggml_bf16_t> & ref) {
    SCOPED_TRACE(testing::Message() << "expert " << e << " rows [" << r0 << ", " << r1 << ")");
    const int64_t            ld = K + PAD;
    std::vector<ggml_bf16_t> out((r1 - r0) * ld + 16);
    for (auto & v : out) {
        v.bits = GUARD;
    }
    std::string err;
    ASSERT_TRUE(xdna_weight_to_bf16(w.t, e, r0, r1, out.data(), ld, &err)) << err;
    for (int64_t r = r0; r < r1; ++r) {
        const ggml_bf16_t * got  = out.data() + (r - r0) * ld;
        const ggml_bf16_t * want = ref.data() + (e * N + r) * K;
        if (std::memcmp(got, want, K * sizeof(ggml_bf16_t)) != 0) {
            int64_t c = 0;
            while (got[c].bits == want[c].bits) {
                ++c;
            }
            FAIL() << "row " << r << " column " << c << ": got 0x" << std::hex << got[c].bits << " want 0x"
                   << want[c].bits;
        }
        for (int64_t c = K; c < ld; ++c) {
            ASSERT_EQ(got[c].bits, 0) << "padding column " << c << " of row " << r;
        }
    }
    for (size_t i = (r1 - r0) * ld; i < out.size(); ++i) {
        ASSERT_EQ(out[i].bits, GUARD) << "wrote past the last row";
    }
}

void check_weight(const weight & w, ggml_type type, const shape & s) {
    const std::vector<ggml_bf16_t> ref = reference_bf16(type, w.plain.data(), s.K, s.N * s.E);
    for (int64_t e = 0; e < s.E; ++e) {
        check_range(w, s.K, s.N, e, 0, s.N, ref);
        check_range(w, s.K, s.N, e, 1, s.N - 2, ref);
        check_range(w, s.K, s.N, e, s.N - 1, s.N, ref);
        if (s.N >= 16) {
            check_range(w, s.K, s.N, e, 8, 16, ref);
        }
    }
}

using type_isa = std::tuple<ggml_type, xdna_convert_isa>;

std::string param_name(const testing::TestParamInfo<type_isa> & info) {
    return type_label(std::get<0>(info.param)) + "_" + xdna_convert_isa_name(std::get<1>(info.param));
}

class WeightBf16 : public ::testing::TestWithParam<type_isa> {};

TEST_P(WeightBf16, PlainMatchesGgml) {
    const auto [type, isa] = GetParam();
    isa_scope scope(isa);
    for (const shape & s : shapes()) {
        SCOPED_TRACE(testing::Message() << type_label(type) << " K=" << s.K << " N=" << s.N << " E=" << s.E);
        weight w;
        make_plain(w, type, s.K, s.N, s.E, quantized_rows(type, s.K, POOL_ROWS, 1));
        check_weight(w, type, s);
        if (HasFatalFailure()) {
            return;
        }
    }
}

// Random block bytes (every scale and quant pattern that dequantizes to numbers), not only what ggml's quantizer makes.
class WeightBf16Random : public ::testing::TestWithParam<type_isa> {};

TEST_P(WeightBf16Random, RandomBlocksMatchGgml) {
    const auto [type, isa] = GetParam();
    isa_scope scope(isa);
    for (const shape & s : { shape{ 2816, 24, 1 }, shape{ 512, 8, 3 } }) {
        SCOPED_TRACE(testing::Message() << type_label(type) << " K=" << s.K << " N=" << s.N << " E=" << s.E);
        weight w;
        make_plain(w, type, s.K, s.N, s.E, random_blocks(type, s.K, s.N * s.E, 21));
        check_weight(w, type, s);
        if (HasFatalFailure()) {
            return;
        }
    }
}

// A plain weight whose rows are strided (a column view of a wider weight).
TEST_P(WeightBf16, StridedPlainRows) {
    const auto [type, isa] = GetParam();
    isa_scope     scope(isa);
    const int64_t K = 512, K_wide = 1024, N = 24;
    weight        wide;
    make_plain(wide, type, K_wide, N, 1, quantized_rows(type, K_wide, POOL_ROWS, 2));
    ggml_tensor * v = ggml_view_2d(wide.ctx, wide.t, K, N, wide.t->nb[1], ggml_row_size(type, 256));
    std::string   err;
    ASSERT_TRUE(xdna_weight_convertible(v, &err)) << err;
    std::vector<ggml_bf16_t> out(N * K);
    ASSERT_TRUE(xdna_weight_to_bf16(v, 0, 0, N, out.data(), K, &err)) << err;
    for (int64_t r = 0; r < N; ++r) {
        const auto ref = reference_bf16(type, wide.plain.data() + r * wide.t->nb[1] + ggml_row_size(type, 256), K, 1);
        ASSERT_EQ(std::memcmp(out.data() + r * K, ref.data(), K * sizeof(ggml_bf16_t)), 0) << "row " << r;
    }
}

std::vector<ggml_type> block_types() {
    std::vector<ggml_type> v;
    for (ggml_type t : convertible_types()) {
        if (ggml_is_quantized(t)) {
            v.push_back(t);
        }
    }
    return v;
}

INSTANTIATE_TEST_SUITE_P(BlockTypes, WeightBf16Random,
                         ::testing::Combine(::testing::ValuesIn(block_types()), ::testing::ValuesIn(available_isas())),
                         param_name);

INSTANTIATE_TEST_SUITE_P(AllTypes, WeightBf16,
                         ::testing::Combine(::testing::ValuesIn(convertible_types()),
                                            ::testing::ValuesIn(available_isas())),
                         param_name);

class RepackedBf16 : public ::testing::TestWithParam<type_isa> {};

TEST_P(RepackedBf16, MatchesGgmlOnPlainBlocks) {
    ASSERT_NE(cpu_device(), nullptr);
    const auto [type, isa] = GetParam();
    isa_scope scope(isa);
    for (const shape & s : shapes()) {
        SCOPED_TRACE(testing::Message() << type_label(type) << " K=" << s.K << " N=" << s.N << " E=" << s.E);
        weight      w;
        std::string why;
        if (!make_repacked(w, type, s.K, s.N, s.E, quantized_rows(type, s.K, POOL_ROWS, 1), &why)) {
            GTEST_SKIP() << why;
        }
        check_weight(w, type, s);
        if (HasFatalFailure()) {
            return;
        }
    }
}

TEST_P(RepackedBf16, RandomBlocksMatchGgml) {
    ASSERT_NE(cpu_device(), nullptr);
    const auto [type, isa] = GetParam();
    isa_scope scope(isa);
    for (const shape & s : { shape{ 2816, 24, 1 }, shape{ 4096, 16, 3 } }) {
        SCOPED_TRACE(testing::Message() << type_label(type) << " K=" << s.K << " N=" << s.N << " E=" << s.E);
        weight      w;
        std::string why;
        if (!make_repacked(w, type, s.K, s.N, s.E, random_blocks(type, s.K, s.N * s.E, 22), &why)) {
            GTEST_SKIP() << why;
        }
        check_weight(w, type, s);
        if (HasFatalFailure()) {
            return;
        }
    }
}

// Several threads converting disjoint row ranges of one repacked weight give what one call gives.
TEST_P(RepackedBf16, ConcurrentRowRanges) {
    ASSERT_NE(cpu_device(), nullptr);
    const auto [type, isa] = GetParam();
    isa_scope     scope(isa);
    const int64_t K = 4096, N = 256;
    weight        w;
    std::string   why;
    if (!make_repacked(w, type, K, N, 1, quantized_rows(type, K, POOL_ROWS, 3), &why)) {
        GTEST_SKIP() << why;
    }
    std::vector<ggml_bf16_t> whole(N * K), parts(N * K);
    ASSERT_TRUE(xdna_weight_to_bf16(w.t, 0, 0, N, whole.data(), K, nullptr));
    const int64_t            bounds[] = { 0, 13, 64, 101, 200, 256 };
    std::vector<std::thread> threads;
    std::vector<int>         ok(5, 0);
    for (int i = 0; i < 5; ++i) {
        threads.emplace_back([&, i] {
            ok[i] = xdna_weight_to_bf16(w.t, 0, bounds[i], bounds[i + 1], parts.data() + bounds[i] * K, K, nullptr);
        });
    }
    for (auto & t : threads) {
        t.join();
    }
    for (int i = 0; i < 5; ++i) {
        EXPECT_TRUE(ok[i]);
    }
    EXPECT_EQ(std::memcmp(whole.data(), parts.data(), whole.size() * sizeof(ggml_bf16_t)), 0);
}

INSTANTIATE_TEST_SUITE_P(RepackTypes, RepackedBf16,
                         ::testing::Combine(::testing::ValuesIn(repack_types()),
                                            ::testing::ValuesIn(available_isas())),
                         param_name);

// F32 and F16 weights with the values that test the rounding: ties, NaN, Inf, subnormals, overflow to Inf.
TEST(WeightBf16Special, RoundingAndSpecialValues) {
    std::vector<float> v = random_floats(4096, 5);
    const uint32_t     specials[] = {
        0x7fc00000u, 0xffc00001u, 0x7f800001u, 0xff812345u, 0x7f800000u, 0xff800000u, 0x00000001u, 0x807fffffu,
        0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f807fffu, 0x7f7fffffu, 0xff7fffffu, 0x00000000u, 0x80000000u,
        0x7f7f8000u, 0x477f8000u, 0x3f80ffffu, 0x00008000u,
    };
    for (size_t i = 0; i < sizeof(specials) / 4; ++i) {
        std::memcpy(&v[i * 37 % 4096], &specials[i], 4);
    }
    for (ggml_type type : { GGML_TYPE_F32, GGML_TYPE_F16 }) {
        std::vector<uint8_t> plain(ggml_row_size(type, 4096));
        if (type == GGML_TYPE_F32) {
            std::memcpy(plain.data(), v.data(), plain.size());
        } else {
            ggml_fp32_to_fp16_row(v.data(), (ggml_fp16_t *) plain.data(), 4096);
        }
        const auto ref = reference_bf16(type, plain.data(), 1024, 4);
        for (xdna_convert_isa isa : available_isas()) {
            SCOPED_TRACE(testing::Message() << type_label(type) << " " << xdna_convert_isa_name(isa));
            isa_scope scope(isa);
            weight    w;
            make_plain(w, type, 1024, 4, 1, plain);
            std::vector<ggml_bf16_t> out(4096);
            ASSERT_TRUE(xdna_weight_to_bf16(w.t, 0, 0, 4, out.data(), 1024, nullptr));
            for (int i = 0; i < 4096; ++i) {
                ASSERT_EQ(out[i].bits, ref[i].bits) << "element " << i;
            }
        }
    }
}

// Element types allow any K: rows whose length is not a multiple of the vector width (the kernels' scalar tails).
TEST(WeightBf16Special, OddRowLengths) {
    for (ggml_type type : { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 }) {
        for (int64_t K : { 1, 7, 100, 1007, 2061 }) {
            const int64_t N = 5;
            const auto &  plain = quantized_rows(type, K, N, 9);
            const auto    ref   = reference_bf16(type, plain.data(), K, N);
            const auto    ref_f = reference_f32(type, plain.data(), K, N);
            for (xdna_convert_isa isa : available_isas()) {
                SCOPED_TRACE(testing::Message() << type_label(type) << " K=" << K << " " << xdna_convert_isa_name(isa));
                isa_scope scope(isa);
                weight    w;
                make_plain(w, type, K, N, 1, plain);
                std::vector<ggml_bf16_t> out(N * K);
                ASSERT_TRUE(xdna_weight_to_bf16(w.t, 0, 0, N, out.data(), K, nullptr));
                ASSERT_EQ(std::memcmp(out.data(), ref.data(), out.size() * sizeof(ggml_bf16_t)), 0);
                std::vector<int8_t> q(N * K);
                std::vector<float>  sc(N * xdna_w8_groups(K));
                ASSERT_TRUE(xdna_weight_to_int8(w.t, 0, 0, N, q.data(), K, sc.data(), xdna_w8_groups(K), nullptr));
                for (int64_t r = 0; r < N; ++r) {
                    for (int64_t c = 0; c < K; ++c) {
                        const float s = sc[r * xdna_w8_groups(K) + c / XDNA_W8_GROUP];
                        ASSERT_LE(std::fabs(q[r * K + c] * s - ref_f[r * K + c]), 0.5001 * s) << r << "," << c;
                    }
                }
            }
        }
    }
}

}  // namespace
