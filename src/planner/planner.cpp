#include "planner/planner.h"

#include "util/log.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace xdna {

namespace {

int64_t round_down(int64_t v, int64_t a) { return a > 1 ? v / a * a : v; }
int64_t round_up(int64_t v, int64_t a) { return a > 1 ? (v + a - 1) / a * a : v; }
int64_t lcm_of(int64_t a, int64_t b) { return std::lcm(std::max<int64_t>(a, 1), std::max<int64_t>(b, 1)); }

}  // namespace

split_planner::split_planner(planner_options o) : opts(std::move(o)) {
    if (opts.npu_step < 1) opts.npu_step = 1;
    if (opts.reprobe_every < 1) opts.reprobe_every = 1;
    if (opts.reprobe_max_every < opts.reprobe_every) opts.reprobe_max_every = opts.reprobe_every;
    if (!(opts.hysteresis >= 0.0)) opts.hysteresis = 0.0;
}

void split_planner::assign_experts(multiply & m) const {
    if (!m.is_id() || m.routing.experts() == 0) return;
    m.cpu_expert.assign(m.routing.experts(), 0);
    for (int64_t e = 0; e < m.routing.experts(); ++e) {
        const int64_t n = m.routing.tokens_of(e);
        m.cpu_expert[e] = n > 0 && n < opts.moe_min_tokens;
    }
}

namespace {
// the median of v (the lower one of an even count); 0 for none
double median_of(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::nth_element(v.begin(), v.begin() + (v.size() - 1) / 2, v.end());
    return v[(v.size() - 1) / 2];
}
}  // namespace

void split_planner::seed_from_others(const shape_key & key, shape_state & st) const {
    const double flop_row = key.rows > 0 ? key.flops() / (double) key.rows : 0.0;
    if (!(flop_row > 0.0)) return;
    std::vector<double> along, alone, launch, fixed, whole;
    for (const auto & [k, o] : shapes) {
        if (&o == &st || k.rows <= 0) continue;
        const double o_flop_row = k.flops() / (double) k.rows;
        if (k.type == key.type && o.model[CPU].samples() >= 1) along.push_back(o.model[CPU].slope() / o_flop_row);
        if (k.type == key.type && o.cpu_alone.samples() >= 2) alone.push_back(o.cpu_alone.slope() / o_flop_row);
        if (o.npu_split && o.model[NPU].samples() >= 1 && o.hint.launch_s > 0.0 && o.hint.fixed_s > 0.0) {
            launch.push_back(o.model[NPU].slope() / o.hint.launch_s);
            fixed.push_back(o.npu_fixed.slope() / o.hint.fixed_s);
        }
        // (of the shapes at their turn: begun ahead, the whole is what is left of it at the turn, npu_wait)
        const double o_model = npu_time(o, k.rows);
        if (!k.ahead && o.npu_whole.samples() >= 2 && o_model > 0.0) whole.push_back(o.npu_whole.slope() / o_model);
    }
    // only what the shape has not measured itself: its own first measurement replaces a seed
    if (!along.empty() && st.model[CPU].samples() == 0) st.model[CPU].set_prior(0.0, median_of(along) * flop_row, false);
    if (!along.empty() && st.cpu_all.samples() == 0) st.cpu_all.set_prior(0.0, median_of(along) * flop_row, false);
    if (!alone.empty() && st.cpu_alone.samples() == 0) st.cpu_alone.set_prior(0.0, median_of(alone) * flop_row, false);
    st.seeded_alone = !alone.empty() && (!along.empty() || st.model[CPU].samples() > 0);
    const bool hinted = st.hint.launch_s > 0.0 && st.hint.fixed_s > 0.0;
    if (!launch.empty() && hinted && st.model[NPU].samples() == 0) {
        st.npu_split = true;
        st.model[NPU] = cost_model();
        st.model[NPU].set_prior(0.0, median_of(launch) * st.hint.launch_s, false);
        st.npu_fixed.set_prior(0.0, median_of(fixed) * st.hint.fixed_s, false);
    }
    // a start only: where it does not make the whole the best split but puts it close, the whole is still tried
    // (a prior the shape never measures would keep a pessimistic guess for good)
    if (!whole.empty() && !key.ahead && st.npu_whole.samples() == 0 && st.model[NPU].known()) {
        st.npu_whole.set_prior(0.0, median_of(whole) * npu_time(st, key.rows), false);
    }
    // seeded for good once the shape has measured the NPU and the CPU itself, and the CPU alone (or has it seeded)
    st.seed_done = st.model[NPU].samples() > 0 && st.model[CPU].samples() > 0 &&
                   (st.cpu_alone.samples() >= 3 || st.seeded_alone);
}

