// A worker computes a range of output rows of a claimed multiply and reports how long it took.
// The split planner decides who does which rows; workers only execute. Every worker writes straight into its own rows
// of the same result tensor, so nothing is merged afterwards.
#pragma once

#include "workers/multiply.h"
#include "workers/work_record.h"

#include "ggml.h"

#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

// A count of the graphs (splits) the backend has been handed, process-wide. While one graph runs, a tensor at one
// address with one shape keeps its contents (ggml's allocator reuses memory only between graphs or after a tensor's
// last use), so a worker may keep what it derived from an input, e.g. the converted activations shared by the FFN's
// up and gate multiplies, for the rest of the graph. next_graph() is called when a graph arrives.
uint64_t graph_epoch();
void     next_graph();

class worker {
  public:
    virtual ~worker() = default;

    virtual worker_kind kind() const = 0;
    virtual const char * name() const = 0;

    // Whether this worker can take rows of `m` at all (a GPU cannot read the CPU's repacked weights, say).
    virtual bool accepts(const multiply & m) const = 0;

    // Row granularity the worker needs for `m`: its ranges start and end on multiples of this (or at the end).
    virtual int64_t row_align(const multiply & m) const = 0;

    // Completes the description with this worker's own part, once per multiply before the planner is asked (the
    // NPU: the blocks it will run and their cost, m.npu_cost). Called only when accepts(m); false: it has nothing to do in m
    // (every expert went to the CPU), and the planner leaves it out.
    virtual bool describe(multiply & m) const { (void) m; return true; }

    // Starts computing `rows` of `m`, which must stay alive until end(). Workers with a device of their own return
    // at once; the CPU worker computes here, on the calling thread. Each begin() is followed by exactly one end().
    virtual void begin(const multiply & m, row_range rows) = 0;

    // Waits for the work started by begin().
    virtual work_record end() = 0;

    // Whether the caller leaves the worker's own thread, if it has one, a core of its own in the multiplies it begins
    // from now on: that thread and the caller may then spin at their hand-offs instead of sleeping (async_worker.h).
    virtual void own_core(bool yes) { (void) yes; }

    // Lends the calling thread to the work started by begin(), from when the CPU worker's own rows are done until
    // that work is over (then end() returns at once): a worker whose host thread limits its device takes a share of
    // that host work. Any number of threads may be lent at once (the CPU worker's team). Returns at once where there
    // is nothing to share (the default).
    virtual void help() {}
    // Whether help() has anything to share: the engine lends threads only to such a worker.
    virtual bool shares_host_work() const { return false; }
    // Cores that nobody computes on in the multiplies it begins from now on (the CPU worker's team and the device
    // workers' own threads left out): a worker that shares host work may take that work on threads of its own there,
    // from the start, instead of only on the team's threads once their rows are done. Called before begin().
    virtual void idle_cores(int n) { (void) n; }

    // One-time work for rows of `m`'s weight it may take in later multiplies (the NPU: converting the weight), done
    // now, on the CPU worker's threads where `m` offers them (m.on_cpu_threads): called after a multiply the auto split
    // gave it no rows of. Whether it did any (false by default: nothing to do).
    virtual bool prepare_ahead(const multiply & m) { (void) m; return false; }

    // Where no core is left for the worker's own thread, the CPU worker's team can drive the device instead, between
    // its own slices of rows: begin_driven() sets the work up and starts the device on the calling thread and returns;
    // step(ith, nth), on every thread of the team at once at each slice boundary, takes what the device has finished
    // and starts what comes next, never waiting; end() then finishes on the calling thread (help() lends it the
    // team). A worker that cannot be driven (the default) says so, and the engine gives it its thread.
    virtual bool drivable() const { return false; }
    virtual void begin_driven(const multiply & m, row_range rows) { begin(m, rows); }
    // The two phases of a boundary, each a node of the team's graph (a barrier between them): poll (one thread: what
    // has finished), then take (every thread a part of it; the last one done starts the next runs).
    virtual void step_poll(int ith, int nth) { (void) ith; (void) nth; }
    virtual void step_take(int ith, int nth) { (void) ith; (void) nth; }

    // Work begun ahead of its turn (multiply::ahead): the worker computes its rows as usual but keeps the results
    // until release(true), when the result tensors are the multiply's and it writes its rows there; release(false)
    // drops them. Exactly one release() after such a begin(), before its end(). Only a worker that runs_ahead().
    virtual bool runs_ahead() const { return false; }
    virtual void release(bool deliver) { (void) deliver; }

    // Whether it computes a pair of multiplies as one (multiply::twin): the engine pairs only where every worker does.
    virtual bool takes_pairs() const { return false; }

    // Seconds its device has been busy with work so far in this process (the NPU's runs), < 0 when not known.
    virtual double device_busy_seconds() const { return -1.0; }
};

}  // namespace xdna
