// The per-multiply routing overhead of the plugin, in three layers:
//
//   claim/...     the claim policy's decision for one graph node: xdna::claim as the plugin's supports_op runs it,
//                 and the same question asked through the plugin's device, which llama.cpp's scheduler asks for every
//                 node of every graph it splits;
//   mul_mat/...   one small multiply computed by the CPU backend, then by the XDNA backend (its compute engine asks
//                 the planner for row ranges, runs the CPU worker on a row view of the weight, reports back to the
//                 planner): the difference is the engine's cost per multiply;
//   cpu_rows/...  the CPU worker alone computing a split's CPU part, rows [0, R) of a 1,024-row repacked Q4_0 weight
//                 for 512 tokens, as ggml's MUL_MAT chunks them: with AVX-512 at --threads=16, 256 and 512 rows are
//                 ggml chunks of 8 rows (its 8-row code), 1,024 chunks of 16;
//   sched/...     a three-node graph (scale, multiply, scale) through ggml's scheduler, with the CPU alone and with the
//                 XDNA backend in front of it: the multiply then costs two hand-offs between backends, as in a model.
#include "backends.h"
#include "mm_problem.h"
#include "options.h"

#include "backend/claim.h"
#include "workers/cpu/cpu_worker.h"
#include "workers/multiply.h"

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

namespace xdna_microbench {

namespace {

// Skips the benchmark (with the reason) when a backend is missing.
bool need_backends(benchmark::State & state, bool xdna) {
    const backends & b = load(opts().plugin);
    if (!b.cpu_dev || (xdna && !b.xdna_dev)) {
        state.SkipWithError(b.error.c_str());
        return false;
    }
    return true;
}

struct backend_deleter {
    void operator()(ggml_backend_t b) const { ggml_backend_free(b); }
};
using backend_ptr = std::unique_ptr<ggml_backend, backend_deleter>;

backend_ptr make_backend(ggml_backend_dev_t dev) {
    backend_ptr b(ggml_backend_dev_init(dev, nullptr));
    if (b) set_threads(b.get(), opts().threads);
    return b;
}

// The nodes the claim benchmarks ask about, built once (shapes only: the claim policy reads no data).
struct claim_nodes {
    ggml_context * ctx = nullptr;
    ggml_tensor * prompt_mm = nullptr;    // MUL_MAT, 512 tokens: claimed
    ggml_tensor * decode_mm = nullptr;    // MUL_MAT, 1 token: left to the CPU (GGML_XDNA_MIN_BATCH)
    ggml_tensor * moe_mm    = nullptr;    // MUL_MAT_ID, 512 tokens: claimed
    ggml_tensor * view      = nullptr;    // a layout op: accepted
    ggml_tensor * add       = nullptr;    // anything else: refused first thing

    claim_nodes() {
        ggml_init_params p = { 32 * ggml_tensor_overhead(), nullptr, true };
        ctx = ggml_init(p);
        ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, 1024, 3072);
        ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 1024, 512);
        ggml_tensor * x1 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 1024, 1);
        prompt_mm = ggml_mul_mat(ctx, w, x);
        decode_mm = ggml_mul_mat(ctx, w, x1);
        ggml_tensor * we = ggml_new_tensor_3d(ctx, GGML_TYPE_Q4_0, 1024, 768, 8);
        ggml_tensor * xe = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 1024, 2, 512);
        ggml_tensor * ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 2, 512);
        moe_mm = ggml_mul_mat_id(ctx, we, xe, ids);
        view = ggml_view_1d(ctx, x, 1024, 0);
        add = ggml_add(ctx, x, x);
    }
    ~claim_nodes() { ggml_free(ctx); }

    ggml_tensor * by_index(int64_t i) const {
        ggml_tensor * all[] = { prompt_mm, decode_mm, moe_mm, view, add };
        return all[i];
    }
};

const char * claim_case_name(int64_t i) {
    static const char * names[] = { "mul_mat_512_tokens", "mul_mat_1_token", "mul_mat_id_512_tokens", "view", "add" };
    return names[i];
}

const claim_nodes & nodes() {
    static claim_nodes n;
    return n;
}

