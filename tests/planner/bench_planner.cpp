// The planner's own cost per multiply: plan() on a shape it knows (the common case: every multiply of a prompt after
// the first few), learn(), and the first plan of a new shape. `bench-planner` prints the numbers.
#include "sim_workers.h"

#include <benchmark/benchmark.h>

using namespace xdna_test;

namespace {

shape_key key_of(int64_t rows) {
    shape_key k;
    k.op = GGML_OP_MUL_MAT; k.type = GGML_TYPE_Q4_0; k.k = 1024; k.rows = rows; k.tokens = 512;
    return k;
}

const std::vector<plan_worker> npu_cpu = { { worker_kind::npu, 1, { 180e-6, 1.7e-3, 512, 1 } }, { worker_kind::cpu, 8 } };
const std::vector<plan_worker> npu_gpu_cpu = { { worker_kind::npu, 1, { 180e-6, 1.7e-3, 512, 1 } },
                                               { worker_kind::gpu, 32 }, { worker_kind::cpu, 8 } };

// a planner that has learned `shapes` shapes of a model (so the map is as full as in a real run)
void learn(split_planner & p, const std::vector<plan_worker> & ws, int shapes, int64_t rows) {
    for (int s = 0; s < shapes; ++s) {
        const shape_key k = key_of(rows + 256 * s);
        for (int c = 0; c < 20; ++c) {
            const std::vector<row_range> r = p.plan(k, k.rows, ws);
            for (size_t i = 0; i < ws.size(); ++i) p.learn(k, work_record::measured(ws[i].kind, r[i].size(), 1e-4 + 3e-6 * (double) r[i].size() * (double) (i + 1)));
        }
    }
}

void bm_plan_known(benchmark::State & state, const std::vector<plan_worker> & ws, int64_t rows) {
    planner_options o;
    o.gpu_npu_min_gflop = 0.0;
    split_planner p(o);
    learn(p, ws, 8, rows);
    const shape_key k = key_of(rows);
    for (auto _ : state) benchmark::DoNotOptimize(p.plan(k, k.rows, ws));
}

void bm_report(benchmark::State & state) {
    split_planner p;
    learn(p, npu_cpu, 8, 3072);
    const shape_key k = key_of(3072);
    double t = 1e-3;
    for (auto _ : state) {
        p.learn(k, work_record::measured(worker_kind::npu, 2048, t));
        t = t * 1.0001;
    }
}

void bm_plan_new_shape(benchmark::State & state) {
    split_planner p;
    int64_t rows = 256;
    for (auto _ : state) {
        const shape_key k = key_of(rows++);
        benchmark::DoNotOptimize(p.plan(k, k.rows, npu_cpu));
    }
}

}  // namespace

BENCHMARK_CAPTURE(bm_plan_known, npu_cpu_3072_rows, npu_cpu, 3072);
BENCHMARK_CAPTURE(bm_plan_known, npu_cpu_151936_rows, npu_cpu, 151936);
BENCHMARK_CAPTURE(bm_plan_known, npu_gpu_cpu_3072_rows, npu_gpu_cpu, 3072);
BENCHMARK(bm_report);
BENCHMARK(bm_plan_new_shape);
BENCHMARK_MAIN();
