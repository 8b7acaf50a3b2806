// The NPU worker on the emulator's kernel set, its results bit for bit against another path to the same values:
// - its weights resident in NPU buffers (K panels read in place as views) against the same worker converting the
//   weight for the call (blocks copied into its slots): the NPU sees the same bf16 / int8 values and the host adds the
//   K blocks in the same order, on shapes with one and several K panels, row ranges that start inside the weight and
//   blocks that run past its last row; both also against an fp64 reference of the bf16-rounded inputs;
// - its activations: converted once per graph and read again by the next multiply of the same input, through an arena
//   with fewer places than blocks, converted by the CPU worker's threads instead of its own;
// - its results taken by threads lent to it, and between the slices of a CPU team that drives it.
//
// With the emulator's locked-memory limit set (XDNA_EMU_MEMLOCK_MB, CTest's second run of this program) the NPU
// buffers for the weights cannot be had: the weights must stay in ordinary memory and the results stay the same.
#include "npu_test_support.h"
#include "run_worker.h"
#include "workers/npu/resident_weight.h"

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace {

struct shape_t { int64_t k, rows, tokens; xdna::row_range rows_of_npu; };

bool memlock_limited() {
    const char * v = getenv("XDNA_EMU_MEMLOCK_MB");
    return v && atoi(v) > 0;
}

class npu_resident : public ::testing::TestWithParam<std::tuple<shape_t, bool>> {
  protected:
    static void SetUpTestSuite() {
        setenv("XDNA_EMU_LOG", "0", 0);
        ggml_backend_load_all_from_path(XDNA_LLAMA_BIN);
    }
};

// One multiply: a Q8_0 weight (rows x k) in a buffer marked as model weights (so cached, and resident) or not
// (converted for each call), f32 activations (k x tokens).
struct mm_tensors {
    ggml_context * ctx = nullptr;
    ggml_backend_buffer_t buf = nullptr;
    ggml_tensor * w = nullptr, * x = nullptr, * y = nullptr;

    mm_tensors(const shape_t & s, bool weights_usage, const std::vector<uint8_t> & wq, const std::vector<float> & xf) {
        ggml_init_params p = { 8 * ggml_tensor_overhead(), nullptr, true };
        ctx = ggml_init(p);
        w = ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, s.k, s.rows);
        x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, s.k, s.tokens);
        y = ggml_mul_mat(ctx, w, x);
        buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
        if (weights_usage) ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        ggml_backend_tensor_set(w, wq.data(), 0, wq.size());
        ggml_backend_tensor_set(x, xf.data(), 0, xf.size() * sizeof(float));
        memset(y->data, 0x7f, ggml_nbytes(y));   // rows outside the NPU's range must keep this
    }
    ~mm_tensors() {
        ggml_backend_buffer_free(buf);
        ggml_free(ctx);
    }
    const float * out() const { return (const float *) y->data; }
};

float bf16_round(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
    memcpy(&v, &u, 4);
    return v;
}

