// The NPU worker driven by the CPU worker's team between slices of its rows (worker::begin_driven, step_poll,
// step_take, end; docs/architecture.md, section 5): the set-up and first launches on the calling thread, the results
// taken at the team's boundaries, the rest of the call on the calling thread once the CPU's rows are done.
#include "workers/npu/npu_pipeline.h"

#include "util/clock.h"
#include "util/trace.h"

#include <algorithm>
#include <optional>

namespace xdna {

// Driven by the CPU worker's team (worker.h): the set-up and the first launches here, on the calling thread.
void npu_worker::driven_begin(const multiply & m, row_range rows) {
    drive.reset(new driven_call);
    driven_call & d = *drive;
    d.t0 = now_seconds();
    trace::scope ts("npu rows: start (driven)", rows.size());
    d.result = npu_worker_guard([&] {
        work_record r = open_call(d.c, m, rows, d.t0);
        if (r.ok() && !d.c.jobs.empty()) launch_first(d.c);
        return r;
    });
    d.polled_at = d.c.first_launched;
    d.stopped.store(!d.result.ok() || d.c.jobs.empty(), std::memory_order_release);
}

// The first launches of a call (as many as it keeps in flight).
void npu_worker::launch_first(call & c) {
    try {
        while (c.launched < std::min<int64_t>(c.depth, (int64_t) c.launches.size())) launch_next(c);
    } catch (...) {
        drain();
        throw;
    }
}

// A step's failure: kept for driven_end, and no more launches (the runs in flight are drained there).
void npu_worker::driven_call::fail(work_record r) {
    std::lock_guard<std::mutex> lock(mu);
    if (result.ok()) result = std::move(r);
    stopped.store(true, std::memory_order_release);
}

// A boundary's first phase, on one thread: how many launches in a row, from the next result to take, have finished.
// Waited for (at once: they have ended) so that the runtime counts them and a failed one throws here.
void npu_worker::step_poll(int ith, int) {
    if (ith != 0 || !drive) return;
    driven_call & d = *drive;
    (void) d.handed.load(std::memory_order_acquire);   // what the last step's last thread did (the team's barriers
                                                       // order it too, but ThreadSanitizer cannot see libgomp's)
    d.ready.store(0, std::memory_order_relaxed);
    if (d.stopped.load(std::memory_order_acquire)) return;
    call & c = d.c;
    const int64_t n = (int64_t) c.launches.size();
    d.step_t0 = now_seconds();
    trace::scope ts("poll (driven)");
    int64_t k = 0;
    const work_record r = npu_worker_guard([&] {
        for (int64_t i = c.taken; i < c.launched && rt->finished(slots[i % c.depth]->run); ++i, ++k) {
            rt->wait(slots[i % c.depth]->run);
            if (i == n - 1) {
                c.last_waited = now_seconds();
                d.npu_done = 0.5 * (d.polled_at + d.step_t0);
            }
        }
        return work_record();
    });
    d.polled_at = d.step_t0;
    if (!r.ok()) return d.fail(r);
    d.left.store(0, std::memory_order_relaxed);
    d.ready.store(k, std::memory_order_release);
}

// A boundary's second phase, on every thread: a part of every finished launch's result (the same tokens of each, so
// that the partial sums over K blocks are added in K order, as the worker's own thread adds them); the last thread to
// finish starts the launches that reuse their slots.
void npu_worker::step_take(int ith, int nth) {
    if (!drive) return;
    driven_call & d = *drive;
    const int64_t k = d.ready.load(std::memory_order_acquire);
    if (k == 0) return;
    call & c = d.c;
    bool finite = true;
    work_record r;
    {
        std::optional<trace::scope> ts;   // the team's first thread's part, on its lane
        if (ith == 0) ts.emplace("take results (driven)", k);
        r = npu_worker_guard([&] {
            for (int64_t i = c.taken; i < c.taken + k; ++i) {
                const launch & bl = c.launches[i];
                const int64_t t_end = std::min(c.tb, c.jobs[bl.job].n_tokens - bl.tbi * c.tb);
                finite = take_tokens(c, *slots[i % c.depth], i, t_end * ith / nth, t_end * (ith + 1) / nth) && finite;
            }
            return work_record();
        });
    }
    if (!finite) d.finite.store(false, std::memory_order_relaxed);
    if (!r.ok()) d.fail(r);
    if (d.left.fetch_add(1, std::memory_order_acq_rel) + 1 != nth) return;
    // the last one: every part of these results is taken
    c.taken += k;
    d.team_results += k;
    if (!d.stopped.load(std::memory_order_acquire)) {
        const work_record l = npu_worker_guard([&] {
            trace::scope ts("launch (driven)");
            while (c.launched < (int64_t) c.launches.size() && c.launched < c.taken + c.depth) launch_next(c);
            return work_record();
        });
        if (!l.ok()) d.fail(l);
    }
    d.team_seconds += now_seconds() - d.step_t0;
    d.handed.fetch_add(1, std::memory_order_release);   // to the next poll and to driven_end, on other threads
}

// The rest of a driven call, on the calling thread (the CPU worker's team lent to it, help()).
work_record npu_worker::driven_end() {
    if (!drive) return call_over(work_record::failed(work_failure::device_run, "no driven call to finish"));
    std::unique_ptr<driven_call> d = std::move(drive);
    (void) d->handed.load(std::memory_order_acquire);
    call & c = d->c;
    trace::scope ts("npu rows: finish (driven)", c.rows.size());
    c.finite = c.finite && d->finite.load(std::memory_order_acquire);
    work_record r;
    {
        std::lock_guard<std::mutex> lock(d->mu);
        r = d->result;
    }
    if (!r.ok()) {
        drain();
    } else if (!c.jobs.empty()) {
        const int64_t n = (int64_t) c.launches.size();
        const double t_fin = now_seconds();
        if (d->npu_done == 0.0 && c.launched == n && rt->finished(slots[(n - 1) % c.depth]->run)) {
            d->npu_done = 0.5 * (d->polled_at + t_fin);
        }
        r = npu_worker_guard([&] {
            run_pipeline(c);
            return close_call(c, d->t0);
        });
        // The NPU done before the CPU's rows, it only waited for them: its time runs to when its last run ended, as
        // the boundaries saw it (the planner learns the NPU's speed, not the CPU's; measured to the end, the NPU looked
        // as slow as the CPU's part whenever it finished first, and auto gave it ever fewer rows: -t 16 of 16 cores,
        // 3,140 GFLOP/s, auto 21% of the rows where a fixed 0.75 was 1.4x faster).
        if (r.ok() && d->npu_done > 0.0) {
            r.seconds       = std::max(d->npu_done, c.first_launched) - d->t0;
            r.fixed_seconds = c.first_launched - d->t0;
        }
    }
    if (r.seconds == 0.0) r.seconds = now_seconds() - d->t0;
    r.team_seconds = d->team_seconds;
    r.team_results = d->team_results;
    return call_over(r);
}

}  // namespace xdna
