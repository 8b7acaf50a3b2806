// Simulated workers on a fake clock, to drive the split planner in tests: each worker's time for r rows is its model
// (fixed cost + per row, or the NPU's fixed cost + launches x launch time) times seeded multiplicative noise, and the
// best split is found by brute force over every split the planner could choose, as the reference.
#pragma once

#include "planner/planner.h"
#include "xdna1_timing.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

namespace xdna_test {

using namespace xdna;

struct sim_worker {
    worker_kind kind;
    int64_t align   = 1;
    double  fixed_s = 0.0;       // per multiply it takes part in
    double  row_s   = 0.0;       // per row (used when block_rows == 0)
    int64_t block_rows = 0;      // NPU with blocks: ceil(r / block_rows) * launches_per_block launches of launch_s
    int64_t launches_per_block = 1;
    double  launch_s = 0.0;
    int64_t wide_rows = 0;       // NPU with blocks: a wider block it runs where the rows fill one (0: none)...
    double  wide_units = 0.0;    // ...whose launch costs this many of launch_s
    bool    hint = false;        // the NPU tells the planner its blocks and a launch-time guess
    double  hint_error = 1.0;    // how far that guess is off (the planner must correct it by measurement)
    bool    units_hint = false;  // the NPU tells the planner its blocks only, no times
    double  next_to_npu = 1.0;   // time multiplier while the NPU takes rows too (its host thread takes CPU time)
    double  fixed_next_to_npu = 0.0;   // seconds more per multiply while the NPU takes rows too (slices of its rows)
    bool    sliced = false;      // CPU: its rows are cut into slices beside the NPU (plan_worker::sliced)
    bool    reports_fixed = false;   // the worker measures its fixed part apart (work_record::fixed_seconds)
    double  whole = 1.0;         // NPU: time multiplier when it takes every row (the CPU's threads then help it)
    double  head_s = 0.0;        // NPU begun ahead: this long before the multiply's turn (work_record::head_seconds),
                                 // which then waits only for what is left of its time

    // what the multiply waits for of a worker's time `t`: the NPU's less its head start
    double  waited(double t) const { return kind == worker_kind::npu && head_s > 0.0 ? std::max(0.0, t - head_s) : t; }

