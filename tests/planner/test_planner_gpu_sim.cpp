// Three workers on simulated Vulkan costs: an integrated GPU with a fixed cost per multiply (the submit and the
// activations' copy, which its worker measures apart) faster than, close to and slower than the CPU, beside an NPU (the
// XDNA1 timing model's, and a flat-rate one) and the CPU. The auto split must reach at least 0.97 of the best fixed
// split (every NPU step and every GPU/CPU boundary, found by brute force) over the multiplies after it has learned.
#include "sim_workers.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace xdna_test;

namespace {

// An iGPU `speedup` times the CPU's speed per row (the CPU at 5 us a row), `fixed_s` per multiply measured apart.
sim_worker sim_igpu(double speedup, double fixed_s) {
    sim_worker w = sim_gpu(5e-6 / speedup);
    w.fixed_s = fixed_s;
    w.reports_fixed = true;
    return w;
}

struct gpu_case {
    const char * name;
    std::vector<sim_worker> workers;
    int64_t rows;
};

// The optimum over the mean noise-free time of multiplies [skip, calls) (re-probes included: they are part of what
// auto costs).
double efficiency(simulation & sim, int64_t calls, int64_t skip) {
    double sum = 0.0;
    for (int64_t c = 0; c < calls; ++c) {
        const sim_result r = sim.step();
        if (c >= skip) sum += r.makespan;
    }
    return sim.optimum() / (sum / (double) (calls - skip));
}

std::vector<gpu_case> gpu_cases() {
    std::vector<gpu_case> v;
    // a 780M-like iGPU beside the silicon-modelled NPU: 3x, 1x, 1/2x and 1/4x the CPU's speed, 150 us fixed
    for (double speed : { 3.0, 1.0, 0.5, 0.25 }) {
        for (int npu = 0; npu < 2; ++npu) {
            static char names[16][96];
            static int n = 0;
            char * name = names[n++ % 16];
            snprintf(name, 96, "iGPU %.2gx, 150 us fixed, %s", speed, npu ? "NPU flat 1.5x" : "NPU XDNA1 model");
            v.push_back({ name, { npu ? sim_npu(1.5, true, true) : sim_npu_8700g(), sim_igpu(speed, 150e-6), sim_cpu() }, 3072 });
        }
    }
    // a small multiply where the GPU's fixed part is most of its time (1,024 rows: 5 ms on the CPU; the GPU's 1 ms
    // fixed part against its rows at 2x): it pays only with few rows, or not at all
    v.push_back({ "iGPU 2x, 1 ms fixed, 1024 rows", { sim_npu(1.5, true, true), sim_igpu(2.0, 1e-3), sim_cpu() }, 1024 });
    v.push_back({ "iGPU 1.1x, 2 ms fixed, 1024 rows", { sim_npu(0.5, true, true), sim_igpu(1.1, 2e-3), sim_cpu() }, 1024 });
    return v;
}

planner_options three_opts() {
    planner_options o;
    o.gpu_npu_min_gflop = 0.0;   // the simulated shapes are 1-3 GFLOP: let the NPU join next to the GPU
    return o;
}

}  // namespace

TEST(planner_gpu_sim, three_workers_reach_the_best_fixed_split) {
    for (const gpu_case & c : gpu_cases()) {
        for (uint64_t seed : { 1, 2, 3 }) {
            simulation sim(three_opts(), c.workers, c.rows, 0.05, seed);
            const double eff = efficiency(sim, 400, 100);
            if (seed == 1) {
                // what the GPU alone would take for every row, for comparison (docs/gpu-worker.md: -ngl 0 or 99)
                printf("[figures] %-42s %.3f of the best fixed split (optimum %.3f ms; NPU %lld rows; the GPU alone "
                       "%.3f ms, the CPU alone %.3f ms)\n", c.name, eff, sim.optimum() * 1e3,
                       (long long) sim.planner.npu_rows_of(sim.key), c.workers[1].time(c.rows) * 1e3,
                       c.workers[2].time(c.rows) * 1e3);
            }
            EXPECT_GE(eff, 0.97) << c.name << ", seed " << seed;
        }
    }
}

// The GPU's fixed part, measured apart, is learned from multiplies of one size: its model then predicts the time of
// other row counts, so a GPU whose fixed part outweighs what its rows save gets none (but for a re-probe now and then).
TEST(planner_gpu_sim, a_gpu_whose_fixed_part_outweighs_its_rows_gets_none) {
    // 512 rows: the CPU takes 2.6 ms alone; the GPU at 2x with 3 ms fixed never finishes earlier
    planner_options o = three_opts();
    simulation sim(o, { sim_igpu(2.0, 3e-3), sim_cpu() }, 512, 0.05, 1);
    int64_t with_gpu = 0;
    for (int c = 0; c < 200; ++c) with_gpu += sim.step().ranges[0].size() > 0;
    EXPECT_LE(with_gpu, 20) << "multiplies of 200 with GPU rows: a first probe and the backed-off re-probes only";
    EXPECT_GE(with_gpu, 2) << "the GPU is still re-probed";
}

// A fixed GPU share (GGML_XDNA_GPU_SHARE) is taken as it is, whatever the workers measure.
TEST(planner_gpu_sim, a_fixed_gpu_share_is_kept) {
    planner_options o = three_opts();
    o.npu_share = 0.5;
    o.gpu_share = 0.25;
    simulation sim(o, { sim_npu(1.5, true, true), sim_igpu(3.0, 150e-6), sim_cpu(5e-6, 8) }, 3072);
    for (int c = 0; c < 50; ++c) {
        const sim_result r = sim.step();
        ASSERT_EQ(r.ranges[0].size(), 1536);
        ASSERT_EQ(r.ranges[1].size(), 384);
        ASSERT_EQ(r.ranges[2].size(), 1152);
    }
}