TEST_P(npu_resident, resident_weights_give_the_copied_path_s_result_bit_for_bit) {
    const auto [s, w8] = GetParam();
    xdna::config cfg = xdna::get_config();
    cfg.npu_w8 = w8;
    std::unique_ptr<xdna::npu_worker> npu = xdna::npu_worker::create(cfg);
    ASSERT_TRUE(npu) << "no NPU worker (emulator kernel set missing?)";

    std::mt19937 rng(uint32_t(s.k * 31 + s.rows));
    std::normal_distribution<float> d(0, 1);
    std::vector<float> wf(size_t(s.k) * s.rows), xf(size_t(s.k) * s.tokens);
    for (auto & v : wf) v = d(rng);
    for (auto & v : xf) v = d(rng);
    std::vector<uint8_t> wq(ggml_row_size(GGML_TYPE_Q8_0, s.k) * s.rows);
    ggml_quantize_chunk(GGML_TYPE_Q8_0, wf.data(), wq.data(), 0, s.rows, s.k, nullptr);

    mm_tensors cached(s, true, wq, xf), per_call(s, false, wq, xf);
    for (int rep = 0; rep < 2; ++rep) {   // the second call finds the weight in the cache
        for (mm_tensors * m : { &cached, &per_call }) {
            const xdna::work_record r = run_worker(*npu, m->y, s.rows_of_npu);
            ASSERT_TRUE(r.ok()) << r.why();
        }
    }
    // where the cached weight lives: an NPU buffer, unless the locked-memory limit forbids it
    const int64_t ld = (s.k + 1023) / 1024 * 1024;
    std::string err;
    auto cw = npu->cache().get(cached.w, 0, w8 ? xdna::npu::weight_format::int8 : xdna::npu::weight_format::bf16, ld, &err);
    ASSERT_TRUE(cw) << err;
    EXPECT_EQ(npu->cache().entries(), 1u);   // the same entry the worker used, not a new one
    EXPECT_EQ(cw->resident != nullptr, !memlock_limited());
    // the widest block the pipeline's buffers hold: the kernel set's widest (1,024 rows by default, 512 in the "narrow" runs), or 512
    // where two slots of 1,024-row blocks (4 MiB each) do not fit under the limit
    int64_t widest = 0;
    for (const xdna::npu_kernel & kn : npu->runtime().manifest().kernels()) widest = std::max<int64_t>(widest, kn.rows);
    EXPECT_EQ(npu->widest_rows(), memlock_limited() ? std::min<int64_t>(widest, 512) : widest);

    const size_t n = size_t(s.rows) * s.tokens;
    EXPECT_EQ(0, memcmp(cached.out(), per_call.out(), n * sizeof(float)));

    // rows outside the NPU's range untouched; inside it, the product of the rounded inputs
    std::vector<float> wd(size_t(s.k) * s.rows);
    ggml_get_type_traits(GGML_TYPE_Q8_0)->to_float(wq.data(), wd.data(), int64_t(wd.size()));
    double err2 = 0, ref2 = 0;
    for (int64_t t = 0; t < s.tokens; ++t) {
        for (int64_t r = 0; r < s.rows; ++r) {
            const float got = cached.out()[t * s.rows + r];
            if (r < s.rows_of_npu.begin || r >= s.rows_of_npu.end) {
                uint32_t u;
                memcpy(&u, &got, 4);
                ASSERT_EQ(u, 0x7f7f7f7fu) << "row " << r << " is not the NPU's";
                continue;
            }
            double ref = 0;
            for (int64_t i = 0; i < s.k; ++i) {
                ref += double(bf16_round(wd[r * s.k + i])) * bf16_round(xf[t * s.k + i]);
            }
            err2 += (got - ref) * (got - ref);
            ref2 += ref * ref;
        }
    }
    // bf16: only the order of the f32 sums differs from the reference; int8: the rounding of both inputs to 8 bits
    EXPECT_LT(err2 / ref2, w8 ? 1e-3 : 1e-9);
}

const shape_t shapes[] = {
    { 1024, 1024, 64, { 0, 1024 } },      // one K panel, whole blocks
    { 3072, 1024, 100, { 256, 1024 } },   // three K panels; the NPU's rows start inside the weight
    { 2048, 1288, 40, { 0, 1288 } },      // blocks past the last row: the edge block is copied, padded
    { 1504, 776, 70, { 512, 776 } },      // K padded to two panels, a short last block
    { 3072, 512, 512, { 0, 512 } },      // three 512-token activation blocks: past the arena under the memlock run,
                                           // whose places are then reused in turn
    { 1024, 1800, 64, { 0, 1792 } },     // blocks of 1,024, 512 and 256 rows in one call (no 1,024 on the narrow
                                           // kernel set, nor under the memlock run, whose slots hold no such block)
};

INSTANTIATE_TEST_SUITE_P(shapes, npu_resident,
                         ::testing::Combine(::testing::ValuesIn(shapes), ::testing::Bool()),
                         [](const auto & info) {
                             const shape_t & s = std::get<0>(info.param);
                             return "k" + std::to_string(s.k) + "_rows" + std::to_string(s.rows) + "_from" +
                                    std::to_string(s.rows_of_npu.begin) + (std::get<1>(info.param) ? "_w8" : "_bf16");
                         });

}  // namespace