    // its time for `rows` of a multiply of `n` rows: an NPU given every row, times `whole`
    double time_of(int64_t rows, bool npu_along, int64_t n) const {
        return time(rows, npu_along) * (kind == worker_kind::npu && rows == n ? whole : 1.0);
    }
    double time(int64_t rows, bool npu_along = false) const {
        if (rows <= 0) return 0.0;
        if (npu_along && (next_to_npu != 1.0 || fixed_next_to_npu > 0.0)) {
            return next_to_npu * time(rows) + fixed_next_to_npu;
        }
        if (block_rows > 0) return fixed_s + blocks().units(rows) * launch_s;
        return fixed_s + (double) rows * row_s;
    }
    // its blocks as its worker describes them (launch_cost), without times
    launch_cost blocks() const {
        launch_cost h{ 0.0, 0.0, block_rows, launches_per_block };
        h.wide_rows[0]  = wide_rows;
        h.wide_units[0] = wide_units;
        return h;
    }
    plan_worker plan_view() const {
        plan_worker p{ kind, align };
        p.sliced = sliced;
        if ((hint || units_hint) && block_rows > 0) p.cost = blocks();
        if (hint && block_rows > 0) {
            p.cost.fixed_s  = fixed_s * hint_error;
            p.cost.launch_s = launch_s * hint_error;
        }
        return p;
    }
};

// The CPU at 5 us per row (a 1024 x 512 slice of a Q4_0 multiply on a desktop CPU, roughly), its fixed cost small.
inline sim_worker sim_cpu(double row_s = 5e-6, int64_t align = 4) {
    sim_worker w{ worker_kind::cpu, align };
    w.fixed_s = 20e-6;
    w.row_s   = row_s;
    return w;
}

inline sim_worker sim_gpu(double row_s, int64_t align = 1) {
    sim_worker w{ worker_kind::gpu, align };
    w.fixed_s = 50e-6;
    w.row_s   = row_s;
    return w;
}

// An NPU at a flat rate, pinned on purpose: `speedup` times as fast per row as a CPU of `cpu_row_s`, launching 512-row
// blocks after 180 us of setup (for the planner's behaviour across speeds; sim_npu_8700g is the silicon's).
inline sim_worker sim_npu(double speedup, bool blocks, bool hint, double cpu_row_s = 5e-6) {
    sim_worker w{ worker_kind::npu, 1 };
    w.fixed_s = 180e-6;
    if (blocks) {
        w.block_rows = 512;
        w.launch_s   = 512 * cpu_row_s / speedup;
        w.hint       = hint;
    } else {
        w.row_s = cpu_row_s / speedup;
    }
    return w;
}

// The NPU as the XDNA1 timing model has it (src/npu/xdna1_timing.h) on a multiply of 512 tokens x K = 1,024: blocks of
// 256 rows, and of 1,024 where the rows fill one, of the design the worker would choose (the wide tile, m64·k64·n32,
// or the narrow one, m16·k64·n64), each launch after the queued gap; the first dispatch as its fixed cost.
inline sim_worker sim_npu_8700g(bool wide_tile = true, double clock_hz = xdna1_clock_default_hz) {
    xdna1_tile t;
    if (wide_tile) { t.m = 64; t.k = 64; t.n = 32; }
    auto launch = [&](int64_t rows) {
        xdna1_block b;
        b.M = 512; b.K = 1024; b.N = rows;
        return xdna1_queued_s + xdna1_block_seconds(t, b, clock_hz);
    };
    sim_worker w{ worker_kind::npu, 1 };
    w.fixed_s    = xdna1_dispatch_s;
    w.block_rows = 256;
    w.launch_s   = launch(256);
    w.wide_rows  = 1024;
    w.wide_units = launch(1024) / w.launch_s;
    w.hint       = true;
    return w;
}

struct sim_result {
    std::vector<row_range> ranges;
    double makespan = 0.0;   // noise-free: the time the split itself costs
    int64_t npu_rows = 0;
    int64_t decision = -1;   // the NPU rows auto had settled on when it planned this call
    bool    reprobe  = false; // the NPU's rows differ from that decision: a re-probe or a probe of another size
};

class simulation {
  public:
    simulation(planner_options o, std::vector<sim_worker> ws, int64_t n_rows, double noise = 0.0, uint64_t seed = 1)
        : own(new split_planner(std::move(o))), planner(*own), workers(std::move(ws)), n(n_rows), noise(noise), rng(seed) {
        key.op = GGML_OP_MUL_MAT; key.type = GGML_TYPE_Q4_0; key.k = 1024; key.rows = n; key.tokens = 512;
        for (const sim_worker & w : workers) view.push_back(w.plan_view());
    }
    // another shape on a planner shared with other simulations (`k` inputs, `n_rows` rows; the workers as given)
    simulation(split_planner & shared, std::vector<sim_worker> ws, int64_t k, int64_t n_rows, double noise = 0.0,
               uint64_t seed = 1)
        : planner(shared), workers(std::move(ws)), n(n_rows), noise(noise), rng(seed) {
        key.op = GGML_OP_MUL_MAT; key.type = GGML_TYPE_Q4_0; key.k = k; key.rows = n; key.tokens = 512;
        for (const sim_worker & w : workers) view.push_back(w.plan_view());
    }

    // multiplier of worker `kind`'s time at call `call` (1-based): forced outliers
    std::function<double(int64_t call, worker_kind kind)> outlier;
    // every `stall_every`-th multiply in which the NPU takes rows beside the CPU also waits `stall_s` (a thread waiting
    // for a core): a cost of the split that no worker's own time shows, only the multiply's (report_outcome)
    int64_t stall_every = 0;
    double  stall_s = 0.0;
    // every `hiccup_every`-th multiply, whatever its share, waits `hiccup_s` (the machine's: a thread preempted)
    int64_t hiccup_every = 0;
    double  hiccup_s = 0.0;
    // what a multiply with the NPU on `npu_rows` costs besides its workers' times, which only its own time shows
    std::function<double(int64_t npu_rows)> wall_extra;
    // the first `first_uses` multiplies meet their weight for the first time (llama-bench's warm-up prompt, a layer
    // each): the NPU's weight is not ready yet (plan_worker::ready), and as the engine does for a multiply in which
    // the NPU converted one, its own time (report_outcome) is not reported
    int64_t first_uses = 0;
    int64_t splits = 0;