double split_planner::npu_work(const shape_state & st, int64_t rows) const {
    if (rows <= 0) return 0.0;
    if (!st.hint.blocks()) return (double) rows;
    return st.hint.units(rows);   // launches of its narrowest block: a wider block's launch counts as its cost
}

double split_planner::npu_time(const shape_state & st, int64_t rows) const {
    if (rows <= 0) return 0.0;
    const double t = st.model[NPU].predict(npu_work(st, rows));
    return st.npu_split ? st.npu_fixed.slope() + t : t;
}

double split_planner::npu_wait(const shape_state & st, int64_t rows) const {
    const double t = npu_time(st, rows);
    // done before its turn, the multiply waits only for the kept rows' copy: not modelled (every row is then best)
    return st.npu_head.known() ? std::max(0.0, t - st.npu_head.slope()) : t;
}

const cost_model & split_planner::cpu_model(const shape_state & st, bool has_gpu, bool npu_along) const {
    // next to a GPU the CPU's share is small and its time mostly fixed costs: the two situations cannot be told apart
    // from it, so all its measurements count together
    if (has_gpu) return st.cpu_all;
    // the model of the situation asked about, once both are measured and clearly apart; else all measurements
    const cost_model & along = st.model[CPU], & alone = st.cpu_alone;
    if (along.known() && alone.known()) {
        const double ratio = along.slope() / alone.slope(), gap = 1.0 + opts.cpu_interference;
        if (ratio > gap || ratio * gap < 1.0) return npu_along ? along : alone;
    }
    return st.cpu_all;
}

double split_planner::rest_sec_per_row(const shape_state & st, bool has_gpu, bool has_cpu, bool npu_along) const {
    // the GPU and the CPU together, sharing rows in proportion to their speed, finish m rows in m / (rate sum)
    double rate = 0.0;
    if (has_gpu) {
        if (!st.model[GPU].known()) return -1.0;
        rate += 1.0 / st.model[GPU].slope();
    }
    if (has_cpu) {
        const cost_model & c = cpu_model(st, has_gpu, npu_along);
        if (!c.known()) return -1.0;
        rate += 1.0 / c.slope();
    }
    return rate > 0.0 ? 1.0 / rate : -1.0;
}

// The others beside the NPU. Where the CPU's team drives the NPU, its rows are cut into slices with the NPU's host
// work between them (plan_worker::sliced), and where the CPU next to the NPU is then clearly slower than alone
// (cpu_model tells the two apart) the difference is a fixed cost per multiply, not a cost per row: the slices' ends
// cost the same whatever the rows.
// Measured at -t 16 of 16 cores, the NPU emulated at 1,441 GFLOP/s, fixed shares: K and V (1,024 rows, a pair) took
// 0.79 ms on 256 rows and 1.28 on 512, 0.31 ms + the CPU alone's 1.9 us a row; O (K = 2,048) 0.79 and 1.18, down
// (K = 3,072) 1.13 and 1.69, 0.2-0.4 ms over the CPU alone's line. Taken as a cost per row (3.1 us at 256 rows), it put
// 512 rows at 1.59 ms and kept the CPU's part short: auto gave the NPU 0.54-0.63 of the rows, 0.943 of share 0.5 (five
// passes). So the readings' excess over the CPU alone's time for their rows is the fixed part, and the rows cost what
// the CPU alone's do. Not where the CPU next to the NPU is the faster (the CPU alone measured slow), nor next to a
// GPU, nor before the CPU has been measured next to the NPU at all (a seed from the other shapes); nor where the NPU
// worker's own thread drives the NPU: there it competes with the CPU's threads for as long as both compute, a cost
// that grows with the rows (-t 8 of 16 cores, 350 GFLOP/s, the CPU beside the NPU 7-17% slower a row: with that
// taken as fixed too, share 0.25's multiplies took 0.979 of auto's time, 1.052 before; two passes and five).
split_planner::rest_cost split_planner::rest_beside(const shape_state & st, bool has_gpu, bool has_cpu,
                                                    bool cpu_sliced) const {
    rest_cost c;
    c.per_row = rest_sec_per_row(st, has_gpu, has_cpu, true);
    if (has_gpu && c.known()) c.fixed = c.fixed_alone = gpu_rest_fixed(st, has_cpu);   // the GPU's submit and copies (planner_gpu.cpp)
    const cost_model & along = st.model[CPU], & alone = st.cpu_alone;
    if (!cpu_sliced || has_gpu || !has_cpu || !c.known() || &cpu_model(st, false, true) != &along ||
        along.samples() == 0 || !(along.slope() > alone.slope())) {
        return c;
    }
    const double fixed = along.excess_over(alone.slope());
    if (fixed > 0.0) {
        c.fixed   = fixed;
        c.per_row = alone.slope();
    }
    return c;
}