// Multiplies of one graph that share their input (q, k and v; gate and up) read the activations the first one
// converted; a new graph converts them again, so an input rewritten in place between graphs is never read stale.
TEST(npu_shared_input, the_next_multiply_reads_the_converted_input_and_a_new_graph_converts_it_again) {
    setenv("XDNA_EMU_LOG", "0", 0);
    ggml_backend_load_all_from_path(XDNA_LLAMA_BIN);
    std::unique_ptr<xdna::npu_worker> npu = xdna::npu_worker::create(xdna::get_config());
    ASSERT_TRUE(npu) << "no NPU worker (emulator kernel set missing?)";
    const int64_t k = 2048, rows = 512, tokens = 64;
    ggml_init_params p = { 8 * ggml_tensor_overhead(), nullptr, true };
    ggml_context * ctx = ggml_init(p);
    ggml_tensor * w[2] = { ggml_new_tensor_2d(ctx, GGML_TYPE_F16, k, rows), ggml_new_tensor_2d(ctx, GGML_TYPE_F16, k, rows) };
    ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, tokens);
    ggml_tensor * y[2] = { ggml_mul_mat(ctx, w[0], x), ggml_mul_mat(ctx, w[1], x) };
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
    ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> small(-8, 8);   // exact in bf16: the reference is exact
    for (ggml_tensor * t : w) {
        for (int64_t i = 0; i < k * rows; ++i) ((ggml_fp16_t *) t->data)[i] = ggml_fp32_to_fp16(float(small(rng)));
    }
    auto check = [&](int which, const char * what) {
        for (int64_t t = 0; t < tokens; ++t) {
            for (int64_t r = 0; r < rows; ++r) {
                double ref = 0;
                for (int64_t i = 0; i < k; ++i) {
                    ref += double(ggml_fp16_to_fp32(((const ggml_fp16_t *) w[which]->data)[r * k + i])) *
                           ((const float *) x->data)[t * k + i];
                }
                ASSERT_EQ(((const float *) y[which]->data)[t * rows + r], ref) << what << ": token " << t << ", row " << r;
            }
        }
    };
    auto fill_x = [&](int salt) {
        for (int64_t i = 0; i < k * tokens; ++i) ((float *) x->data)[i] = float((i * 7 + salt) % 9 - 4);
    };
    auto run = [&](int which) {
        const xdna::work_record r = run_worker(*npu, y[which], { 0, rows });
        ASSERT_TRUE(r.ok()) << r.why();
    };
    xdna::next_graph();
    fill_x(1);
    run(0);
    run(1);   // reads the activations converted for y0
    check(0, "first multiply");
    check(1, "second multiply of the same graph");
    fill_x(5);   // the input rewritten in place, as ggml's allocator does between graphs
    xdna::next_graph();
    run(1);
    check(1, "the same multiply in the next graph");
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

// A call with more activation blocks than the arena may hold (a mixture of experts' hundreds, or under a tight
// locked-memory limit) reuses the arena's places in turn: three K blocks of 512 tokens through two places give the
// product of the rounded inputs, as the arena with a place for each does.
TEST(npu_activation_arena, more_blocks_than_places_reuse_them_in_turn) {
    setenv("XDNA_EMU_LOG", "0", 0);
    ggml_backend_load_all_from_path(XDNA_LLAMA_BIN);
    const int64_t k = 3072, rows = 512, tokens = 512;
    integer_mm mm(k, rows, tokens);
    ggml_tensor * y = mm.y;
    std::vector<float> got[2];
    for (int limited = 0; limited < 2; ++limited) {
        std::unique_ptr<xdna::npu_worker> npu = xdna::npu_worker::create(xdna::get_config());
        ASSERT_TRUE(npu) << "no NPU worker (emulator kernel set missing?)";
        if (limited) npu->limit_activation_arena(2u << 20);   // two 1 MiB blocks of 512 x 1024 bf16
        xdna::next_graph();
        const xdna::work_record r = run_worker(*npu, y, { 0, rows });
        ASSERT_TRUE(r.ok()) << r.why();
        got[limited].assign((const float *) y->data, (const float *) y->data + rows * tokens);
    }
    expect_exact(mm.w, mm.x, got[1], 37, 11);
    EXPECT_EQ(0, memcmp(got[0].data(), got[1].data(), got[0].size() * sizeof(float)));
}