    sim_result step() {
        calls++;
        const bool first_use = calls <= first_uses;
        std::vector<plan_worker> v = view;
        for (plan_worker & p : v) if (p.kind == worker_kind::npu && first_use) p.ready = false;
        sim_result r;
        r.ranges = planner.plan(key, n, v);
        r.decision = planner.npu_rows_of(key);
        std::uniform_real_distribution<double> u(1.0 - noise, 1.0 + noise);
        const bool npu_along = npu_rows_in(r.ranges) > 0;
        for (size_t i = 0; i < workers.size(); ++i) {
            const int64_t rows = r.ranges[i].size();
            const double  t    = time_of(i, rows, npu_along);
            r.makespan = std::max(r.makespan, workers[i].waited(t));
            if (workers[i].kind == worker_kind::npu) {
                r.npu_rows = rows;
                r.reprobe  = r.decision >= 0 && rows != r.decision;
            }
            if (rows == 0) continue;
            double measured = t * (noise > 0.0 ? u(rng) : 1.0);
            if (outlier) measured *= outlier(calls, workers[i].kind);
            const double fixed = workers[i].reports_fixed ? workers[i].fixed_s * measured / t : -1.0;
            work_record rec = work_record::measured(workers[i].kind, rows, measured, fixed);
            if (workers[i].kind == worker_kind::npu && workers[i].head_s > 0.0) rec.head_seconds = workers[i].head_s;
            planner.learn(key, rec);
        }
        // a draw per split, as the CPU's regrouping (a cost since removed) took one: the noise every simulation sees,
        // and the bounds its tests were set against, stay the same (the sweep's worst case moves past them otherwise)
        if (split_beside_cpu(r.ranges) && noise > 0.0) (void) u(rng);
        if (split_beside_cpu(r.ranges) && stall_every > 0 && ++splits % stall_every == 0) r.makespan += stall_s;
        if (wall_extra) r.makespan += wall_extra(r.npu_rows);
        if (hiccup_every > 0 && calls % hiccup_every == 0) r.makespan += hiccup_s;
        if (!first_use || !npu_along) planner.report_outcome(key, r.npu_rows, r.makespan * (noise > 0.0 ? u(rng) : 1.0));
        return r;
    }

    // the noise-free makespan of `ranges`
    double makespan(const std::vector<row_range> & ranges) const {
        double m = 0.0;
        const bool npu_along = npu_rows_in(ranges) > 0;
        for (size_t i = 0; i < workers.size(); ++i) m = std::max(m, workers[i].waited(time_of(i, ranges[i].size(), npu_along)));
        return m + (wall_extra ? wall_extra(npu_rows_in(ranges)) : 0.0);
    }

    // the NPU and the CPU both have rows
    bool split_beside_cpu(const std::vector<row_range> & ranges) const {
        bool npu = false, cpu = false;
        for (size_t i = 0; i < workers.size(); ++i) {
            npu = npu || (workers[i].kind == worker_kind::npu && !ranges[i].empty());
            cpu = cpu || (workers[i].kind == worker_kind::cpu && !ranges[i].empty());
        }
        return npu && cpu;
    }

    // worker i's noise-free time for `rows` of this multiply
    double time_of(size_t i, int64_t rows, bool npu_along) const { return workers[i].time_of(rows, npu_along, n); }

    int64_t npu_rows_in(const std::vector<row_range> & ranges) const {
        for (size_t i = 0; i < workers.size(); ++i) {
            if (workers[i].kind == worker_kind::npu) return ranges[i].size();
        }
        return 0;
    }

    // The best noise-free makespan over every split the planner may choose: the NPU on whole steps (or every row),
    // the GPU/CPU boundary on any multiple of their alignments.
    double optimum(int64_t step = 256) const {
        const sim_worker * w[3] = { nullptr, nullptr, nullptr };
        for (const sim_worker & s : workers) w[(int) s.kind] = &s;
        int64_t a_rest = 1;
        for (const sim_worker & s : workers) { step = std::lcm(step, s.align); if (s.kind != worker_kind::npu) a_rest = std::lcm(a_rest, s.align); }
        int64_t npu_r = 0;   // the NPU's rows of the split being timed: the others are slower next to it
        auto t = [&](const sim_worker * s, int64_t r) { return s ? s->waited(s->time_of(r, npu_r > 0, n)) : (r > 0 ? 1e30 : 0.0); };
        double best = std::numeric_limits<double>::max();
        std::vector<int64_t> cands;
        for (int64_t r = 0; r < n; r += step) cands.push_back(r);
        cands.push_back(n);
        for (int64_t r : w[0] ? cands : std::vector<int64_t>{ 0 }) {
            npu_r = r;
            const int64_t left = n - r;
            if (!w[1]) {
                best = std::min(best, std::max(t(w[0], r), t(w[2], left)));
                continue;
            }
            for (int64_t g = 0; g <= left; g = (g + a_rest > left && g < left) ? left : g + a_rest) {
                best = std::min(best, std::max({ t(w[0], r), t(w[1], g), t(w[2], left - g) }));
                if (g == left) break;
            }
        }
        return best;
    }

    std::unique_ptr<split_planner> own;
    split_planner & planner;
    std::vector<sim_worker> workers;
    std::vector<plan_worker> view;
    shape_key key;
    int64_t n;
    double noise;
    std::mt19937_64 rng;
    int64_t calls = 0;
};

}  // namespace xdna_test
