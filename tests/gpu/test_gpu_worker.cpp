// The GPU worker against the stock CPU backend: every row range it computes matches the CPU's result for those rows,
// and it writes no other row. Run on the device under test (an RPC server here, CUDA on a GPU machine) through the
// copy path, and on the CPU device through the mapped path.
#include "gpu_fixture.h"
#include "workers/gpu/gpu_worker.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

using namespace xdna_test;
using xdna::gpu_worker;
using xdna::row_range;
using xdna::work_record;

namespace {

// the device under test as it comes (mapping host memory where it can: Vulkan), the same with mapping off (the copy
// path), and the CPU device, which maps host memory, as a stand-in whose results equal the CPU backend's
enum class dev_kind { under_test, under_test_copy, cpu_mapped };

// Whether the device under test must map host memory (XDNA_TEST_GPU_MAPS=1: Vulkan with VK_EXT_external_memory_host),
// so that the mapped path is known to have run on it, not silently replaced by copies.
bool device_must_map() {
    const char * v = getenv("XDNA_TEST_GPU_MAPS");
    return v && strcmp(v, "1") == 0;
}

struct param {
    dev_kind dev;
    mm_case  mm;
};

void PrintTo(const param & p, std::ostream * os) {
    *os << (p.dev == dev_kind::cpu_mapped ? "cpu_mapped " : p.dev == dev_kind::under_test_copy ? "device_copy " : "device ")
        << name_of(p.mm);
}

ggml_backend_dev_t device_of(dev_kind k) {
    return k == dev_kind::cpu_mapped ? env().cpu_dev : env().gpu_dev;
}

#define REQUIRE_DEVICE(k)                                                                   \
    do {                                                                                    \
        if ((k) != dev_kind::cpu_mapped && !env().gpu_dev) FAIL() << env().error;           \
        ASSERT_NE(env().cpu_dev, nullptr) << "no CPU backend in " XDNA_TEST_LLAMA_BIN;      \
    } while (0)

// NaN with a payload nobody computes: a row the worker must not touch keeps exactly these bits
const float sentinel = [] { uint32_t b = 0x7fc0dead; float f; memcpy(&f, &b, 4); return f; }();

bool is_sentinel(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return b == 0x7fc0dead;
}

// Runs `rows` of `mm` on `w` and checks them against `ref`; every other row must be untouched.
// `same_device`: the worker runs the CPU's own kernels, so only the order of additions may differ (the CPU picks
// its F32/F16 kernels by shape, and a row slice has another shape than the whole).
void check_rows(gpu_worker & w, mm_tensors & mm, const std::vector<float> & ref, row_range rows, bool same_device) {
    mm.fill_result(sentinel);
    ASSERT_TRUE(w.accepts(xdna::describe_multiply(mm.node)));
    const xdna::multiply desc = xdna::describe_multiply(mm.node);
    w.begin(desc, rows);
    const work_record r = w.end();
    ASSERT_TRUE(r.ok()) << r.why();
    EXPECT_GT(r.seconds, 0.0);
    const std::vector<float> got = mm.result();
    const int64_t ne0 = mm.rows();
    int64_t touched = 0, nan_in_rows = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        const int64_t row = (int64_t) (i % ne0);
        if (row < rows.begin || row >= rows.end) {
            touched += !is_sentinel(got[i]);
        } else {
            nan_in_rows += std::isnan(got[i]);
        }
    }
    EXPECT_EQ(touched, 0) << "values outside rows [" << rows.begin << ", " << rows.end << ") were written";
    EXPECT_EQ(nan_in_rows, 0) << "rows left unwritten or NaN";
    const double nmse = nmse_rows(ref, got, ne0, rows.begin, rows.end);
    // test-backend-ops' MUL_MAT bound for another device; rounding differences only on the same device
    EXPECT_LT(nmse, same_device ? 1e-10 : 5e-4) << "rows [" << rows.begin << ", " << rows.end << ")";
}

class gpu_rows : public ::testing::TestWithParam<param> {};

}  // namespace

TEST_P(gpu_rows, match_the_cpu_and_touch_no_other_row) {
    const param prm = GetParam();
    REQUIRE_DEVICE(prm.dev);
    mm_tensors mm(prm.mm);
    const std::vector<float> ref = cpu_reference(mm);

    xdna::gpu_worker_options base_opts;
    base_opts.map_host = prm.dev != dev_kind::under_test_copy;
    base_opts.map_any_vulkan = device_must_map();   // lavapipe is a CPU-type device: mapped only when asked
    gpu_worker w(device_of(prm.dev), base_opts);
    xdna::gpu_worker_options probe;
    probe.map_any_vulkan = device_must_map();
    if (prm.dev == dev_kind::under_test_copy && !gpu_worker(device_of(prm.dev), probe).can_map_host()) {
        GTEST_SKIP() << "the device copies anyway: its device_ case is the copy path";
    }
    const bool maps = prm.dev == dev_kind::cpu_mapped || (prm.dev == dev_kind::under_test && device_must_map());
    if (prm.dev != dev_kind::under_test || device_must_map()) {
        EXPECT_EQ(w.can_map_host(), maps);
    }
    const int64_t m = prm.mm.m;
    const bool same_device = prm.dev == dev_kind::cpu_mapped;
    for (row_range r : { row_range{ 0, m }, row_range{ 0, 17 }, row_range{ 17, m / 2 + 3 }, row_range{ m - 1, m } }) {
        check_rows(w, mm, ref, r, same_device);
    }
    const xdna::gpu_worker_stats s = w.stats();
    // ggml-vulkan's MUL_MAT_ID reads experts as dense: there the worker copies each row range of every expert apart
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(device_of(prm.dev));
    const bool per_range = prm.mm.experts > 0 && reg && strcmp(ggml_backend_reg_name(reg), "Vulkan") == 0;
    EXPECT_EQ(s.weight_uploads, per_range ? 4 : 1) << "the weight is copied to the device once, whatever the rows";
    if (prm.dev != dev_kind::under_test || device_must_map()) {
        EXPECT_EQ(s.mapped_runs, maps ? 4 : 0);
        EXPECT_EQ(s.strided_reads + s.scatter_reads, maps ? 0 : 4);
    }

    // both ways of reading result rows back, forced (a device without 2-D copies always scatters)
    if (prm.dev != dev_kind::cpu_mapped && !w.can_map_host()) {
        for (auto mode : { xdna::gpu_worker_options::read_mode::strided, xdna::gpu_worker_options::read_mode::scatter }) {
            xdna::gpu_worker_options opts;
            opts.out = mode;
            opts.map_host = false;
            gpu_worker wm(device_of(prm.dev), opts);
            check_rows(wm, mm, ref, { 5, m - 3 }, false);
            if (mode == xdna::gpu_worker_options::read_mode::scatter) { EXPECT_EQ(wm.stats().scatter_reads, 1); }
        }
    }
}