// The CPU worker's threads convert a dense multiply's activations into the NPU's buffer before the NPU starts
// (compute_engine::lend_cpu_threads): the NPU must then read the same bf16 values as when its own thread converts them, so
// the results agree bit for bit; where K is not a whole number of the kernel's K blocks the worker converts them
// itself (the offer is not taken). They convert only the first K block of each token block (the worker converts the
// others while the first launch is dispatched), so the offer holds one block per token block, at column 0; the arena
// held another input before (what a block nobody converted would still hold). A second multiply of the same input in
// the same graph then finds every block held: no offer, the same bytes.
TEST(npu_cpu_convert, the_cpu_threads_conversion_gives_the_npu_threads_result_bit_for_bit) {
    workers_pair ws;
    ASSERT_NO_FATAL_FAILURE(ws.make());
    xdna::cpu_worker * cpu = ws.cpu.get();
    xdna::npu_worker * npu = ws.npu.get();
    struct { int64_t k, rows, tokens; bool offer_taken; } cases[] = { { 2048, 512, 100, true }, { 1024, 256, 64, true },
                                                                      { 3072, 256, 600, true }, { 1504, 256, 40, false } };
    for (const auto & cs : cases) {
        ggml_init_params p = { 8 * ggml_tensor_overhead(), nullptr, true };
        ggml_context * ctx = ggml_init(p);
        ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, cs.k, cs.rows);
        ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, cs.k, cs.tokens);
        ggml_tensor * y = ggml_mul_mat(ctx, w, x);
        ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
        std::mt19937 rng(uint32_t(cs.k));
        std::normal_distribution<float> d(0, 1);
        for (int64_t i = 0; i < cs.k * cs.rows; ++i) ((ggml_fp16_t *) w->data)[i] = ggml_fp32_to_fp16(d(rng));
        int offers_taken = 0;
        std::vector<xdna::bf16_block> offered;
        int64_t token_blocks = 0;
        // the result of one multiply of x: in a new graph or not, its activations converted by the CPU's threads or not
        auto run = [&](bool new_graph, bool by_cpu, std::vector<float> & got) {
            if (new_graph) xdna::next_graph();   // a new graph: the input is converted again
            xdna::multiply m = xdna::describe_multiply(y);
            ASSERT_TRUE(npu->accepts(m) && npu->describe(m));
            token_blocks = (cs.tokens + m.npu_choice->kernel->tokens - 1) / m.npu_choice->kernel->tokens;
            if (by_cpu) {
                m.convert_bf16 = [&](const std::vector<xdna::bf16_block> & b, const std::function<void(int, int)> & then) {
                    offers_taken++;
                    offered = b;
                    return cpu->convert_bf16(x, b, then);
                };
            }
            std::fill((float *) y->data, (float *) y->data + cs.rows * cs.tokens, -1.0f);
            npu->begin(m, { 0, cs.rows });
            const xdna::work_record r = npu->end();
            ASSERT_TRUE(r.ok()) << r.why();
            got.assign((const float *) y->data, (const float *) y->data + cs.rows * cs.tokens);
        };
        std::vector<float> got[4];
        for (int64_t i = 0; i < cs.k * cs.tokens; ++i) ((float *) x->data)[i] = d(rng);
        ASSERT_NO_FATAL_FAILURE(run(true, false, got[3]));   // the arena now holds this input
        for (int64_t i = 0; i < cs.k * cs.tokens; ++i) ((float *) x->data)[i] = d(rng);
        ASSERT_NO_FATAL_FAILURE(run(true, true, got[1]));    // the CPU's threads
        ASSERT_NO_FATAL_FAILURE(run(false, true, got[2]));   // the same input again
        ASSERT_NO_FATAL_FAILURE(run(true, false, got[0]));   // the NPU's thread alone
        EXPECT_EQ(offers_taken, cs.offer_taken ? 1 : 0) << "K=" << cs.k;
        if (cs.offer_taken) {
            EXPECT_EQ((int64_t) offered.size(), token_blocks) << "K=" << cs.k;
            for (const xdna::bf16_block & b : offered) EXPECT_EQ(b.col, 0) << "K=" << cs.k;
        }
        EXPECT_EQ(0, memcmp(got[0].data(), got[1].data(), got[0].size() * sizeof(float))) << "K=" << cs.k;
        EXPECT_EQ(0, memcmp(got[0].data(), got[2].data(), got[0].size() * sizeof(float))) << "K=" << cs.k;
        ggml_backend_buffer_free(buf);
        ggml_free(ctx);
    }
}