double split_planner::makespan(const shape_state & st, int64_t n, int64_t r, const rest_cost & p,
                               double p_alone) const {
    if (r == n && st.npu_whole.known()) return st.npu_whole.slope();
    if (r == 0) return (double) n * p_alone + p.fixed_alone;
    return std::max(npu_wait(st, r), p.time(n - r));
}

int64_t split_planner::best_npu_rows(const shape_state & st, int64_t n, int64_t step, const rest_cost & p,
                                     double p_alone, bool part) const {
    // Candidates are whole steps, and every row. The NPU's predicted time grows with its rows and the others' time
    // shrinks, so the best candidate is where the two cross: found by bisection in O(log(n / step)).
    const int64_t n_cand = (n + step - 1) / step;   // candidate k gives min(k * step, n) rows
    auto rows_of = [&](int64_t k) { return std::min(k * step, n); };
    int64_t lo = 1, hi = n_cand + 1;   // first k in [1, n_cand] with t_npu >= t_rest (n_cand + 1: none)
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        const int64_t r = rows_of(mid);
        if (npu_wait(st, r) >= p.time(n - r)) hi = mid; else lo = mid + 1;
    }
    // the crossing's two neighbours, every row (the NPU whole may be faster than its model of a part), and no NPU at
    // all (the others then run alone); of a part only, the neighbours short of every row
    const int64_t last = part ? n_cand - 1 : n_cand;
    int64_t best = part ? -1 : 0;
    for (int64_t k : { lo - 1, lo, last }) {
        if (k >= 1 && k <= last &&
            (best < 0 || makespan(st, n, rows_of(k), p, p_alone) < makespan(st, n, best, p, p_alone))) {
            best = rows_of(k);
        }
    }
    if (best < 0) return 0;
    // A partial block costs the NPU a whole launch: the rest of that block's rows cost it nothing more and the others
    // less, so the NPU gets its last block whole (measured: the NPU given 768 of 1,024 rows in 512-row blocks, the CPU
    // computing the other 256 beside it for nothing, where 1,024 finished as soon).
    if (best > 0 && st.hint.blocks()) best = std::min(n, round_up(best, lcm_of(step, st.hint.block_rows)));
    return part && best == n ? rows_of(last) : best;
}

void split_planner::settle(shape_state & st, int64_t n, int64_t step, int64_t best, const rest_cost & p,
                           double p_alone) {
    // Hysteresis: a new share only when it is predicted to save more than `margin`. Changes in quick succession
    // (within `margin_decay` multiplies, once the models rest on a full window of measurements) mean that the
    // candidates are within the noise of each other: the margin then doubles, up to `max_margin`, and halves again
    // after `margin_decay` multiplies without a change.
    const int64_t cur = st.npu_cur;
    const bool cur_valid = cur >= 0 && cur <= n && (cur % step == 0 || cur == n);
    if (st.margin < opts.hysteresis) st.margin = opts.hysteresis;
    if (++st.stable >= opts.margin_decay && st.margin > opts.hysteresis) {
        st.margin = std::max(opts.hysteresis, 0.5 * st.margin);
        st.stable = 0;
    }
    if (cur_valid && st.near_won.on(st.calls)) return;   // measured faster than the share the models chose: held
    if (cur_valid && makespan(st, n, cur, p, p_alone) <= makespan(st, n, best, p, p_alone) * (1.0 + st.margin)) return;
    if (cur_valid && cur != best) {
        st.changes++;
        // another change soon after the last one, once the models have their window of measurements
        if (st.calls > cost_model::window && st.calls - st.changed_at < opts.margin_decay) {
            st.margin = std::max(opts.hysteresis, std::min(opts.max_margin, 2.0 * st.margin));
        }
        st.changed_at = st.calls;
        st.stable     = 0;
    }
    st.npu_cur = best;
}