void BM_claim_policy(benchmark::State & state) {
    if (!need_backends(state, false)) return;
    const backends & b = load(opts().plugin);
    xdna::claim_context ctx;
    ctx.repack_buft = b.repack_buft;
    ctx.cpu_dev = b.cpu_dev;   // as in the plugin: the CPU must be able to compute every claimed multiply
    ggml_tensor * node = nodes().by_index(state.range(0));
    state.SetLabel(claim_case_name(state.range(0)));
    bool claimed = false;
    for (auto _ : state) {
        claimed = xdna::claim(node, ctx);
        benchmark::DoNotOptimize(claimed);
    }
    state.counters["claimed"] = claimed;
}
BENCHMARK(BM_claim_policy)->Name("claim/policy")->DenseRange(0, 4);

void BM_claim_device(benchmark::State & state) {
    if (!need_backends(state, true)) return;
    ggml_backend_dev_t dev = load(opts().plugin).xdna_dev;
    ggml_tensor * node = nodes().by_index(state.range(0));
    state.SetLabel(claim_case_name(state.range(0)));
    bool claimed = false;
    for (auto _ : state) {
        claimed = ggml_backend_dev_supports_op(dev, node);
        benchmark::DoNotOptimize(claimed);
    }
    state.counters["claimed"] = claimed;
}
BENCHMARK(BM_claim_device)->Name("claim/plugin_device")->DenseRange(0, 4);

// mul_mat/<backend>: args are K, rows, tokens, repacked (0/1)
mm_shape shape_of(const benchmark::State & state) {
    mm_shape s;
    s.k = state.range(0);
    s.rows = state.range(1);
    s.tokens = state.range(2);
    s.repacked = state.range(3) != 0;
    return s;
}

