// The split planner's GPU side: how the rows the NPU leaves are shared between the GPU worker and the CPU worker.
//
// A GPU costs a fixed part per multiply whatever its rows (the submit, the activations' copy or import, the wait for
// the queue), which on an integrated GPU is of the order of the CPU's time for a few dozen rows. Where its worker
// measures that part apart (work_record::fixed_seconds), the planner learns it as it learns the NPU's: a model of the
// fixed part (x = 1: its slope is the typical fixed time) and one of the rows alone, so one size of multiply is enough
// to tell the two apart. The boundary is then where the GPU's time and the CPU's cross, and no rows at all where the
// fixed part costs more than the rows save (a small multiply beside a slow GPU).
#include "planner/planner.h"

#include <algorithm>
#include <cmath>

namespace xdna {

double split_planner::gpu_fixed_part(const shape_state & st) const {
    return st.gpu_split ? st.gpu_fixed.slope() : st.model[GPU].intercept();
}

double split_planner::gpu_time(const shape_state & st, int64_t rows) const {
    if (rows <= 0) return 0.0;
    const cost_model & g = st.model[GPU];
    return (st.gpu_split ? st.gpu_fixed.slope() : 0.0) + g.predict((double) rows);
}

void split_planner::report_gpu(shape_state & st, int64_t rows, double seconds, double fixed_s) {
    if (fixed_s >= 0.0 && std::isfinite(seconds) && std::isfinite(fixed_s)) {
        if (!st.gpu_split) {
            // from now on the fixed part is measured: the rows' model starts again without it
            st.gpu_split = true;
            st.model[GPU] = cost_model();
        }
        st.gpu_fixed.add(1.0, std::max(fixed_s, 1e-9));
        // a first run can be far slower than the rest (Vulkan compiles its pipelines at their first use): two readings
        // in a row under half of what the model says replace it
        st.model[GPU].add_or_restart((double) rows, std::max(seconds - fixed_s, 0.05 * seconds));
        return;
    }
    st.model[GPU].add_or_restart((double) rows, seconds);
}

// The GPU and the CPU sharing m rows so that both end together, each with its fixed part a and time per row b, take
// (m + aG / bG + aC / bC) / (1 / bG + 1 / bC): m times the rate of both together, plus this fixed part.
double split_planner::gpu_rest_fixed(const shape_state & st, bool has_cpu) const {
    const double a_g = gpu_fixed_part(st);
    if (!has_cpu) return a_g;
    const cost_model & g = st.model[GPU], & c = cpu_model(st, true, false);
    if (!g.known() || !c.known()) return 0.0;
    const double r_g = 1.0 / g.slope(), r_c = 1.0 / c.slope();
    return (a_g * r_g + c.intercept() * r_c) / (r_g + r_c);
}

int64_t split_planner::gpu_rows_of(shape_state & st, int64_t left, int64_t align, bool has_cpu) {
    if (!has_cpu || left <= 0) return std::max<int64_t>(left, 0);
    auto aligned = [&](double x) {
        const int64_t v = (int64_t) std::llround(x / (double) align) * align;
        return std::clamp<int64_t>(v, 0, left);
    };
    int64_t want;
    const cost_model & g = st.model[GPU];
    const cost_model & c = cpu_model(st, true, false);   // only ever next to a GPU
    const bool known = g.known() && c.known();
    auto makespan = [&](int64_t x) { return std::max(gpu_time(st, x), c.predict((double) (left - x))); };
    if (opts.gpu_share >= 0.0) {
        want = opts.gpu_share >= 1.0 ? left : aligned(opts.gpu_share * (double) left);
    } else if (!known) {
        want = aligned(0.5 * (double) left);   // evenly until both are measured
    } else {
        // where the two lines cross, its aligned neighbours, and either worker alone
        const double a_g = gpu_fixed_part(st), cross = (c.intercept() - a_g + c.slope() * (double) left) /
                                                       (g.slope() + c.slope());
        want = left;
        for (int64_t x : { (int64_t) std::floor(cross / (double) align) * align, aligned(cross) + align, int64_t(0) }) {
            x = std::clamp<int64_t>(x, 0, left);
            if (makespan(x) < makespan(want)) want = x;
        }
        bool reprobe = false;
        if (want == 0) {
            // the fixed part keeps the GPU out; its models may rest on a slow first run, so now and then (less often
            // while it stays out) it gets the share its speed per row would give it
            st.gpu_gap = std::max<int64_t>(st.gpu_gap, opts.reprobe_every);
            if (++st.gpu_skipped >= st.gpu_gap) {
                st.gpu_skipped = 0;
                st.gpu_gap = std::min<int64_t>(2 * st.gpu_gap, std::max(opts.reprobe_max_every, opts.reprobe_every));
                const double frac = (1.0 / g.slope()) / (1.0 / g.slope() + 1.0 / c.slope());
                want = std::max<int64_t>(std::min(align, left), aligned(frac * (double) left));
                reprobe = true;
            }
        } else {
            st.gpu_skipped = 0;
            st.gpu_gap = 0;
        }
        if (!reprobe && st.gpu_left == left && st.gpu_cur >= 0 && st.gpu_cur <= left &&
            (st.gpu_cur % align == 0 || st.gpu_cur == left)) {
            // the boundary moves by a few rows at a time, so it can follow closely: a third of the NPU's hysteresis
            if (makespan(st.gpu_cur) <= makespan(want) * (1.0 + opts.hysteresis / 3.0)) want = st.gpu_cur;
        }
        if (reprobe) return want;   // not a decision: the next plan starts from the one before
    }
    st.gpu_cur  = want;
    st.gpu_left = left;
    return want;
}

}  // namespace xdna