int64_t split_planner::auto_npu_rows(shape_state & st, int64_t n, int64_t step, int64_t probe, bool has_gpu,
                                     bool has_cpu, bool cpu_sliced, bool ready, plan_reason & why) {
    const rest_cost p = rest_beside(st, has_gpu, has_cpu, cpu_sliced);     // the others, next to the NPU
    const double p_alone = rest_sec_per_row(st, has_gpu, has_cpu, false);   // and without it
    if (!st.model[NPU].known() || !p.known() || p_alone <= 0.0) {
        why = plan_reason::probe;   // nothing to predict with yet: one block, measured side by side with the others
        return probe;
    }
    why = plan_reason::auto_split;
    st.part_probe = false;
    settle(st, n, step, best_npu_rows(st, n, step, p, p_alone), p, p_alone);
    // the decision, unless something must be measured first, or the share was measured slower than the NPU out
    const int64_t r = measured_npu_rows(st, n, step, probe, has_gpu, has_cpu, cpu_sliced, ready, p, p_alone, why);
    if (r > 0 && st.kept_out.on(st.calls)) {
        why = plan_reason::measured_slower;
        return 0;
    }
    if (r > 0 && r < n && why == plan_reason::auto_split && st.whole_won.on(st.calls)) {
        why = plan_reason::whole_measured_faster;
        return n;
    }
    if (has_cpu && !has_gpu && r > 0 && r < n && why == plan_reason::auto_split) {
        return near_npu_rows(st, n, step, r, p, p_alone, why);
    }
    return r;
}

bool plan_reason_is_auto(plan_reason r) {
    return r == plan_reason::probe || r == plan_reason::reprobe || r == plan_reason::auto_split ||
           r == plan_reason::measured_slower || r == plan_reason::whole_measured_faster ||
           r == plan_reason::neighbour_measured_faster;
}

