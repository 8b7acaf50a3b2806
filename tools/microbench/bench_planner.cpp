// The split planner's decision time: xdna::split_planner::plan for one multiply, as the compute engine calls it
// before every claimed multiply, and report(), which it calls after each worker finished.
//
//   planner/plan/<workers>   cpu: the CPU worker alone; npu_cpu: NPU and CPU, auto share with both speeds learned;
//                            npu_cpu_fixed: a fixed NPU share (GGML_XDNA_NPU_SHARE); npu_gpu_cpu: all three, auto
//   planner/plan_many_shapes the same with 256 shapes learned (a large model's distinct multiplies)
//   planner/report           one worker's timing report
#include "planner/planner.h"

#include <benchmark/benchmark.h>

#include <vector>

namespace xdna_microbench {

namespace {

using xdna::plan_worker;
using xdna::worker_kind;

xdna::shape_key key_of(int64_t i) {
    xdna::shape_key k;
    k.op = GGML_OP_MUL_MAT;
    k.type = GGML_TYPE_Q4_0;
    k.k = 1024 + 64 * (i % 16);
    k.rows = 3072 + 256 * (i / 16);
    k.tokens = 512;
    return k;
}

std::vector<plan_worker> workers_of(int64_t which) {
    switch (which) {
        case 0: return { { worker_kind::cpu, 8 } };
        case 1:
        case 2: return { { worker_kind::npu, 256 }, { worker_kind::cpu, 8 } };
        default: return { { worker_kind::npu, 256 }, { worker_kind::gpu, 1 }, { worker_kind::cpu, 8 } };
    }
}

const char * workers_name(int64_t which) {
    static const char * names[] = { "cpu", "npu_cpu", "npu_cpu_fixed", "npu_gpu_cpu" };
    return names[which];
}

// A planner that has seen `n_shapes` shapes, each with a few timing reports from every worker in `ws`.
void teach(xdna::split_planner & p, const std::vector<plan_worker> & ws, int64_t n_shapes) {
    for (int64_t i = 0; i < n_shapes; ++i) {
        const xdna::shape_key k = key_of(i);
        for (int rep = 0; rep < 3; ++rep) {
            const std::vector<xdna::row_range> rows = p.plan(k, k.rows, ws);
            for (size_t w = 0; w < ws.size(); ++w) {
                // the NPU a little slower per row than the CPU, the GPU faster: a mixed split
                const double per_row = ws[w].kind == worker_kind::npu ? 3e-6 : ws[w].kind == worker_kind::gpu ? 1e-6 : 2e-6;
                p.learn(k, xdna::work_record::measured(ws[w].kind, rows[w].size(), per_row * (double) rows[w].size()));
            }
        }
    }
}

void BM_plan(benchmark::State & state) {
    const int64_t which = state.range(0), n_shapes = state.range(1);
    xdna::planner_options o;
    if (which == 2) o.npu_share = 0.4;
    xdna::split_planner p(o);
    const std::vector<plan_worker> ws = workers_of(which);
    teach(p, ws, n_shapes);
    state.SetLabel(workers_name(which));
    int64_t i = 0;
    for (auto _ : state) {
        const xdna::shape_key k = key_of(i++ % n_shapes);
        std::vector<xdna::row_range> rows = p.plan(k, k.rows, ws);
        benchmark::DoNotOptimize(rows.data());
    }
}
BENCHMARK(BM_plan)->Name("planner/plan")->ArgNames({ "workers", "shapes" })
    ->Args({ 0, 1 })->Args({ 1, 1 })->Args({ 2, 1 })->Args({ 3, 1 });
BENCHMARK(BM_plan)->Name("planner/plan_many_shapes")->ArgNames({ "workers", "shapes" })->Args({ 1, 256 });

void BM_report(benchmark::State & state) {
    xdna::split_planner p;
    const std::vector<plan_worker> ws = workers_of(1);
    teach(p, ws, 1);
    const xdna::shape_key k = key_of(0);
    for (auto _ : state) {
        p.learn(k, xdna::work_record::measured(worker_kind::cpu, 2048, 4e-3));
    }
}
BENCHMARK(BM_report)->Name("planner/report");

}  // namespace

}  // namespace xdna_microbench