// Threads lent to the NPU worker (help(), compute_engine's lending) take parts of each block's result: the caller's thread
// alone, or the CPU worker's team of two, all lent at once as the engine lends them (cpu_worker::run_on_threads), or
// the worker's own spare threads on cores the engine says are idle (worker::idle_cores). The
// results must be the same bytes as the worker's thread alone gives, and exact against fp64 (small integers, exact in
// bf16 and summed exactly in f32), with partial sums over two K blocks and a token count that splits unevenly. The
// results must have been split among the lent threads (a test of help that did nothing would pass the comparison):
// they are lent right after begin(), long before the first result (the first dispatch alone is 150 us), and the run
// is repeated if the test's threads were not there in time. The worker's thread leaves the parts to the lent threads
// while one is there (lent_threads::leave_parts_to_lent_threads): racing them, it took every part in most runs on a
// loaded 2-CPU machine (ctest -j2), where a lent thread may not run while a 50 us piece is posted. lent_threads' own
// tests check that every part runs once, on several threads at once, the worker's own included.
TEST(npu_help, results_split_among_lent_threads_are_bit_for_bit) {
    workers_pair ws;
    ASSERT_NO_FATAL_FAILURE(ws.make());
    xdna::npu_worker * npu = ws.npu.get();
    xdna::cpu_worker * cpu = ws.cpu.get();
    const int64_t k = 2048, rows = 1024, tokens = 301;
    integer_mm mm(k, rows, tokens);
    ggml_tensor * y = mm.y;
    enum { none, caller, team, spares, modes };
    std::vector<float> got[modes];
    npu->leave_parts_to_lent_threads(true);   // a lent thread present takes the parts: no race with the worker's thread
    for (int mode = none; mode < modes; ++mode) {
        for (int attempt = 0; attempt < 5; ++attempt) {
            xdna::next_graph();
            xdna::multiply m = xdna::describe_multiply(y);
            ASSERT_TRUE(npu->accepts(m) && npu->describe(m));
            std::fill((float *) y->data, (float *) y->data + rows * tokens, NAN);
            npu->idle_cores(mode == spares ? 2 : 0);
            npu->begin(m, { 0, rows });
            const uint64_t shared = ws.npu->shared_takes();
            if (mode == caller) npu->help();
            if (mode == team) {
                ASSERT_TRUE(cpu->run_on_threads([npu](int, int) { npu->help(); }));
            }
            const xdna::work_record r = npu->end();
            ASSERT_TRUE(r.ok()) << r.why();
            if (mode == none) {
                EXPECT_EQ(ws.npu->shared_takes(), shared) << "results split among threads nobody lent";
            }
            if (mode == none || ws.npu->shared_takes() > shared) break;
            ASSERT_LT(attempt, 4) << "no result was split among the lent threads in five runs (mode " << mode << ")";
        }
        got[mode].assign((const float *) y->data, (const float *) y->data + rows * tokens);
    }
    npu->idle_cores(0);
    expect_exact(mm.w, mm.x, got[team], 7, 5);
    EXPECT_EQ(0, memcmp(got[none].data(), got[caller].data(), got[none].size() * sizeof(float)));
    EXPECT_EQ(0, memcmp(got[none].data(), got[team].data(), got[none].size() * sizeof(float)));
    EXPECT_EQ(0, memcmp(got[none].data(), got[spares].data(), got[none].size() * sizeof(float)));
}

// The NPU driven by the CPU worker's team between slices of its rows (worker::begin_driven): boundaries played here
// one thread at a time (step_poll, then step_take for each of three threads, as the team's graph runs them), a little
// apart so that runs finish between them, until at least two results were taken at boundaries; then end() finishes.
// The result must be, bit for bit, what the NPU worker's own thread gives, and the exact product.
TEST(npu_driven, results_taken_between_the_team_s_slices_are_bit_for_bit) {
    workers_pair ws;
    ASSERT_NO_FATAL_FAILURE(ws.make());
    xdna::npu_worker * npu = ws.npu.get();
    ASSERT_TRUE(npu->drivable());
    const int64_t k = 2048, rows = 1024, tokens = 301;
    integer_mm mm(k, rows, tokens);
    ggml_tensor * y = mm.y;
    std::vector<float> got[2];
    for (int driven = 0; driven < 2; ++driven) {
        xdna::next_graph();
        xdna::multiply m = xdna::describe_multiply(y);
        ASSERT_TRUE(npu->accepts(m) && npu->describe(m));
        std::fill((float *) y->data, (float *) y->data + rows * tokens, NAN);
        xdna::work_record r;
        if (!driven) {
            npu->begin(m, { 0, rows });
            r = npu->end();
            EXPECT_EQ(r.team_results, -1) << "the worker's own thread drove it";
        } else {
            npu->begin_driven(m, { 0, rows });
            const uint64_t done0 = npu->runtime().stats().completed;
            const int nth = 3;
            for (int b = 0; b < 4000 && npu->runtime().stats().completed < done0 + 2; ++b) {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
                npu->step_poll(0, nth);
                for (int ith = 0; ith < nth; ++ith) npu->step_take(ith, nth);
            }
            r = npu->end();
            EXPECT_GE(r.team_results, 2) << "results taken at the boundaries";
        }
        ASSERT_TRUE(r.ok()) << r.why();
        got[driven].assign((const float *) y->data, (const float *) y->data + rows * tokens);
    }
    expect_exact(mm.w, mm.x, got[1], 7, 5);
    EXPECT_EQ(0, memcmp(got[0].data(), got[1].data(), got[0].size() * sizeof(float)));
}
