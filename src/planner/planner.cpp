#include "planner/planner.h"

#include "util/log.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace xdna {

namespace {

// A shape gone to every row measures a part again this many multiplies later, the first time (see measured_npu_rows).
constexpr int64_t part_first = 2;

// A back-off: due once `skipped` reaches `gap` (at least `every`) multiplies, or `now`; each time it is due the gap
// doubles, up to `max_every`.
bool backoff_due(int64_t & skipped, int64_t & gap, int64_t every, int64_t max_every, bool now = false) {
    gap = std::max(gap, every);
    if (!now && ++skipped < gap) return false;
    skipped = 0;
    gap = std::min(2 * gap, std::max(max_every, every));
    return true;
}

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
        const double o_model = npu_time(o, k.rows);
        if (o.npu_whole.samples() >= 2 && o_model > 0.0) whole.push_back(o.npu_whole.slope() / o_model);
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
    if (!whole.empty() && st.npu_whole.samples() == 0 && st.model[NPU].known()) {
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
    return std::max(npu_time(st, r), p.time(n - r));
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
        if (npu_time(st, r) >= p.time(n - r)) hi = mid; else lo = mid + 1;
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

// All the NPU's measurements so far are of about one size, which cannot tell its fixed cost from its cost per row (and
// neither the worker's measurement nor a hint gave the fixed cost): once per shape, after `reprobe_every` multiplies,
// it measures a clearly different size a few times in a row (the next one up with at least twice the work, else the
// next one down with at most half). What is learned then is kept. The rows to measure now; -1 where no size is far
// enough away from `r` (then nothing is left to learn here).
int64_t split_planner::other_size_rows(shape_state & st, int64_t n, int64_t step, int64_t r) {
    st.explored++;
    const int64_t n_cand = (n + step - 1) / step;
    auto rows_of = [&](int64_t k) { return std::min(k * step, n); };
    const double x = npu_work(st, r);
    for (int64_t k = r / step + 1; k <= n_cand; ++k) {
        if (npu_work(st, rows_of(k)) >= cost_model::spread * x) return rows_of(k);
    }
    for (int64_t k = r / step - 1; k >= 1; --k) {
        if (npu_work(st, rows_of(k)) * cost_model::spread <= x) return rows_of(k);
    }
    st.explored = cost_model::per_side;
    return -1;
}

int64_t split_planner::measured_npu_rows(shape_state & st, int64_t n, int64_t step, int64_t probe, bool has_gpu,
                                         bool has_cpu, bool cpu_sliced, bool ready, const rest_cost & p, double p_alone,
                                         plan_reason & why) {
    const int64_t r = st.npu_cur;
    const cost_model & npu = st.model[NPU];
    if (npu.samples() < 2 && r < probe) {
        // one measurement may be the slow first call: the NPU keeps a block until a second one confirms it
        why = plan_reason::probe;
        return probe;
    }
    if (has_cpu && !has_gpu && r > 0 && st.cpu_alone.samples() < 3 && !st.seeded_alone) {
        // the CPU has only been measured next to the NPU, which slows it: before a share is trusted to beat the CPU
        // alone, the CPU alone is measured (three times, so that one odd call cannot decide)
        n_alone++;
        why = plan_reason::reprobe;
        return 0;
    }
    if (r == 0) {
        // dropped out: one block again after `reprobe_every` multiplies, then after twice as many each time the
        // NPU stays out, up to `reprobe_max_every` (a block on a slow NPU can cost several times the multiply)
        // (at once when the CPU next to it was just measured far faster than its model says: a second reading decides).
        // A re-probe due waits, up to as long again, for a multiply whose weight the NPU has converted already:
        // another layer's would cost it the one-time conversion on top (-t 16 of 16 cores, emulated NPU at 1,441
        // GFLOP/s: 41 weights converted in llama-bench's timed prompts, 8 ms each, as shapes were re-probed or
        // joined layer by layer).
        const bool now = st.model[CPU].doubted();
        if (!ready && !now && st.npu_skipped + 1 < 2 * std::max<int64_t>(st.reprobe_gap, opts.reprobe_every)) {
            st.npu_skipped++;
            return 0;
        }
        if (backoff_due(st.npu_skipped, st.reprobe_gap, opts.reprobe_every, opts.reprobe_max_every, now)) {
            n_reprobes++;
            why = plan_reason::reprobe;
            return probe;
        }
        return 0;
    }
    st.npu_skipped = 0;
    st.reprobe_gap = opts.reprobe_every;
    if (has_cpu && !has_gpu &&
        (st.cpu_alone.doubted() ||
         backoff_due(st.alone_skipped, st.alone_gap, alone_every_for(st, n, r, p, p_alone), opts.alone_max_every))) {
        // The CPU alone again now and then: the NPU's share is judged against it, and it was measured early (during
        // the first prompt, beside weights being converted and pages touched for the first time) or seeded from
        // another shape. Two readings far below the old ones replace them (report); after the first of them, a
        // second reading at once decides.
        n_alone++;
        why = plan_reason::reprobe;
        return 0;
    }
    if (has_cpu && !has_gpu && r == n && n > step && !st.whole_won.on(st.calls)) {
        const int64_t part = best_npu_rows(st, n, step, p, p_alone, true);
        if (part_may_win(st, n, part, p, p_alone) &&
            backoff_due(st.part_skipped, st.part_gap, part_first, opts.reprobe_max_every)) {
            // The NPU on every row by its models' choice: its model of a part, no longer measured, may rest on the
            // first multiplies of the process, those of a cold thread and untouched memory (the 16-core host, -t 8,
            // emulated at 1,441 GFLOP/s: a first probe of 256 rows took 2.5 ms of fixed cost, where 768 rows later
            // took 60-75 us; seeded from it, every shape kept the NPU on every row, 1,900 us a multiply, where 768
            // rows took 1,540). So the best part by the models, where it may be faster at all, is measured again,
            // `part_first` multiplies after the shape went to every row, then after `reprobe_every`, then after twice
            // as many each time, up to `reprobe_max_every`; a reading faster than the models predict replaces them
            // (report), and where the part is then faster the next decision takes it.
            st.part_gap = std::max<int64_t>(st.part_gap, opts.reprobe_every);   // the next after reprobe_every
            n_reprobes++;
            why = plan_reason::reprobe;
            st.part_probe = true;
            return part;
        }
    }
    // The NPU given every row, twice, for one of two reasons (the multiplies counted as size probes):
    // - to learn its time on the whole (npu_whole), where it is close to taking every row, or, where the CPU's team
    //   drives it, on half of them or more once the split has been measured (not before: a young model of a part, its
    //   fixed cost not yet told from its launches, can make a slow whole look the best); its model of a part cannot
    //   predict that time, and the outcome of those multiplies is compared with the split's (report_outcome). Where
    //   the team drives the NPU, its slices' boundaries slow it, and its model of a part can settle well short of a
    //   whole that is faster (docs/planner.md). Elsewhere a whole its model puts far off the split is not tried: in a
    //   short process each try is a multiply at up to twice the split's time;
    // - to time the whole's multiplies, where those tries fell where each multiply converts its layer's weight (a
    //   model's first prompt), which report_outcome does not count, and the split's multiplies take longer than the
    //   NPU alone took on every row: on a weight that is ready, twice a process. Not where the split is already
    //   faster than that time: a multiply is never shorter than its NPU's part. (The 16-core host, -t 8, emulated at
    //   3,140 GFLOP/s: Q's whole tried twice in the first prompt, then 1,536 of its 2,048 rows, 1,370-1,455 us a
    //   multiply in the timed prompts where share 1's took 1,040-1,110.)
    if (has_cpu && !has_gpu && r < n) {
        const bool split_timed = st.wall_rows == r && st.wall_split.n >= opts.outcome_samples;
        const bool to_learn = st.npu_whole.samples() < 2 && st.whole_tries < 2 &&
                              (npu_time(st, n) <= opts.whole_try * makespan(st, n, r, p, p_alone) ||
                               (cpu_sliced && (double) r >= opts.whole_share * (double) n && split_timed));
        const bool to_time = !to_learn && ready && st.wall_whole.n < 2 && st.whole_walls < 2 &&
                             st.npu_whole.samples() >= 2 && split_timed &&
                             st.wall_split.mean_but_longest() > st.npu_whole.slope();
        if (to_learn || to_time) {
            (to_learn ? st.whole_tries : st.whole_walls)++;
            n_explores++;
            why = plan_reason::reprobe;
            return n;
        }
    }
    if (npu.needs_spread() && !(st.hint.fixed_s > 0.0) && st.explored < cost_model::per_side &&
        (st.explored > 0 || ++st.explore_in >= opts.reprobe_every)) {
        // one size measured only: another, to tell the NPU's fixed cost from its cost per launch
        const int64_t other = other_size_rows(st, n, step, r);
        if (other > 0) {
            n_explores++;
            why = plan_reason::reprobe;
            return other;
        }
    }
    return r;
}

// Whether the NPU on `part` of the n rows, the CPU on the rest, may beat the NPU on every row, whatever the NPU's model
// of a part says: not where the CPU's rows alone, at the faster of its models (beside the NPU or alone), take longer
// than every row on the NPU by more than `whole_try`. Measuring such a part costs its multiply for nothing (the 2-CPU VM
// at -t 1, the NPU emulated at 3,140 GFLOP/s: K and V's part of 768 rows took 9.2 ms, the CPU's 256 rows at 34 us a
// row, where every row took 1.6 ms; one such part in each shape's timed multiplies).
bool split_planner::part_may_win(const shape_state & st, int64_t n, int64_t part, const rest_cost & p,
                                 double p_alone) const {
    if (part <= 0 || part >= n) return false;
    const double cpu_floor = (double) (n - part) * std::min(p.per_row, p_alone);
    return !(cpu_floor > opts.whole_try * makespan(st, n, n, p, p_alone));
}

// How often a shape whose NPU takes r rows measures the CPU alone again: after alone_every multiplies, or more where
// each measurement costs more than alone_cost of the multiplies between (the CPU alone predicted x times the split's
// time costs x - 1 of a multiply), up to alone_max_every. At -t 8 with the NPU emulated at 3,140 GFLOP/s the NPU took
// every row and the CPU alone, 3-6x slower, was measured 12 times in a llama-bench process of four prompts (now 6,
// all in the first). The CPU alone is predicted at its faster model, alone or next to the NPU (the NPU's host thread
// only slows the CPU): a model of the CPU alone measured slow at the start, which the measurement is there to
// correct, does not put it off when the CPU next to the NPU has since been measured fast.
int64_t split_planner::alone_every_for(const shape_state & st, int64_t n, int64_t r, const rest_cost & p,
                                       double p_alone) const {
    const cost_model & along = st.model[CPU];
    const double row_s = along.known() && along.slope() < p_alone ? along.slope() : p_alone;
    const double split = makespan(st, n, r, p, p_alone), extra = (double) n * row_s / split - 1.0;
    if (!(split > 0.0) || !(extra > 0.0) || !(opts.alone_cost > 0.0)) return opts.alone_every;
    const double every = std::min((double) opts.alone_max_every, std::ceil(extra / opts.alone_cost));
    return std::max<int64_t>(opts.alone_every, (int64_t) every);
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

// Beside the CPU alone (no GPU worker), a share one block of the NPU's either side of the one auto settled on (r) is
// measured against it now and then, by the multiplies' own times (report_outcome), and auto moves there where its
// multiplies took less time by more than `hysteresis` and by more than twice the noise of the two means: near the best
// split the models' errors of a few percent decide, and only measuring both settles it (-t 8 on 16 vCPUs, the NPU
// emulated at 1,441 GFLOP/s: auto gave the NPU 1,280 of Q's 2,048 rows, 1,589 us a multiply, where share 0.75's 1,536
// took 1,466). Not in a shape's first `reprobe_every` multiplies in the process (those find the share at all, and
// are all a short process has: llama-bench on 4 layers), and only while the settled share's multiplies take longer
// or shorter than the models predict by more than `hysteresis` (`error`): models that predict it right are trusted
// for its neighbours too. A side they predict slower than the settled share by more than that error and `hysteresis`
// is not tried: near the best split the two are close, and a try far off costs its multiplies for nothing (the same:
// the NPU on 512 of 1,024 rows, 2,400 us a multiply against 1,750 at 768, tried twice in each process in each of
// three shapes, where the models put it 2x slower).
// The first try as soon as the settled share has its walls, the side the models rank better first; after a try that
// lost, the other side, `reprobe_every` multiplies later, then twice as many each time, up to `out_max_every` (a try
// costs its multiplies at the other share: at -t 8, 350 GFLOP/s, none of nine tries in a process won); after one that
// won, the same side again once the new share has its walls. A share moved to is held against the models for
// `out_every` multiplies, twice as long each time, then they decide again. Each process tries afresh (none of this is
// kept in the state file): kept, tries went on in every process's timed prompts, and a move won in one process's
// slow spell was carried into the next (-t 8, 350 GFLOP/s: the NPU on 0.311, 0.338 and 0.349 of the rows in three
// processes each reading the last one's state, 0.965 of share 0.25; on the 2-CPU VM at -t 1 kept runs fell from
// 1.049 and 1.083 of the best share to 0.980 and 1.014).
int64_t split_planner::near_npu_rows(shape_state & st, int64_t n, int64_t step, int64_t r, const rest_cost & p,
                                     double p_alone, plan_reason & why) {
    if (st.near_rows < 0) {
        if (st.calls_here <= opts.reprobe_every || st.wall_rows != r || st.wall_split.n < opts.outcome_samples) return r;
        const double predicted = makespan(st, n, r, p, p_alone);
        const double error = std::fabs(st.wall_split.mean() / predicted - 1.0);
        if (!(error > opts.hysteresis)) return r;
        if (!backoff_due(st.near_skipped, st.near_gap, opts.reprobe_every, opts.out_max_every, st.near_gap == 0)) {
            return r;
        }
        const int64_t g = st.hint.blocks() ? lcm_of(step, st.hint.block_rows) : step;
        int64_t side[2] = { r - g >= g ? r - g : -1, r + g < n ? r + g : -1 };   // not none, nor every row
        double  side_s[2] = { 0.0, 0.0 };
        for (int i = 0; i < 2; ++i) {   // nor one the models put further off than they can be wrong by
            if (side[i] > 0) side_s[i] = makespan(st, n, side[i], p, p_alone);
            if (side[i] > 0 && !(side_s[i] < predicted * (1.0 + error + opts.hysteresis))) side[i] = -1;
        }
        if (st.near_side < 0) st.near_side = side[0] < 0 ? 1 : side[1] < 0 ? 0 : side_s[1] < side_s[0] ? 1 : 0;
        if (side[st.near_side] < 0) st.near_side ^= 1;
        if (side[st.near_side] < 0) return r;
        st.near_rows = side[st.near_side];
        st.wall_near = wall_window();
        n_near++;
    }
    if (st.wall_rows != r) {   // the settled share moved during the try: it is no longer beside it
        st.near_rows = -1;
        return r;
    }
    if (st.wall_near.n < opts.near_samples) {
        why = plan_reason::reprobe;
        return st.near_rows;
    }
    const int64_t near = st.near_rows;
    st.near_rows = -1;
    const double gain = st.wall_split.mean() - st.wall_near.mean();
    if (!(gain > opts.hysteresis * st.wall_near.mean()) ||
        !(gain * gain > 4.0 * (st.wall_split.mean_var() + st.wall_near.mean_var()))) {
        st.near_side ^= 1;   // the other side next time
        return r;
    }
    n_near_won++;
    st.changes++;
    st.changed_at = st.calls;
    st.stable     = 0;
    st.npu_cur    = near;
    st.near_gap   = 0;   // the same side again, as soon as the new share has its walls
    st.near_won.start(st.calls, opts.out_every, std::max(opts.out_max_every, opts.out_every));
    why = plan_reason::neighbour_measured_faster;
    return near;
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
            const npu_cost_hint & h = workers[idx[NPU]].cost;
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
            if (opts.log || get_config().debug) line = plan_line(key, st, rows, why, has);
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

void split_planner::report(const shape_key & key, worker_kind kind, int64_t rows, double seconds, bool ok,
                           double fixed_s) {
    const int k = (int) kind;
    if (rows <= 0 || k < 0 || k > 2) return;
    std::lock_guard<std::mutex> lock(mtx);
    totals & t = sums[k];
    t.runs++;
    if (std::isfinite(seconds) && seconds > 0.0) t.seconds += seconds;
    if (!ok) {
        t.failures++;
        return;   // a failed run says nothing about speed; the workers' owner decides about failures
    }
    t.rows += rows;
    if (key.rows > 0) t.flops += key.flops() * (double) rows / (double) key.rows;

    shape_state & st = shapes[key];
    const double x = k == NPU ? npu_work(st, rows) : (double) rows;
    if (k == NPU && st.npu_cur == 0 && st.model[NPU].known() && seconds < 0.5 * npu_time(st, rows)) {
        // a re-probe of a dropped NPU far faster than its model: what kept it out is no longer true (or never
        // was: bad measurements at the start), so the old measurements go
        st.model[NPU].forget();
        st.npu_fixed.forget();
    }
    if (k == NPU && rows == key.rows && key.rows > 0) {
        // every row on the NPU: learned apart (npu_whole), not as a part of the rows
        st.npu_whole.add(1.0, seconds);
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
