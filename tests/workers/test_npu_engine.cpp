// The engine with an NPU worker on the emulator's kernel set and a CPU worker beside it: a mixture of experts split
// between them, and the NPU's one-time work for a weight (its conversion into the cache) where the planner keeps the
// NPU from a multiply or the weight is past the cache. Every result is checked against fp64 (small integers).
#include "backend/compute.h"
#include "npu_test_support.h"
#include "planner/planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

// A mixture of experts through the engine at NPU share 0.5: the experts with fewer routed tokens than the planner's
// threshold go to the CPU whole, which computes their rows of the NPU's range beside the NPU, while the NPU computes the
// other experts' rows of its range and the CPU its own range. Small integers, exact in bf16 and f16 and summed exactly
// in f32: every output must equal the fp64 reference (a row of an expert nobody computed keeps its NaN sentinel).
TEST(npu_moe_engine, the_cpu_computes_the_small_experts_beside_the_npu) {
    workers_pair ws;
    ASSERT_NO_FATAL_FAILURE(ws.make());
    xdna::cpu_worker * cpu = ws.cpu.get();
    xdna::npu_worker * npu = ws.npu.get();
    const int64_t k = 1024, rows = 512, experts = 6, used = 2, tokens = 48;
    ggml_init_params p = { 8 * ggml_tensor_overhead(), nullptr, true };
    ggml_context * ctx = ggml_init(p);
    ggml_tensor * w = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, k, rows, experts);
    ggml_tensor * x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, k, 1, tokens);   // one input row per token (broadcast)
    ggml_tensor * ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, used, tokens);
    ggml_tensor * y = ggml_mul_mat_id(ctx, w, x, ids);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
    for (int64_t i = 0; i < k * rows * experts; ++i) ((ggml_fp16_t *) w->data)[i] = ggml_fp32_to_fp16(float((i * 13) % 9 - 4));
    for (int64_t i = 0; i < k * tokens; ++i) ((float *) x->data)[i] = float((i * 7 + 3) % 9 - 4);
    // slot 0: expert 0 for every token (48 tokens); slot 1: experts 1 and 2 for 20 tokens each, 3 and 4 for 4 each,
    // expert 5 for none: experts 3 and 4 are below the threshold of 16
    for (int64_t t = 0; t < tokens; ++t) {
        ((int32_t *) ids->data)[t * used + 0] = 0;
        ((int32_t *) ids->data)[t * used + 1] = t < 20 ? 1 : t < 40 ? 2 : t < 44 ? 3 : 4;
    }
    xdna::planner_options po;
    po.npu_share = 0.5;
    po.moe_min_tokens = 16;
    xdna::split_planner planner(po);
    xdna::multiply m = xdna::describe_multiply(y);
    planner.assign_experts(m);
    ASSERT_TRUE(m.on_cpu(3) && m.on_cpu(4) && !m.on_cpu(0) && !m.on_cpu(1)) << "the routing must give the CPU experts";
    std::fill((float *) y->data, (float *) y->data + ggml_nelements(y), NAN);
    xdna::compute_engine engine(planner, planner, 1, *cpu, { npu });
    xdna::next_graph();
    ASSERT_EQ(engine.compute(y), GGML_STATUS_SUCCESS);
    EXPECT_NE(engine.summary().find("npu: 256 rows"), std::string::npos) << engine.summary();
    for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t s = 0; s < used; ++s) {
            const int32_t e = ((const int32_t *) ids->data)[t * used + s];
            for (int64_t r = 0; r < rows; ++r) {
                double ref = 0;
                for (int64_t i = 0; i < k; ++i) {
                    ref += double(ggml_fp16_to_fp32(((const ggml_fp16_t *) w->data)[(e * rows + r) * k + i])) *
                           ((const float *) x->data)[t * k + i];
                }
                const float got = ((const float *) y->data)[(t * used + s) * rows + r];
                ASSERT_EQ(got, ref) << "token " << t << ", slot " << s << " (expert " << e << "), row " << r;
            }
        }
    }
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

// The NPU worker's part of the engine's summary ("npu: ..." up to the CPU's; empty before it had any rows).
static std::string npu_part(const std::string & s) {
    const size_t at = s.find("npu:");
    return at == std::string::npos ? std::string() : s.substr(at, s.find(" | cpu", at) - at);
}