static std::vector<param> all_params() {
    std::vector<param> v;
    const mm_case cases[] = {
        { GGML_TYPE_F32, 256, 96, 33 },  { GGML_TYPE_F16, 512, 128, 40 },  { GGML_TYPE_Q8_0, 1024, 160, 64 },
        { GGML_TYPE_Q4_0, 256, 64, 32 }, { GGML_TYPE_Q4_K, 512, 48, 35 },  { GGML_TYPE_Q8_0, 256, 64, 33, 4 },
        { GGML_TYPE_F16, 256, 40, 32, 6 },
    };
    for (dev_kind d : { dev_kind::under_test, dev_kind::under_test_copy, dev_kind::cpu_mapped }) {
        for (const mm_case & c : cases) v.push_back({ d, c });
    }
    return v;
}

INSTANTIATE_TEST_SUITE_P(gpu_worker, gpu_rows, ::testing::ValuesIn(all_params()),
                         [](const ::testing::TestParamInfo<param> & i) {
                             return std::string(i.param.dev == dev_kind::cpu_mapped        ? "cpu_mapped_"
                                                : i.param.dev == dev_kind::under_test_copy ? "device_copy_"
                                                                                           : "device_") +
                                    name_of(i.param.mm);
                         });

// Several weights: each copied once while they fit; past the budget the least recently used goes and comes back.
TEST(gpu_worker_cache, keeps_weights_resident_and_evicts_least_recently_used) {
    REQUIRE_DEVICE(dev_kind::under_test);
    const mm_case c = { GGML_TYPE_Q8_0, 1024, 256, 32 };   // 272 KiB each
    mm_tensors a(c, nullptr, 1), b(c, nullptr, 2), d(c, nullptr, 3);
    const std::vector<float> ra = cpu_reference(a), rb = cpu_reference(b), rd = cpu_reference(d);

    xdna::gpu_worker_options opts;
    opts.cache_bytes = 700 << 10;   // two of them, not three
    gpu_worker w(env().gpu_dev, opts);
    const row_range all = { 0, c.m };
    check_rows(w, a, ra, all, false);
    check_rows(w, b, rb, all, false);
    check_rows(w, a, ra, all, false);   // hit: a becomes the most recently used
    EXPECT_EQ(w.stats().weight_uploads, 2);
    check_rows(w, d, rd, all, false);   // evicts b, the least recently used
    EXPECT_EQ(w.stats().weight_uploads, 3);
    EXPECT_EQ(w.stats().resident_weights, 2u);
    EXPECT_LE(w.stats().resident_bytes, opts.cache_bytes);
    check_rows(w, a, ra, all, false);   // still resident
    EXPECT_EQ(w.stats().weight_uploads, 3);
    check_rows(w, b, rb, all, false);   // was evicted: copied again
    EXPECT_EQ(w.stats().weight_uploads, 4);
}

// Memory freed and reused for another weight of the same shape (test-backend-ops does this every case) must not be
// served the old device copy.
TEST(gpu_worker_cache, new_bytes_at_the_same_address_are_copied_again) {
    REQUIRE_DEVICE(dev_kind::under_test);
    mm_tensors mm({ GGML_TYPE_F16, 512, 64, 32 });
    gpu_worker w(env().gpu_dev);
    check_rows(w, mm, cpu_reference(mm), { 0, 64 }, false);
    mm.set_weight(42);
    check_rows(w, mm, cpu_reference(mm), { 0, 64 }, false);
    EXPECT_EQ(w.stats().weight_uploads, 2);
}

// A weight larger than the whole budget is refused; asked anyway, the worker reports a failure and writes nothing.
TEST(gpu_worker_accepts, refuses_weights_beyond_the_budget_and_fails_cleanly) {
    REQUIRE_DEVICE(dev_kind::under_test);
    mm_tensors mm({ GGML_TYPE_F32, 1024, 256, 32 });   // 1 MiB
    xdna::gpu_worker_options opts;
    opts.cache_bytes = 512 << 10;
    gpu_worker w(env().gpu_dev, opts);
    EXPECT_FALSE(w.accepts(xdna::describe_multiply(mm.node)));
    mm.fill_result(sentinel);
    const xdna::multiply desc = xdna::describe_multiply(mm.node);
    w.begin(desc, { 0, 256 });
    const work_record r = w.end();
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.reason, xdna::work_failure::none);
    for (float f : mm.result()) ASSERT_TRUE(is_sentinel(f));
}
