// The emulated NPU's arithmetic against a plain scalar implementation of the same model: bf16 products summed
// exactly in groups of 8 along k, each group added to the fp32 accumulator with one rounding; int8 sums exact
// with int32 wrap-around.
#include "emu_matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace xdna_emu;

namespace {

std::vector<uint16_t> random_bf16(size_t n, unsigned seed, float scale) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<uint16_t> v(n);
    for (auto& x : v) x = f32_to_bf16(dist(rng));
    return v;
}

// The model written the obvious way, one output at a time (long double holds a group sum exactly).
float model_bf16(const uint16_t* a, const uint16_t* b, uint32_t k) {
    float acc = 0.0f;
    for (uint32_t k0 = 0; k0 < k; k0 += 8) {
        long double s = acc;
        for (uint32_t kk = k0; kk < std::min(k, k0 + 8); ++kk) {
            s += static_cast<long double>(bf16_to_f32(a[kk])) * bf16_to_f32(b[kk]);
        }
        acc = static_cast<float>(static_cast<double>(s));
    }
    return acc;
}

} // namespace

TEST(EmuMatmul, Bf16ToF32RoundsToNearestEven) {
    EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
    float f;
    uint32_t u = 0x3F808000u;   // exactly half-way between 0x3F80 and 0x3F81: ties to even
    std::memcpy(&f, &u, 4);
    EXPECT_EQ(f32_to_bf16(f), 0x3F80);
    u = 0x3F818000u;            // half-way between 0x3F81 and 0x3F82: ties to even
    std::memcpy(&f, &u, 4);
    EXPECT_EQ(f32_to_bf16(f), 0x3F82);
    u = 0x3F808001u;
    std::memcpy(&f, &u, 4);
    EXPECT_EQ(f32_to_bf16(f), 0x3F81);
    EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(EmuMatmul, Bf16MatchesTheModelBitForBit) {
    // Odd sizes exercise the tile and panel edges; k not a multiple of 8 ends with a short group.
    const uint32_t m = 13, n = 70, k = 203;
    const auto a = random_bf16(size_t(m) * k, 1, 1.0f);
    // Weights of very different magnitudes make the group rounding visible.
    auto b = random_bf16(size_t(n) * k, 2, 1.0f);
    for (size_t i = 0; i < b.size(); i += 7) b[i] = f32_to_bf16(bf16_to_f32(b[i]) * 4096.0f);
    std::vector<float> c(size_t(m) * n, -1.0f);
    gemm_compute({dtype::bf16, dtype::bf16, dtype::f32, a.data(), b.data(), c.data(), m, n, k, 1});
    int sequential_differs = 0;
    for (uint32_t i = 0; i < m; ++i) {
        for (uint32_t j = 0; j < n; ++j) {
            const float want = model_bf16(&a[size_t(i) * k], &b[size_t(j) * k], k);
            ASSERT_EQ(c[size_t(i) * n + j], want) << i << "," << j;
            float seq = 0.0f;
            for (uint32_t kk = 0; kk < k; ++kk) seq += bf16_to_f32(a[size_t(i) * k + kk]) * bf16_to_f32(b[size_t(j) * k + kk]);
            sequential_differs += seq != want;
        }
    }
    // The grouped model is not a plain fp32 loop: most outputs differ from one in the last bits.
    EXPECT_GT(sequential_differs, static_cast<int>(m * n) / 4);
}

TEST(EmuMatmul, Int8IsExactAndWraps) {
    const uint32_t m = 8, n = 40, k = 64;
    std::vector<int8_t> a(size_t(m) * k), b(size_t(n) * k);
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> d(-128, 127);
    for (auto& x : a) x = static_cast<int8_t>(d(rng));
    for (auto& x : b) x = static_cast<int8_t>(d(rng));
    std::vector<int32_t> c(size_t(m) * n);
    gemm_compute({dtype::i8, dtype::i8, dtype::i32, a.data(), b.data(), c.data(), m, n, k, 1});
    for (uint32_t i = 0; i < m; ++i)
        for (uint32_t j = 0; j < n; ++j) {
            int64_t s = 0;
            for (uint32_t kk = 0; kk < k; ++kk) s += int64_t(a[size_t(i) * k + kk]) * b[size_t(j) * k + kk];
            ASSERT_EQ(c[size_t(i) * n + j], static_cast<int32_t>(s));
        }
    // 2^18 products of (-128)^2 = 2^14 sum to 2^32, which the int32 accumulator wraps to 0.
    const uint32_t kw = 1u << 18;
    std::vector<int8_t> aw(kw, -128), bw(kw, -128);
    int32_t cw = 123;
    gemm_compute({dtype::i8, dtype::i8, dtype::i32, aw.data(), bw.data(), &cw, 1, 1, kw, 1});
    EXPECT_EQ(cw, 0);
}

TEST(EmuMatmul, MixedInt8WeightsWithBf16Activations) {
    const uint32_t m = 4, n = 32, k = 48;
    const auto a = random_bf16(size_t(m) * k, 4, 1.0f);
    std::vector<int8_t> b(size_t(n) * k);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<int8_t>(int(i * 7) % 255 - 127);
    std::vector<float> c(size_t(m) * n);
    gemm_compute({dtype::bf16, dtype::i8, dtype::f32, a.data(), b.data(), c.data(), m, n, k, 1});
    for (uint32_t i = 0; i < m; ++i)
        for (uint32_t j = 0; j < n; ++j) {
            std::vector<uint16_t> bj(k);
            for (uint32_t kk = 0; kk < k; ++kk) bj[kk] = f32_to_bf16(static_cast<float>(b[size_t(j) * k + kk]));
            ASSERT_EQ(c[size_t(i) * n + j], model_bf16(&a[size_t(i) * k], bj.data(), k));
        }
}

TEST(EmuMatmul, ThreadsGiveIdenticalResults) {
    const uint32_t m = 64, n = 256, k = 256;
    const auto a = random_bf16(size_t(m) * k, 5, 1.0f);
    const auto b = random_bf16(size_t(n) * k, 6, 1.0f);
    std::vector<float> c1(size_t(m) * n), c3(size_t(m) * n);
    gemm_compute({dtype::bf16, dtype::bf16, dtype::f32, a.data(), b.data(), c1.data(), m, n, k, 1});
    gemm_compute({dtype::bf16, dtype::bf16, dtype::f32, a.data(), b.data(), c3.data(), m, n, k, 3});
    EXPECT_EQ(0, std::memcmp(c1.data(), c3.data(), c1.size() * sizeof(float)));
}

TEST(EmuMatmul, NanPropagates) {
    const uint32_t m = 4, n = 32, k = 16;
    auto a = random_bf16(size_t(m) * k, 7, 1.0f);
    const auto b = random_bf16(size_t(n) * k, 8, 1.0f);
    a[5] = f32_to_bf16(std::numeric_limits<float>::quiet_NaN());   // row 0
    std::vector<float> c(size_t(m) * n);
    gemm_compute({dtype::bf16, dtype::bf16, dtype::f32, a.data(), b.data(), c.data(), m, n, k, 1});
    for (uint32_t j = 0; j < n; ++j) EXPECT_TRUE(std::isnan(c[j]));
    for (uint32_t j = 0; j < n; ++j) EXPECT_FALSE(std::isnan(c[n + j]));
}

namespace {

// The silicon-like group addition (XDNA_EMU_ACCUM=aligned) written independently with integers: each of the 9
// terms is split into a 53-bit integer mantissa and an exponent, shifted right to the grid 2^(e - 23) of the largest
// term with round to nearest even done by hand, the integers summed, the sum rounded once to fp32.
float model_bf16_aligned(const uint16_t* a, const uint16_t* b, uint32_t k) {
    float acc = 0.0f;
    for (uint32_t k0 = 0; k0 < k; k0 += 8) {
        std::vector<double> t{acc};
        for (uint32_t kk = k0; kk < std::min(k, k0 + 8); ++kk) {
            t.push_back(static_cast<double>(bf16_to_f32(a[kk])) * bf16_to_f32(b[kk]));
        }
        int e_max = std::numeric_limits<int>::min();
        for (double x : t) {
            if (x != 0.0) {
                int ex;
                std::frexp(x, &ex);   // |x| in [2^(ex-1), 2^ex)
                e_max = std::max(e_max, ex - 1);
            }
        }
        if (e_max == std::numeric_limits<int>::min()) {
            acc = 0.0f;
            continue;
        }
        int64_t sum = 0;
        for (double x : t) {
            if (x == 0.0) continue;
            int ex;
            const double m = std::frexp(std::fabs(x), &ex);
            const int64_t mant = static_cast<int64_t>(std::ldexp(m, 53));   // |x| = mant * 2^(ex - 53)
            const int shift = (53 - ex) + (e_max - 23);                       // to units of 2^(e_max - 23)
            int64_t q;
            if (shift <= 0) {
                q = mant << -shift;
            } else if (shift >= 62) {
                q = 0;
            } else {
                q = mant >> shift;
                const int64_t rem = mant & ((int64_t(1) << shift) - 1), half = int64_t(1) << (shift - 1);
                if (rem > half || (rem == half && (q & 1))) ++q;
            }
            sum += x < 0 ? -q : q;
        }
        acc = static_cast<float>(std::ldexp(static_cast<double>(sum), e_max - 23));
    }
    return acc;
}

} // namespace

TEST(EmuMatmul, AlignedAccumulationMatchesItsModelBitForBit) {
    const uint32_t m = 9, n = 37, k = 203;
    const auto a = random_bf16(size_t(m) * k, 11, 1.0f);
    auto b = random_bf16(size_t(n) * k, 12, 1.0f);
    // Terms of very different sizes in one group: the small ones lose bits on the shift.
    for (size_t i = 0; i < b.size(); i += 5) b[i] = f32_to_bf16(bf16_to_f32(b[i]) * 65536.0f);
    std::vector<float> aligned(size_t(m) * n, -1.0f), exact(size_t(m) * n, -1.0f);
    gemm_args g{dtype::bf16, dtype::bf16, dtype::f32, a.data(), b.data(), aligned.data(), m, n, k, 2};
    g.aligned = true;
    gemm_compute(g);
    gemm_compute({dtype::bf16, dtype::bf16, dtype::f32, a.data(), b.data(), exact.data(), m, n, k, 1});
    int differs = 0;
    for (uint32_t i = 0; i < m; ++i) {
        for (uint32_t j = 0; j < n; ++j) {
            const float want = model_bf16_aligned(&a[size_t(i) * k], &b[size_t(j) * k], k);
            ASSERT_EQ(aligned[size_t(i) * n + j], want) << i << "," << j;
            differs += aligned[size_t(i) * n + j] != exact[size_t(i) * n + j];
            // Both stay close to each other: within a few fp32 rounding steps of the terms' magnitudes (the
            // results themselves can be much smaller, by cancellation).
            double l1 = 0;
            for (uint32_t kk = 0; kk < k; ++kk) {
                l1 += std::fabs(double(bf16_to_f32(a[size_t(i) * k + kk])) * bf16_to_f32(b[size_t(j) * k + kk]));
            }
            EXPECT_NEAR(aligned[size_t(i) * n + j], exact[size_t(i) * n + j], 1e-5 * l1);
        }
    }
    // The alignment changes the result of many outputs (it is not the exact model under another name).
    EXPECT_GT(differs, static_cast<int>(m * n) / 4);
    // int8 is unaffected by the setting.
    std::vector<int8_t> ai(64, 3), bi(64 * 32, -5);
    std::vector<int32_t> ci(32);
    gemm_args gi{dtype::i8, dtype::i8, dtype::i32, ai.data(), bi.data(), ci.data(), 1, 32, 64, 1};
    gi.aligned = true;
    gemm_compute(gi);
    for (int32_t x : ci) EXPECT_EQ(x, 64 * -15);
}