void run_mul_mat(benchmark::State & state, bool xdna) {
    if (!need_backends(state, xdna)) return;
    const backends & b = load(opts().plugin);
    mm_problem mm(shape_of(state));
    if (!mm.skip().empty()) { state.SkipWithError(mm.skip().c_str()); return; }
    backend_ptr be = make_backend(xdna ? b.xdna_dev : b.cpu_dev);
    if (!be) { state.SkipWithError("the backend did not start"); return; }
    if (xdna && !ggml_backend_dev_supports_op(b.xdna_dev, mm.mul_mat())) {
        state.SkipWithError("the plugin does not claim this multiply (GGML_XDNA_MIN_BATCH?)");
        return;
    }
    for (auto _ : state) {
        if (ggml_backend_graph_compute(be.get(), mm.graph()) != GGML_STATUS_SUCCESS) {
            state.SkipWithError("graph_compute failed");
            return;
        }
    }
    const double flop = 2.0 * state.range(0) * state.range(1) * state.range(2);
    state.counters["GFLOP/s"] = benchmark::Counter(flop * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_mul_mat_cpu(benchmark::State & state) { run_mul_mat(state, false); }
void BM_mul_mat_xdna(benchmark::State & state) { run_mul_mat(state, true); }

void mul_mat_args(benchmark::internal::Benchmark * b) {
    b->ArgNames({ "K", "rows", "tokens", "repacked" });
    for (int repacked : { 0, 1 }) {
        b->Args({ 256, 256, 32, repacked });      // tiny: the overhead dominates
        b->Args({ 1024, 1024, 64, repacked });    // small: a real layer's width
    }
    b->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_mul_mat_cpu)->Name("mul_mat/cpu_backend")->Apply(mul_mat_args);
BENCHMARK(BM_mul_mat_xdna)->Name("mul_mat/xdna_backend")->Apply(mul_mat_args);

// cpu_rows/chunks: args are K, the CPU's rows (of 1,024), tokens
void BM_cpu_rows_chunks(benchmark::State & state) {
    if (!need_backends(state, false)) return;
    mm_shape s;
    s.k = state.range(0);
    s.rows = 1024;
    s.tokens = state.range(2);
    s.repacked = true;
    mm_problem mm(s);
    if (!mm.skip().empty()) { state.SkipWithError(mm.skip().c_str()); return; }
    std::unique_ptr<xdna::cpu_worker> cpu = xdna::cpu_worker::create(load(opts().plugin).cpu_dev);
    if (!cpu) { state.SkipWithError("the CPU worker did not start"); return; }
    cpu->set_n_threads(opts().threads);
    const xdna::multiply m = xdna::describe_multiply(mm.mul_mat());
    const xdna::row_range rows = { 0, state.range(1) };
    for (auto _ : state) {
        if (!cpu->compute(m, rows).ok()) {
            state.SkipWithError("the CPU worker failed");
            return;
        }
    }
    const double flop = 2.0 * state.range(0) * state.range(1) * state.range(2);
    state.counters["GFLOP/s"] = benchmark::Counter(flop * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["threads"] = cpu->threads();
}

void cpu_rows_args(benchmark::internal::Benchmark * b) {
    b->ArgNames({ "K", "rows", "tokens" });
    for (int rows : { 256, 512, 768, 1024 }) b->Args({ 1024, rows, 512 });
    b->Args({ 3072, 256, 512 });   // down's CPU part at share 0.75
    b->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_cpu_rows_chunks)->Name("cpu_rows/chunks")->Apply(cpu_rows_args);

// sched/<backends>/<steady|schedule>: args are K, rows, tokens; range(3) = 1 re-plans the graph every iteration
void run_sched(benchmark::State & state, bool xdna) {
    if (!need_backends(state, xdna)) return;
    const backends & b = load(opts().plugin);
    mm_shape s;
    s.k = state.range(0);
    s.rows = state.range(1);
    s.tokens = state.range(2);
    const bool replan = state.range(3) != 0;
    mm_problem mm(s);
    if (!mm.skip().empty()) { state.SkipWithError(mm.skip().c_str()); return; }

    backend_ptr cpu = make_backend(b.cpu_dev);
    backend_ptr acc = xdna ? make_backend(b.xdna_dev) : nullptr;
    std::vector<ggml_backend_t> list;
    if (acc) list.push_back(acc.get());   // as llama.cpp orders them: accelerators before the CPU
    list.push_back(cpu.get());

    // scale -> multiply -> scale: the multiply is handed over and back, as between a norm and a rope
    ggml_init_params p = { ggml_graph_overhead() + 8 * ggml_tensor_overhead(), nullptr, true };
    ggml_context * ctx = ggml_init(p);
    ggml_tensor * in  = ggml_scale(ctx, mm.input(), 0.5f);
    ggml_tensor * mid = ggml_mul_mat(ctx, mm.weight(), in);
    ggml_tensor * out = ggml_scale(ctx, mid, 2.0f);
    ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);

    ggml_backend_sched_t sched = ggml_backend_sched_new(list.data(), nullptr, (int) list.size(), 64, false, true);
    bool ok = ggml_backend_sched_alloc_graph(sched, g);
    if (ok && xdna && ggml_backend_sched_get_tensor_backend(sched, mid) != acc.get()) {
        state.SkipWithError("the scheduler did not give the multiply to the XDNA backend");
        ok = false;
    }
    state.counters["splits"] = ok ? ggml_backend_sched_get_n_splits(sched) : 0;
    for (auto _ : state) {
        if (!ok) break;
        if (replan) {
            ggml_backend_sched_reset(sched);
            ggml_backend_sched_alloc_graph(sched, g);
        }
        if (ggml_backend_sched_graph_compute(sched, g) != GGML_STATUS_SUCCESS) {
            state.SkipWithError("graph_compute failed");
            break;
        }
    }
    ggml_backend_sched_free(sched);
    ggml_free(ctx);
}

void BM_sched_cpu(benchmark::State & state) { run_sched(state, false); }
void BM_sched_xdna(benchmark::State & state) { run_sched(state, true); }

void sched_args(benchmark::internal::Benchmark * b) {
    b->ArgNames({ "K", "rows", "tokens", "replan" });
    for (int replan : { 0, 1 }) b->Args({ 256, 256, 32, replan });
    b->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_sched_cpu)->Name("sched/cpu_alone")->Apply(sched_args);
BENCHMARK(BM_sched_xdna)->Name("sched/xdna_then_cpu")->Apply(sched_args);

}  // namespace

}  // namespace xdna_microbench