// A multiply the planner keeps from the NPU only to measure the CPU alone, of a shape whose NPU takes rows: the NPU's
// one-time work for its weight (converting it into the cache) is done after the CPU's rows, so that the weight's next
// multiply finds it ready (in llama-bench the untimed warm-up prompt measured the CPU alone on four weights that the
// first timed prompt then converted). Two weights of one shape: A is probed twice (the NPU's first measurements),
// the planner is then told the NPU is fast, so the next multiply, of B, measures the CPU alone; B must be converted
// after it, and its result, all the CPU's, exact against fp64 (small integers).
TEST(npu_engine, a_weight_measured_on_the_cpu_alone_is_converted_for_the_npu_after_it) {
    workers_pair ws;
    ASSERT_NO_FATAL_FAILURE(ws.make());
    const int64_t k = 1024, rows = 512, tokens = 64;
    integer_mm a(k, rows, tokens), b(k, rows, tokens);
    for (integer_mm * mm : { &a, &b }) ggml_backend_buffer_set_usage(mm->buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    xdna::split_planner planner{ xdna::planner_options{} };
    xdna::compute_engine engine(planner, planner, 1, *ws.cpu, { ws.npu.get() });
    for (int i = 0; i < 2; ++i) {
        xdna::next_graph();
        ASSERT_EQ(engine.compute(a.y), GGML_STATUS_SUCCESS);
    }
    const xdna::shape_key key = xdna::describe_multiply(a.y).key;
    ASSERT_EQ(key, xdna::describe_multiply(b.y).key);
    for (int i = 0; i < 3; ++i) planner.learn(key, xdna::work_record::measured(xdna::worker_kind::npu, 256, 1e-6, 1e-7));   // a fast NPU
    const int64_t ld = 1024;
    const auto fmt = xdna::npu::weight_format::bf16;
    ASSERT_FALSE(ws.npu->cache().cached(b.w, 0, fmt, ld));
    const std::string before = engine.summary();
    std::fill((float *) b.y->data, (float *) b.y->data + rows * tokens, NAN);
    xdna::next_graph();
    ASSERT_EQ(engine.compute(b.y), GGML_STATUS_SUCCESS);
    EXPECT_GT(planner.npu_rows_of(key), 0) << "the planner must have settled on NPU rows";
    EXPECT_EQ(npu_part(engine.summary()), npu_part(before))
        << "the NPU must have had no rows of B's multiply (the CPU alone was measured): " << engine.summary();
    EXPECT_TRUE(ws.npu->cache().cached(b.w, 0, fmt, ld)) << "B's weight was not converted after the CPU-alone multiply";
    expect_exact(b.w, b.x, std::vector<float>((const float *) b.y->data, (const float *) b.y->data + rows * tokens), 1, 1);
}

// Past the cache's budget the NPU converts a weight on every call, a cost the same shape's kept weights do not have:
// the engine keys such a multiply apart (shape_key::per_call) and the planner learns the two apart, each result still
// exact. A budget of 1 MiB keeps A's weight (512 x 1,024 in bf16: 1 MiB) and not B's, of the same shape.
TEST(npu_engine, a_weight_past_the_cache_is_learned_apart_from_the_shapes_kept_weights) {
    workers_pair ws;
    ASSERT_NO_FATAL_FAILURE(ws.make(1));
    const int64_t k = 1024, rows = 512, tokens = 64, ld = 1024;
    const auto fmt = xdna::npu::weight_format::bf16;
    integer_mm a(k, rows, tokens), b(k, rows, tokens);
    for (integer_mm * mm : { &a, &b }) ggml_backend_buffer_set_usage(mm->buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    xdna::planner_options po;
    po.npu_share = 0.5;
    xdna::split_planner planner(po);
    xdna::compute_engine engine(planner, planner, 1, *ws.cpu, { ws.npu.get() });
    for (integer_mm * mm : { &a, &b }) {
        for (int i = 0; i < 2; ++i) {
            std::fill((float *) mm->y->data, (float *) mm->y->data + rows * tokens, NAN);
            xdna::next_graph();
            ASSERT_EQ(engine.compute(mm->y), GGML_STATUS_SUCCESS);
            expect_exact(mm->w, mm->x, std::vector<float>((const float *) mm->y->data,
                                                          (const float *) mm->y->data + rows * tokens), 1, 1);
        }
    }
    EXPECT_TRUE(ws.npu->cache().cached(a.w, 0, fmt, ld));
    EXPECT_FALSE(ws.npu->cache().cached(b.w, 0, fmt, ld)) << "B's weight is past the budget";
    xdna::multiply da = xdna::describe_multiply(a.y), db = xdna::describe_multiply(b.y);
    ASSERT_TRUE(ws.npu->describe(da));
    ASSERT_TRUE(ws.npu->describe(db));
    EXPECT_FALSE(da.npu_weights_per_call);
    EXPECT_TRUE(db.npu_weights_per_call);
    EXPECT_TRUE(db.npu_weights_ready) << "nothing is done once for a weight converted on every call";
    EXPECT_GT(db.npu_cost.launch_s, da.npu_cost.launch_s) << "its launches carry the weight's conversion";
    const std::vector<std::string> shapes = planner.shape_report();
    ASSERT_EQ(shapes.size(), 2u) << "one shape, learned apart by whether its weight is kept";
    EXPECT_EQ(std::count_if(shapes.begin(), shapes.end(),
                            [](const std::string & l) { return l.find(" weights per call:") != std::string::npos; }), 1)
        << shapes[0] << "\n" << shapes[1];
    EXPECT_NE(npu_part(engine.summary()), "") << engine.summary();
}

// The same where the planner's models keep a slow NPU out of the shape (its reason: the auto split, not a probe): the
// split may still change, so the weight is converted after the multiply, while it is met first (in llama-bench the
// untimed warm-up prompt), not when the NPU joins; the report counts that time as one-time work. At a fixed share of 0
// the NPU never joins: nothing is converted.
TEST(npu_engine, a_weight_the_auto_split_kept_from_the_npu_is_converted_for_it_unless_the_share_is_fixed) {
    workers_pair ws;
    ASSERT_NO_FATAL_FAILURE(ws.make());
    const int64_t k = 1024, rows = 512, tokens = 64, ld = 1024;
    const auto fmt = xdna::npu::weight_format::bf16;
    for (const double share : { 0.0, -1.0 }) {   // share 0 first: the weights of a run may be at the last one's address
        SCOPED_TRACE(share < 0 ? "auto" : "share 0");
        integer_mm a(k, rows, tokens), b(k, rows, tokens);
        for (integer_mm * mm : { &a, &b }) ggml_backend_buffer_set_usage(mm->buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        xdna::planner_options po;
        po.npu_share = share;
        xdna::split_planner planner(po);
        xdna::compute_engine engine(planner, planner, 1, *ws.cpu, { ws.npu.get() });
        const xdna::shape_key key = xdna::describe_multiply(a.y).key;
        if (share < 0) {
            for (int i = 0; i < 2; ++i) {   // the NPU's first measurements (probes), then a very slow NPU
                xdna::next_graph();
                ASSERT_EQ(engine.compute(a.y), GGML_STATUS_SUCCESS);
            }
            for (int i = 0; i < 3; ++i) planner.learn(key, xdna::work_record::measured(xdna::worker_kind::npu, 256, 1.0, 0.5));
            // and a fast CPU, in readings that agree: the probes' own CPU readings can differ by 2x (the first one
            // slow, under TSan or on a loaded machine), and a reading under half of the CPU's model makes the planner
            // probe the dropped NPU again at once (cost_model::doubted), which gave the NPU a block of B's rows
            for (int i = 0; i < 3; ++i) planner.learn(key, xdna::work_record::measured(xdna::worker_kind::cpu, 256, 1e-7, 0.0));
        }
        const std::string before = engine.summary();
        ASSERT_FALSE(ws.npu->cache().cached(b.w, 0, fmt, ld));
        std::fill((float *) b.y->data, (float *) b.y->data + rows * tokens, NAN);
        xdna::next_graph();
        ASSERT_EQ(engine.compute(b.y), GGML_STATUS_SUCCESS);
        EXPECT_LE(planner.npu_rows_of(key), 0) << "the planner must keep the NPU out";
        EXPECT_EQ(npu_part(engine.summary()), npu_part(before)) << "the NPU had rows of B: " << engine.summary();
        EXPECT_EQ(ws.npu->cache().cached(b.w, 0, fmt, ld), share < 0) << "B's weight converted (or not) for the NPU";
        expect_exact(b.w, b.x, std::vector<float>((const float *) b.y->data, (const float *) b.y->data + rows * tokens), 1, 1);
    }
}
