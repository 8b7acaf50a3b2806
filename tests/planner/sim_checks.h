// What the planner's simulation tests share: the options of an auto split that lets the NPU join a GPU split on
// the simulated shapes, and the check that a simulation converges to its optimum.
#pragma once

#include "sim_workers.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace xdna_test {

inline planner_options auto_opts() {
    planner_options o;
    o.gpu_npu_min_gflop = 0.0;   // the simulated shape is 3 GFLOP: let the NPU join next to a GPU
    return o;
}

// calls until the split is within `tol` of the optimum and stays there for the next 20 calls
inline int64_t calls_to_converge(simulation & sim, double opt, double tol, int64_t max_calls = 200) {
    int64_t since = -1;
    for (int64_t c = 1; c <= max_calls; ++c) {
        const sim_result r = sim.step();
        if (r.reprobe) continue;   // a re-probe is the price of re-checking a dropped NPU, not a decision
        if (r.makespan <= opt * (1.0 + tol)) {
            if (since < 0) since = c;
            if (c - since >= 20) return since;
        } else {
            since = -1;
        }
    }
    return -1;
}

// `sim` is within 3% of its optimum from call 1 to `max_calls` on, and stays there; the figure is printed
inline void expect_converges(simulation & sim, const char * name, int64_t max_calls) {
    const double opt = sim.optimum();
    const int64_t c = calls_to_converge(sim, opt, 0.03);
    printf("[figures] %-40s optimum %6.2f ms, within 3%% from call %lld, NPU %lld of 3072 rows\n", name, opt * 1e3,
           (long long) c, (long long) sim.planner.npu_rows_of(sim.key));
    EXPECT_GE(c, 1) << name << ": never within 3% of the optimum";
    EXPECT_LE(c, max_calls) << name;
}

}  // namespace xdna_test