std::vector<row_range> split_planner::plan(const shape_key & key, int64_t n_rows, const std::vector<plan_worker> & workers,
                                           plan_reason * why_out) {
    std::vector<row_range> out(workers.size());
    if (n_rows <= 0) return out;

    // the first worker of each kind takes part; a second one of the same kind gets nothing
    int  idx[3] = { -1, -1, -1 };
    bool has[3] = { false, false, false };
    int64_t step = opts.npu_step;
    for (size_t i = 0; i < workers.size(); ++i) {
        const int k = (int) workers[i].kind;
        if (k < 0 || k > 2 || idx[k] >= 0) continue;
        idx[k] = (int) i;
        has[k] = true;
        step = lcm_of(step, workers[i].align);   // an NPU boundary is the start of the GPU's or the CPU's range
    }
    if (!has[NPU] && !has[GPU] && !has[CPU]) return out;   // no worker: nothing can be planned (empty ranges)
    const int64_t align_rest = lcm_of(has[GPU] ? workers[idx[GPU]].align : 1, has[CPU] ? workers[idx[CPU]].align : 1);

    int64_t rows[3] = { 0, 0, 0 };
    plan_reason why = plan_reason::no_npu;
    std::string line;
    {
        std::lock_guard<std::mutex> lock(mtx);
        n_plans++;
        shape_state & st = shapes[key];
        st.calls++;
        st.calls_here++;

        if (has[NPU]) {
            const launch_cost & h = workers[idx[NPU]].cost;
            if (st.calls == 1 || !(h == st.hint)) {
                // the unit of the NPU's work changes with the blocks: measurements in another unit are dropped
                // (a MUL_MAT_ID's launches change with its routing from one multiply to the next: the same unit)
                if (!st.hint.same_unit(h)) st.model[NPU] = cost_model();
                st.hint = h;
                if (st.npu_split) st.model[NPU].set_prior(0.0, h.launch_s, false);
                else st.model[NPU].set_prior(h.fixed_s, h.launch_s, true);
            }
            // while the shape is young, from what the others have learned by now (the first layer's shapes are all
            // new before any of them has measured much)
            if (!st.seed_done && opts.npu_share < 0.0) seed_from_others(key, st);
            const int64_t probe = std::min(n_rows, st.hint.blocks() ? round_up(st.hint.block_rows, step) : step);
            if (!has[GPU] && !has[CPU]) {
                rows[NPU] = n_rows;
                why = plan_reason::only_worker;
            } else if (has[GPU] && key.flops() < opts.gpu_npu_min_gflop * 1e9) {
                why = plan_reason::below_gpu_size;
            } else if (opts.npu_share >= 0.0) {
                rows[NPU] = opts.npu_share >= 1.0 ? n_rows
                                                  : round_down((int64_t) std::llround(opts.npu_share * n_rows), step);
                why = plan_reason::fixed_share;
            } else {
                rows[NPU] = auto_npu_rows(st, n_rows, step, probe, has[GPU], has[CPU],
                                          has[CPU] && workers[idx[CPU]].sliced, workers[idx[NPU]].ready, why);
            }
        }
        if (!has[NPU]) why = plan_reason::no_npu;
        const int64_t left = n_rows - rows[NPU];
        if (has[GPU]) rows[GPU] = gpu_rows_of(st, left, align_rest, has[CPU]);
        st.planned_npu = rows[NPU];
        if (has[CPU]) rows[CPU] = left - rows[GPU];

        // logged: a new NPU share, a first plan, or the GPU/CPU boundary moved by more than 1% of the rows (a re-probe
        // is not a decision: it is counted, not logged)
        const bool changed = rows[NPU] != st.last[NPU] || st.last[GPU] < 0 || st.last[CPU] < 0 ||
                             std::abs(rows[GPU] - st.last[GPU]) * 100 > n_rows;
        if (why != plan_reason::reprobe && changed) {
            for (int k = 0; k < 3; ++k) st.last[k] = rows[k];
            if (opts.log || log_debug_on()) line = plan_line(key, st, rows, why, has);
        }
    }
    if (why_out) *why_out = why;
    if (!line.empty()) {
        if (opts.log) opts.log(line);
        else XDNA_LOG_DEBUG("%s", line.c_str());
    }

    int64_t at = 0;
    for (int k : { NPU, GPU, CPU }) {
        if (!has[k]) continue;
        out[idx[k]] = { at, at + rows[k] };
        at += rows[k];
    }
    GGML_ASSERT(at == n_rows);
    return out;
}

