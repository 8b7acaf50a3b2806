// The NPU worker's pipeline, as its sources share it (npu_worker.cpp and npu_pipeline.cpp: the worker's own thread;
// npu_driven.cpp: the CPU worker's team driving it): the pipeline's slots, a call and its launches, a driven call,
// and the guard at the worker's edge. Private to those files.
#pragma once

#include "workers/npu/npu_worker.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace xdna {

// The buffers of one pipeline slot, for one kernel design.
struct npu_worker::slot {
    int design = -1;                // the design its buffers are sized for (its largest block)
    npu_buffer b, c;
    npu_buffer * b_arg = nullptr;   // the block's weights: `b`, or a view of a resident weight
    npu_run run;                    // its launch in flight
};

// One matrix of a multiply for the pipeline: a MUL_MAT, or one expert of a MUL_MAT_ID with its routed tokens.
struct npu_worker::job {
    const ggml_tensor *      w = nullptr;  // the weight (of every expert)
    int64_t                  n_tokens = 0;
    std::vector<char *>      out;          // per token: where its row 0 of the result goes (f32, rows contiguous)
    std::vector<const float *> src;        // per token: its row of the activations (f32)
    std::shared_ptr<const npu::converted_weight> cached;
    npu::converted_weight    scratch;
    const npu::converted_weight * weight = nullptr;
    int64_t                  w_base = 0;   // row of `weight` holding the worker's first row
    int64_t                  expert = 0;
    double                   cache_seconds = 0.0;   // spent getting the weight from the cache (converting it once)
    double                   row_seconds = 0.0;     // spent converting its rows for this call (past the cache's budget)
};

// One launch: its job, token block, row block and K block, and the activation block it reads.
struct npu_worker::launch {
    int64_t job, tbi, rbi, kbi, a_block;
};

// A block of the worker's rows: its first row (from the worker's first) and the kernel that runs it (its rows: the
// block's, past the worker's last row padded with zeros).
struct npu_worker::row_block {
    int64_t            row0 = 0;
    const npu_kernel * kn = nullptr;
};

// One call: what it computes, with which kernel, and every launch in pipeline order.
struct npu_worker::call {
    const multiply *    m = nullptr;
    row_range           rows;
    std::vector<job>    jobs;
    const npu_kernel *  kn = nullptr;      // the narrowest block (every block has its tokens and K block)
    std::vector<row_block> row_blocks;     // the worker's rows in blocks, widest first (launch_cost::for_blocks)
    int64_t             k = 0, ld = 0, tb = 0, kb = 0;
    int64_t             k_blocks = 0;
    size_t              a_elem = 2;
    std::vector<launch>      launches;      // every launch, in pipeline order
    // The arena's places for activation blocks (job, token block, K block): block ab lives at place ab % places;
    // every block has its own when the arena holds them all, else the places are reused in turn (as many runs in
    // flight as places at most: the runs in flight read at most that many consecutive blocks)
    std::vector<npu_buffer>  a_views;
    std::vector<int64_t>     a_held;      // per place: the block converted and synced there (-1: none)
    std::vector<uint8_t>     a_unsynced;  // per place: converted by the CPU's threads, synced when first launched
    int64_t                  places = 0;
    int64_t                  depth = 0;   // runs in flight: the worker's, at most as many as the reused places
    std::vector<const float *> src_rows;   // scratch: the rows one conversion reads
    bool                     check_finite = true;
    bool                     finite = true;
    double                   first_launched = 0.0, last_waited = 0.0;   // when the NPU's part began and ended
    int64_t                  launched = 0, taken = 0;   // the pipeline's progress: launches made, results taken
    bool                     delivered = false;   // begun ahead: its results go into the result tensors now
    arena_key                arena_key_after;   // what the arena holds once every block is converted
};

// A call the CPU worker's team drives (begin_driven .. end): its steps run on the team's threads, one phase at a
// time (the graph's barriers between them), so only what one phase hands to the next is atomic.
struct npu_worker::driven_call {
    call                  c;
    double                t0 = 0.0, step_t0 = 0.0;
    double                team_seconds = 0.0;     // the steps' time: the team's time spent on the NPU's host work
    int64_t               team_results = 0;       // results the steps took
    // When the NPU's last run ended, as the boundaries saw it: between the last poll that found it running
    // (polled_at) and the first that found it finished (npu_done: the middle of the two; 0 while not seen)
    double                polled_at = 0.0, npu_done = 0.0;
    work_record           result;                 // the set-up's, or the first step's failure (mu)
    std::mutex            mu;
    std::atomic<bool>     stopped{ false };       // failed, or nothing to do: no more launches
    std::atomic<bool>     finite{ true };
    std::atomic<int64_t>  ready{ 0 };             // results the poll found finished (take them, in order)
    std::atomic<int>      left{ 0 };              // threads done with their part of them
    std::atomic<uint64_t> handed{ 0 };            // published by each step's last thread
    void fail(work_record r);
};

// The worker's edge: the runtime's errors (XRT's, or the emulator's) are caught where it calls fn, and become a reason.
template <class F> work_record npu_worker_guard(F && fn) {
    try {
        return fn();
    } catch (const npu_error & e) {
        const npu_errc c = e.code();
        return work_record::failed(c == npu_errc::buffer ? work_failure::device_memory
                                   : c == npu_errc::manifest || c == npu_errc::kernel ? work_failure::no_kernel
                                   : work_failure::device_run, e.what());
    } catch (const std::exception & e) {
        return work_record::failed(work_failure::device_run, e.what());
    }
}

// body(p, t_begin, t_end) for each part p of n tokens, on the worker's thread and the lent ones (lent_threads::share:
// one lent a moment late takes what is left). A part's failure is thrown here once every part is done, so that none
// is left writing into a buffer the worker goes on to reuse.
template <class F> void npu_worker::on_lent_threads(int64_t n, int64_t parts, F && body) {
    if (parts <= 1) {
        body(int64_t(0), int64_t(0), n);
        return;
    }
    std::vector<std::string> err(parts);
    helper.share((int) parts, [&](int p) {
        try {
            body(int64_t(p), n * p / parts, n * (p + 1) / parts);
        } catch (const std::exception & e) {
            err[p] = e.what();
        }
    });
    for (const std::string & e : err) {
        if (!e.empty()) throw npu_error(npu_errc::buffer, e);
    }
}

}  // namespace xdna
