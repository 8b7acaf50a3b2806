// Weights in the CPU backend's repacked layout (CPU_REPACK, x86's default for Q4_0, Q4_K, IQ4_NL, MXFP4) on the GPU
// worker: its device copy is the weight's plain ggml blocks byte for byte (the bytes quantized before the CPU repacked
// them), and rows computed from it at fixed row ranges match the CPU backend computing the repacked weight.
#include "gpu_fixture.h"
#include "convert/xdna_convert.h"
#include "workers/gpu/gpu_worker.h"
#include "workers/gpu/weight_cache.h"

#include <gtest/gtest.h>

using namespace xdna_test;

namespace {

struct repacked_case {
    mm_case mm;
};

void PrintTo(const repacked_case & c, std::ostream * os) { *os << name_of(c.mm); }

// The plain blocks the test quantized, before the CPU backend repacked them on the way into its buffer.
std::vector<uint8_t> plain_bytes(const mm_tensors & mm) {
    const ggml_tensor * w = ggml_get_first_tensor(mm.wctx);
    std::vector<uint8_t> bytes(ggml_nbytes(w));
    ggml_quantize_chunk(w->type, mm.wf.data(), bytes.data(), 0, ggml_nrows(w), w->ne[0], nullptr);
    return bytes;
}

// Skips unless the weight of `mm` really is in the repacked layout and the inverse was verified for its type.
#define REQUIRE_REPACKED(mm)                                                                                   \
    do {                                                                                                       \
        if (!env().gpu_dev) FAIL() << env().error;                                                             \
        if (!env().repack_buft) GTEST_SKIP() << "this CPU backend has no CPU_REPACK buffer type";              \
        const ggml_tensor * w_ = ggml_get_first_tensor((mm).wctx);                                             \
        if (w_->extra == nullptr) GTEST_SKIP() << ggml_type_name(w_->type) << " is not repacked by this CPU build"; \
        ASSERT_TRUE(xdna_tensor_in_repack_buffer(w_));                                                         \
        std::string why_;                                                                                      \
        ASSERT_TRUE(xdna_weight_convertible(w_, &why_)) << why_;                                               \
    } while (0)

class gpu_repacked : public ::testing::TestWithParam<repacked_case> {};

}  // namespace

// The device copy of a repacked weight is its plain blocks, whole and as the dense row ranges of MUL_MAT_ID's copies.
TEST_P(gpu_repacked, device_copy_is_the_plain_blocks) {
    mm_tensors mm(GetParam().mm, env().repack_buft);
    REQUIRE_REPACKED(mm);
    const ggml_tensor * w = ggml_get_first_tensor(mm.wctx);
    const std::vector<uint8_t> want = plain_bytes(mm);
    ASSERT_NE(memcmp(w->data, want.data(), want.size()), 0) << "the host bytes are the plain ones: nothing was repacked";

    xdna::gpu::weight_cache cache(ggml_backend_dev_buffer_type(env().gpu_dev), size_t(256) << 20);
    const auto whole = cache.get(w);
    ASSERT_NE(whole.tensor, nullptr);
    std::vector<uint8_t> got(ggml_nbytes(whole.tensor));
    ggml_backend_tensor_get(whole.tensor, got.data(), 0, got.size());
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(memcmp(got.data(), want.data(), want.size()), 0) << "the device copy differs from the plain blocks";

    // rows [8, 24) of every expert, dense
    const int64_t r0 = 8, r1 = 24;
    const size_t row = ggml_row_size(w->type, w->ne[0]);
    const auto part = cache.get(w, r0, r1);
    ASSERT_NE(part.tensor, nullptr);
    got.assign(ggml_nbytes(part.tensor), 0);
    ASSERT_EQ(got.size(), (size_t) (r1 - r0) * row * w->ne[2]);
    ggml_backend_tensor_get(part.tensor, got.data(), 0, got.size());
    for (int64_t e = 0; e < w->ne[2]; ++e) {
        EXPECT_EQ(memcmp(got.data() + e * (r1 - r0) * row, want.data() + (e * w->ne[1] + r0) * row, (r1 - r0) * row), 0)
            << "expert " << e;
    }
}

// Fixed row ranges of the worker (whole, a quarter, the rest, and boundaries off the CPU's 8-row groups) against the
// CPU backend's result on the repacked weight.
TEST_P(gpu_repacked, rows_match_the_cpu) {
    const mm_case c = GetParam().mm;
    mm_tensors mm(c, env().repack_buft);
    REQUIRE_REPACKED(mm);
    const std::vector<float> ref = cpu_reference(mm);
    xdna::gpu_worker w(env().gpu_dev);
    ASSERT_TRUE(w.accepts(xdna::describe_multiply(mm.node)));
    for (xdna::row_range r : { xdna::row_range{ 0, c.m }, xdna::row_range{ 0, c.m / 4 }, xdna::row_range{ c.m / 4, c.m },
                               xdna::row_range{ 3, c.m - 5 } }) {
        mm.fill_result(0.0f);
        const xdna::multiply desc = xdna::describe_multiply(mm.node);
        w.begin(desc, r);
        const xdna::work_record res = w.end();
        ASSERT_TRUE(res.ok()) << res.why();
        const std::vector<float> got = mm.result();
        EXPECT_LT(nmse_rows(ref, got, mm.rows(), r.begin, r.end), 5e-4) << "rows [" << r.begin << ", " << r.end << ")";
    }
}

static std::vector<repacked_case> repacked_cases() {
    return {
        { { GGML_TYPE_Q4_0, 256, 64, 32 } },   { { GGML_TYPE_Q4_K, 512, 48, 35 } },
        { { GGML_TYPE_IQ4_NL, 256, 64, 33 } }, { { GGML_TYPE_MXFP4, 256, 64, 32 } },
        { { GGML_TYPE_Q2_K, 256, 32, 32 } },   { { GGML_TYPE_Q4_0, 256, 64, 33, 4 } },
    };
}

INSTANTIATE_TEST_SUITE_P(gpu_worker, gpu_repacked, ::testing::ValuesIn(repacked_cases()),
                         [](const ::testing::TestParamInfo<repacked_case> & i) { return name_of(i.param.mm); });
