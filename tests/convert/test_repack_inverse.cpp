// The inverse of the CPU's repacked layouts: the CPU backend repacks (in set_tensor), this library converts back,
// and the recovered plain blocks must be byte-identical to the ones that were set.

#include "test_util.h"

#include <atomic>
#include <thread>

using namespace xdna_test;

namespace {

struct shape {
    int64_t K, N, E;
};

std::vector<shape> inverse_shapes() {
    std::vector<shape> v;
    for (int64_t K : { 256, 512, 2816, 4096 }) {
        for (int64_t N : { 8, 24, 64, 256 }) {
            v.push_back({ K, N, 1 });
            v.push_back({ K, N, 3 });
        }
    }
    return v;
}

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
    std::mt19937_64      rng(seed);
    std::vector<uint8_t> v(n);
    for (auto & b : v) {
        b = (uint8_t) rng();
    }
    return v;
}

class RepackInverse : public ::testing::TestWithParam<ggml_type> {};

// Any bytes: the repack is a byte permutation, so its inverse must give back every bit, valid block or not.
TEST_P(RepackInverse, RandomBytesByteIdentical) {
    ASSERT_NE(cpu_device(), nullptr) << "the CPU backend did not load";
    const ggml_type type = GetParam();
    int             n_checked = 0;
    for (const shape & s : inverse_shapes()) {
        SCOPED_TRACE(testing::Message() << type_label(type) << " K=" << s.K << " N=" << s.N << " E=" << s.E);
        const size_t nbytes = ggml_row_size(type, s.K) * s.N * s.E;
        weight       w;
        std::string  why;
        if (!make_repacked(w, type, s.K, s.N, s.E, random_bytes(nbytes, 1000 + s.K * 7 + s.N * 3 + s.E), &why)) {
            GTEST_SKIP() << why;
        }
        // the CPU really changed the bytes (otherwise this test would prove nothing)
        ASSERT_NE(std::memcmp(w.t->data, w.plain.data(), nbytes), 0);

        const size_t         row_bytes = ggml_row_size(type, s.K);
        std::vector<uint8_t> back(nbytes, 0xCD);
        for (int64_t e = 0; e < s.E; ++e) {
            std::string err;
            ASSERT_TRUE(xdna_weight_plain_rows(w.t, e, 0, s.N, back.data() + e * s.N * row_bytes, row_bytes, &err))
                << err;
        }
        ASSERT_EQ(std::memcmp(back.data(), w.plain.data(), nbytes), 0);
        ++n_checked;
    }
    EXPECT_EQ(n_checked, (int) inverse_shapes().size());
}

// The layout-only inverse of whole 8-row groups, applied to the repacked tensor's bytes.
TEST_P(RepackInverse, GroupInverseOnQuantizedData) {
    ASSERT_NE(cpu_device(), nullptr);
    const ggml_type type = GetParam();
    for (int64_t K : { 256, 4096 }) {
        const int64_t N = 64;
        SCOPED_TRACE(testing::Message() << type_label(type) << " K=" << K);
        weight      w;
        std::string why;
        if (!make_repacked(w, type, K, N, 1, quantized_rows(type, K, N, 7), &why)) {
            GTEST_SKIP() << why;
        }
        const size_t         group_bytes = ggml_row_size(type, K) * 8;
        std::vector<uint8_t> back(group_bytes * (N / 8));
        for (int64_t g = 0; g < N / 8; ++g) {
            ASSERT_TRUE(xdna_unrepack_group(type, (const char *) w.t->data + g * group_bytes,
                                            K / ggml_blck_size(type), back.data() + g * group_bytes));
        }
        ASSERT_EQ(std::memcmp(back.data(), w.plain.data(), back.size()), 0);
    }
}

