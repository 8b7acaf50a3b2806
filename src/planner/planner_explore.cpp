// What the auto split measures beyond its models' best split (planner.h): the NPU's other sizes, the CPU alone, a part
// of a shape the NPU took whole, the NPU's whole, and the shares either side of the settled one, each at a cost kept
// in check by back-offs. auto_npu_rows (planner.cpp) asks measured_npu_rows and near_npu_rows first.
#include "planner/planner.h"

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

int64_t lcm_of(int64_t a, int64_t b) { return std::lcm(std::max<int64_t>(a, 1), std::max<int64_t>(b, 1)); }

}  // namespace

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
                              (npu_wait(st, n) <= opts.whole_try * makespan(st, n, r, p, p_alone) ||
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

}  // namespace xdna
