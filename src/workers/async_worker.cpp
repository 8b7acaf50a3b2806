#include "workers/async_worker.h"

#include "util/clock.h"
#include "util/spin.h"

#include <algorithm>

namespace xdna {

// How long a hand-off is spun for before the thread sleeps after all: the CPU threads' conversion of a prompt's
// activations takes 0.07-0.17 ms at -t 8 (16 vCPUs) and up to ~2 ms on one thread of the 2-CPU VM; past that the
// spinning core is not worth more than a wake-up.
static constexpr double async_worker_spin_s = 0.002;

async_worker::~async_worker() {
    stop_thread();
}

void async_worker::start_thread() {
    std::lock_guard<std::mutex> lock(mtx);
    if (running) return;
    running = true;
    thread = std::thread([this] { loop(); });
}

void async_worker::stop_thread() {
    {
        std::lock_guard<std::mutex> lock(mtx);
        if (!running) return;
        running = false;
    }
    cv.notify_all();
    thread.join();
}

void async_worker::begin(const multiply & m, row_range rows) {
    std::unique_lock<std::mutex> lock(mtx);
    cv.wait(lock, [this] { return !owned; });
    owned    = true;
    job      = &m;
    job_rows = rows;
    done     = false;
    if (!running) {
        // no thread (it failed to start, or was stopped): report instead of hanging
        result  = work_record::failed(work_failure::device_unavailable, "its worker thread is not running");
        done    = true;
        return;
    }
    prepared = false;
    pending  = true;   // the thread takes the job now and sets it up while the caller's threads prepare it
    cv.notify_all();
    lock.unlock();     // the hook runs without the lock: the thread waits for `prepared` before it runs the job
    try {
        before_start(m, rows);
    } catch (const std::exception &) {
        // a preparation only: the worker's thread does the work itself
    }
    lock.lock();
    handed_at = now_seconds();
    prepared  = true;
    cv.notify_all();
}

void async_worker::begin_driven(const multiply & m, row_range rows) {
    if (!drivable()) return begin(m, rows);
    std::unique_lock<std::mutex> lock(mtx);
    cv.wait(lock, [this] { return !owned; });
    owned  = true;
    driven = true;
    done   = false;
    lock.unlock();   // the worker is ours and its thread idle: set up without the lock
    try {
        before_start(m, rows);
    } catch (const std::exception &) {
        // a preparation only: the work converts what it needs itself
    }
    driven_begin(m, rows);
}

work_record async_worker::end() {
    std::unique_lock<std::mutex> lock(mtx);
    if (driven) {
        lock.unlock();
        const double t0 = now_seconds();
        work_record r;
        try {
            r = driven_end();
        } catch (const std::exception & e) {
            r = work_record::failed(work_failure::device_run, e.what());
        }
        if (r.seconds == 0.0) r.seconds = now_seconds() - t0;
        lock.lock();
        driven = false;
        owned  = false;
        cv.notify_all();
        return r;
    }
    if (!done && spin.load(std::memory_order_relaxed)) {
        lock.unlock();
        spin_until([this] { return done.load(); }, async_worker_spin_s);
        lock.lock();
    }
    cv.wait(lock, [this] { return done.load(); });
    work_record r = result;
    owned = false;
    done  = false;
    cv.notify_all();
    return r;
}

void async_worker::loop() {
    std::unique_lock<std::mutex> lock(mtx);
    for (;;) {
        cv.wait(lock, [this] { return pending || !running; });
        if (pending) {
            pending = false;
            const multiply & m = *job;
            const row_range rows = job_rows;
            lock.unlock();
            try {
                set_up(m, rows);
            } catch (const std::exception &) {
                // a head start only: run() does what it left
            }
            if (spin.load(std::memory_order_relaxed)) {
                spin_until([this] { return prepared.load(); }, async_worker_spin_s);
            }
            lock.lock();
            cv.wait(lock, [this] { return prepared.load(); });
            const double handed = handed_at;
            lock.unlock();
            const double t0 = now_seconds();
            work_record r;
            try {
                r = run(m, rows);
            } catch (const std::exception & e) {
                // the workers catch their device's errors themselves; this is the last guard of the thread
                r = work_record::failed(work_failure::device_run, e.what());
            }
            if (r.seconds == 0.0) r.seconds = now_seconds() - t0;
            // the wait for this thread to run is part of what the work cost the caller: where cores are short it can
            // be longer than the work (a fixed cost, whatever the rows)
            const double woke = std::max(0.0, t0 - handed);
            r.seconds += woke;
            if (r.fixed_seconds >= 0.0) r.fixed_seconds += woke;
            if (r.head_seconds >= 0.0) r.head_seconds += woke;
            lock.lock();
            result = r;
            done   = true;
            cv.notify_all();
            continue;
        }
        if (!running) return;
    }
}

}  // namespace xdna