// Single rows and unaligned row ranges come out of their 8-row group exactly as well.
TEST_P(RepackInverse, UnalignedRowRanges) {
    ASSERT_NE(cpu_device(), nullptr);
    const ggml_type type = GetParam();
    const int64_t   K = 2816, N = 24, E = 3;
    weight          w;
    std::string     why;
    if (!make_repacked(w, type, K, N, E, random_bytes(ggml_row_size(type, K) * N * E, 99), &why)) {
        GTEST_SKIP() << why;
    }
    const size_t row_bytes = ggml_row_size(type, K);
    for (int64_t e = 0; e < E; ++e) {
        for (auto [r0, r1] : { std::pair<int64_t, int64_t>{ 0, 1 }, { 3, 5 }, { 7, 9 }, { 5, 23 }, { 23, 24 } }) {
            SCOPED_TRACE(testing::Message() << "expert " << e << " rows [" << r0 << ", " << r1 << ")");
            std::vector<uint8_t> back((r1 - r0) * row_bytes + 64, 0xEE);
            std::string          err;
            ASSERT_TRUE(xdna_weight_plain_rows(w.t, e, r0, r1, back.data(), row_bytes, &err)) << err;
            ASSERT_EQ(std::memcmp(back.data(), w.plain.data() + (e * N + r0) * row_bytes, (r1 - r0) * row_bytes), 0);
            for (size_t i = (r1 - r0) * row_bytes; i < back.size(); ++i) {
                ASSERT_EQ(back[i], 0xEE) << "wrote past the last row";
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Types, RepackInverse, ::testing::ValuesIn(repack_types()),
                         [](const auto & p) { return type_label(p.param); });

// Every type the CPU repacks here is verified by the probe, and the probe agrees with what a fresh tensor gets.
TEST(RepackProbe, AgreesWithTheCpuBackend) {
    ASSERT_NE(cpu_device(), nullptr);
    const xdna_repack_probe_result & p = xdna_repack_probe();
    ASSERT_TRUE(p.cpu_found) << p.note;
    ASSERT_NE(p.buft, nullptr) << p.note;
    int n_repacked = 0;
    for (const auto & info : p.types) {
        SCOPED_TRACE(type_label(info.type));
        weight      w;
        std::string why;
        const bool  repacked_now = make_repacked(w, info.type, 512, 32, 1,
                                                 std::vector<uint8_t>(ggml_row_size(info.type, 512) * 32), &why);
        EXPECT_EQ(info.repacked, repacked_now) << why;
        if (info.repacked) {
            EXPECT_TRUE(info.verified) << info.note;
            EXPECT_EQ(info.extra, w.t->extra);
            std::string err;
            EXPECT_TRUE(xdna_weight_convertible(w.t, &err)) << err;
            ++n_repacked;
        } else {
            printf("[ INFO     ] %s is not repacked by this CPU backend: %s\n", ggml_type_name(info.type),
                   info.note.c_str());
        }
        EXPECT_EQ(xdna_repack_info(info.type), &info);
    }
    printf("[ INFO     ] this CPU backend repacks %d of the 5 x86 layouts\n", n_repacked);
    EXPECT_EQ(xdna_repack_info(GGML_TYPE_Q8_0), nullptr);
}

TEST(RepackProbe, ConcurrentFirstCallsAgree) {
    ASSERT_NE(cpu_device(), nullptr);
    std::vector<std::thread>                        threads;
    std::vector<const xdna_repack_probe_result *>   seen(8, nullptr);
    for (int i = 0; i < 8; ++i) {
        threads.emplace_back([&seen, i] { seen[i] = &xdna_repack_probe(); });
    }
    for (auto & t : threads) {
        t.join();
    }
    for (int i = 1; i < 8; ++i) {
        EXPECT_EQ(seen[i], seen[0]);
    }
}

// A tensor with ne1 % 8 != 0 gets no layout from the CPU (it stays plain in spirit but can hold no data there):
// it must be refused rather than read as interleaved bytes.
TEST(RepackProbe, TensorWithoutLayoutIsRefused) {
    ASSERT_NE(cpu_device(), nullptr);
    const auto & p = xdna_repack_probe();
    ASSERT_NE(p.buft, nullptr);
    ggml_init_params ip  = { ggml_tensor_overhead(), nullptr, true };
    ggml_context *   ctx = ggml_init(ip);
    ggml_tensor *    t   = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, 256, 12);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, p.buft);
    ASSERT_NE(buf, nullptr);
    ASSERT_EQ(t->extra, nullptr);
    std::string why;
    EXPECT_FALSE(xdna_weight_convertible(t, &why));
    EXPECT_NE(why.find("without a repacked layout"), std::string::npos) << why;
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

}  // namespace
