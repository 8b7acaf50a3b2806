// Base for the workers that drive a device (NPU, GPU) from a persistent thread of their own: begin() hands the rows
// to that thread and returns, end() waits for them. A fresh thread per multiply would cost ~176 us; a persistent one
// that mostly sleeps costs nothing while the CPU worker computes on the calling thread.
//
// One multiply at a time: when several backend instances share the worker, a second begin() waits until the first
// caller's end() has collected its result.
//
// begin() hands the job to the thread before the caller's threads prepare the work (before_start): the thread sets up
// what needs nothing of theirs (set_up) meanwhile, and runs the work once they are done. Where the caller leaves the
// thread a core of its own (own_core), the two hand-offs of a multiply are spun for instead of slept on: the thread
// spins until the preparation is over, end() until the result is there. Asleep, each cost a wake-up (at share 1, -t 8
// on 16 vCPUs, 3,140 GFLOP/s: 33 us in the mean between the activations' conversion and the thread's start, and 19 us
// between the thread's end and the caller's, of ~1.1-2.6 ms per multiply).
#pragma once

#include "workers/worker.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace xdna {

class async_worker : public worker {
  public:
    ~async_worker() override;

    void begin(const multiply & m, row_range rows) final;
    // The caller's team drives the work (worker.h) where the derived class can be driven: driven_begin() on the
    // calling thread now, driven_end() in end(); the worker's thread takes no part.
    void begin_driven(const multiply & m, row_range rows) final;
    work_record end() final;
    void own_core(bool yes) final { spin.store(yes, std::memory_order_relaxed); }

  protected:
    // Computes `rows` of `m` on the worker thread, once before_start() is over.
    virtual work_record run(const multiply & m, row_range rows) = 0;
    // On the worker thread while the caller's threads are still in before_start(): a head start on what needs nothing
    // of theirs (the NPU: its jobs and weights; it keeps what it set up for run()). What it leaves, run() does.
    virtual void set_up(const multiply & m, row_range rows) { (void) m; (void) rows; }

    // Called by begin() on the caller's thread once the worker is the caller's, beside set_up() on the worker's thread
    // (the two touch different state), before run(): what the caller's threads can prepare (the NPU: its activations,
    // converted by the CPU worker's threads).
    virtual void before_start(const multiply & m, row_range rows) { (void) m; (void) rows; }
    // In before_start(): whether the work being begun is driven by the caller's team (begin_driven).
    bool is_driven() const { return driven; }
    // Whether the caller leaves the thread a core of its own (own_core): it may spin at its hand-offs.
    bool spins() const { return spin.load(std::memory_order_relaxed); }

    // Driven work (begin_driven), on the caller's thread after before_start(): set it up and start the device (a
    // failure is kept for driven_end to return); then finish it, waiting for the device. Only where drivable().
    virtual void driven_begin(const multiply & m, row_range rows) { (void) m; (void) rows; }
    virtual work_record driven_end() { return work_record::failed(work_failure::unsupported, "not drivable"); }

    // Derived classes start the thread once they are ready, and stop it in their destructor (before their members
    // go away).
    void start_thread();
    void stop_thread();

  private:
    void loop();

    std::mutex              mtx;
    std::condition_variable cv;
    std::thread             thread;
    bool                    running  = false;
    bool                    owned    = false;   // between a caller's begin() and end()
    // written under mtx; atomic so that a thread can spin on them without it (own_core)
    std::atomic<bool>       pending{ false };   // a job waits for the thread
    std::atomic<bool>       prepared{ false };  // and before_start() is over: the thread may run it
    std::atomic<bool>       done{ false };      // its result is ready
    bool                    driven   = false;   // the caller's team drives the work begun (begin_driven)
    std::atomic<bool>       spin{ false };      // own_core()
    const multiply *        job = nullptr;
    double                  handed_at = 0.0;   // when before_start() was over (the thread could run the job)
    row_range               job_rows;
    work_record             result;
};

}  // namespace xdna