void split_planner::learn(const shape_key & key, const work_record & r) {
    const int k = (int) r.kind;
    // a failed run says nothing about speed (the engine decides about failures); a weight's first conversion is paid
    // once, not per multiply: taken out of what is learned
    if (!r.ok() || r.rows.empty() || k < 0 || k > 2) return;
    const int64_t rows = r.rows.size();
    const double seconds = r.seconds - r.once_seconds;
    const double fixed_s = r.fixed_seconds >= 0.0 ? std::max(0.0, r.fixed_seconds - r.once_seconds) : -1.0;
    std::lock_guard<std::mutex> lock(mtx);
    shape_state & st = shapes[key];
    const double x = k == NPU ? npu_work(st, rows) : (double) rows;
    if (k == NPU && st.npu_cur == 0 && st.model[NPU].known() && seconds < 0.5 * npu_time(st, rows)) {
        // a re-probe of a dropped NPU far faster than its model: what kept it out is no longer true (or never
        // was: bad measurements at the start), so the old measurements go
        st.model[NPU].forget();
        st.npu_fixed.forget();
    }
    const double head_s = k == NPU && r.head_seconds >= 0.0 ? r.head_seconds : -1.0;
    if (head_s >= 0.0) st.npu_head.add(1.0, std::max(head_s, 1e-9));
    if (k == NPU && rows == key.rows && key.rows > 0) {
        // every row on the NPU: learned apart (npu_whole), not as a part of the rows; begun ahead, what the multiply
        // waited for of it (done before its turn: next to nothing, the kept rows' copy)
        st.npu_whole.add(1.0, head_s >= 0.0 ? std::max(seconds - head_s, 1e-6) : seconds);
    } else if (k == NPU && fixed_s >= 0.0 && std::isfinite(seconds)) {
        if (st.part_probe && st.npu_split && seconds < npu_time(st, rows)) {
            // a part measured again while the NPU is on every row, faster than its models say: they rest on older
            // readings (the process's first multiplies), and the choice of every row on them
            st.model[NPU].forget();
            st.npu_fixed.forget();
        }
        if (!st.npu_split) {
            // from now on the fixed part is measured, not guessed: the launches' model starts again without one
            st.npu_split = true;
            st.model[NPU] = cost_model();
            st.model[NPU].set_prior(0.0, st.hint.launch_s, false);
        }
        st.npu_fixed.add(1.0, std::max(fixed_s, 1e-9));
        st.model[NPU].add(x, std::max(seconds - fixed_s, 0.05 * seconds));
    } else if (k == CPU) {
        // The CPU's first measurements can be far off (the first prompt's, at -t 16 of 16 cores up to 20x slow), and
        // the CPU alone is measured seldom: two readings in a row under half of what a model says replace it.
        st.cpu_all.add_or_restart(x, seconds);
        (st.planned_npu == 0 ? st.cpu_alone : st.model[CPU]).add_or_restart(x, seconds);
    } else if (k == GPU) {
        report_gpu(st, rows, seconds, fixed_s);   // planner_gpu.cpp
    } else {
        st.model[k].add(x, seconds);
    }
}

int64_t split_planner::npu_rows_of(const shape_key & key) const {
    std::lock_guard<std::mutex> lock(mtx);
    auto it = shapes.find(key);
    return it == shapes.end() ? -1 : it->second.npu_cur;
}

void split_planner::report_outcome(const shape_key & key, int64_t npu_rows, double seconds) {
    if (opts.npu_share >= 0.0 || !(seconds > 0.0) || !std::isfinite(seconds)) return;
    std::lock_guard<std::mutex> lock(mtx);
    shape_state & st = shapes[key];
    if (npu_rows == 0) {
        st.wall_out.add(seconds);
        return;
    }
    if (npu_rows == st.near_rows) {   // a share beside the settled one, measured against it (near_npu_rows)
        st.wall_near.add(seconds);
        return;
    }
    if (key.rows > 0 && npu_rows == key.rows) st.wall_whole.add(seconds);
    if (npu_rows != st.npu_cur) return;   // a probe of another size, not the share auto settled on
    if (st.wall_rows != npu_rows) {
        st.wall_split = wall_window();
        st.wall_rows  = npu_rows;
    }
    st.wall_split.add(seconds);
    if (st.wall_split.n < opts.outcome_samples) return;
    // Slower than with the NPU out, or than with the NPU on every row, whatever the models predict (they see each
    // worker, not what the split costs between and around them): the other for a while, twice as long each time it
    // happens again, then the split measured afresh. The split's mean without its longest multiply: one wait of the
    // machine's in a window (a thread preempted, which would have hit any share) is not the split's cost, and the few
    // readings of the others it is held against mostly have none (-t 16 of 16 cores, the NPU emulated at 3,140 GFLOP/s:
    // O's split, about 0.6 ms a multiply against 2.0 with the NPU out, was kept out for 64 multiplies: that process
    // ran at 1,436 prompt tokens/s, share 0.75 at 1,560 in the same pass; at 350 GFLOP/s likewise, 913 against 1,072).
    const double split = st.wall_split.mean_but_longest(), margin = 1.0 + opts.outcome_margin;
    outcome_spell * spell = nullptr;
    if (st.wall_out.n >= 2 && split > st.wall_out.mean() * margin) {
        spell = &st.kept_out;
        n_kept_out++;
    } else if (npu_rows < key.rows && st.wall_whole.n >= 2 && split > st.wall_whole.mean() * margin) {
        spell = &st.whole_won;
        n_whole_won++;
    }
    if (!spell) return;
    spell->start(st.calls, opts.out_every, std::max(opts.out_max_every, opts.out_every));
    st.wall_split = wall_window();
}

}  // namespace xdna
