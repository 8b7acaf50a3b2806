// The NPU worker: computes a range of output rows of a claimed multiply on the NPU (through XRT, or the software
// XDNA1 where there is none), on a persistent thread of its own, or, where the CPU worker's threads take every core,
// driven by the CPU worker's team between slices of its rows (begin_driven, step_poll, step_take; worker.h).
//
// Per multiply: the worker's rows are tiled into the kernel set's blocks, widest first (launch_cost::for_blocks;
// edges padded with zeros); each block of activations (tokens x one K block) is converted to bf16 (or int8 with one
// scale per token) when the first launch that reads it is prepared, straight into an NPU buffer, and read in place by
// every launch that needs it. Three
// slots (two under a tight locked-memory limit), each with a run in flight, let the host take one block's result and
// prepare the next launch while the NPU computes, the CPU worker's threads lent to take parts of each result (help());
// partial sums over K blocks are added in f32 straight into the worker's rows of the result, int8 scales applied.
// Weights come from the converted-weight cache, held in NPU buffers and read in place (resident_weight.h), or are
// converted for the call when they do not fit it (then copied into the slots block by block).
//
// A failed or timed-out run, or a block with NaN/Inf in its output, fails the call: the engine recomputes the rows on
// the CPU. A run that timed out stays on the NPU until the driver ends it (npu_runtime::wait), with the buffers it
// uses; past a few such runs the worker takes no rows until the driver has ended them. After repeated failures the
// worker switches itself off for the process.
#pragma once

#include "workers/async_worker.h"
#include "workers/lent_threads.h"
#include "workers/npu/kernel_choice.h"
#include "workers/npu/weight_cache.h"

#include "npu/npu_runtime.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace xdna {

struct config;

class npu_worker final : public async_worker {
  public:
    // Opens the NPU runtime; null (with one log line saying why) when there is no usable NPU or kernel set.
    static std::unique_ptr<npu_worker> create(const config & cfg);
    // Whether the runtime reaches real XRT (not the software XDNA1): on Linux, whether the plugin was built with XRT;
    // on Windows, whether the XRT DLL beside the plugin is the real one.
    static bool xrt_is_hardware();
    ~npu_worker() override;

    worker_kind kind() const override { return worker_kind::npu; }
    const char * name() const override { return "npu"; }
    bool accepts(const multiply & m) const override;
    int64_t row_align(const multiply & m) const override;
    bool describe(multiply & m) const override;   // the blocks it will run (m.npu_choice) and their cost (m.npu_cost)
    double device_busy_seconds() const override { return 1e-3 * rt->stats().busy_ms; }
    // the caller's thread takes parts of each block's result until the call is over (any number of threads at once)
    void help() override { helper.serve(); }
    bool shares_host_work() const override { return true; }
    void idle_cores(int n) override { spares_wanted.store(std::min(n, max_spares), std::memory_order_relaxed); }
    // a pair's launches are one stream, its blocks of activations read by both weights' launches (place_activations)
    bool takes_pairs() const override { return true; }
    // where no core is left for its thread, the CPU worker's team drives the pipeline between its slices (worker.h)
    bool drivable() const override { return true; }
    void step_poll(int ith, int nth) override;
    void step_take(int ith, int nth) override;
    // converts the weight into the cache now (convert_weights_on_cpu), as before_start would at its next multiply
    bool prepare_ahead(const multiply & m) override;
    // a dense multiply begun ahead of its turn keeps its results until release() (npu_ahead.cpp)
    bool runs_ahead() const override { return true; }
    void release(bool deliver) override;
    uint64_t shared_takes() const { return helper.pieces_shared(); }  // results split among lent threads
    void     leave_parts_to_lent_threads(bool on) { helper.leave_parts_to_lent_threads(on); }   // for tests

    // What the device calls itself (the emulator says it is one).
    std::string description() const;
    // The kernel manifest it runs (GGML_XDNA_NPU_KERNELS, or the default).
    const std::string & kernels_path() const { return rt->manifest().path(); }
    bool enabled() const { return !switched_off.load(); }

    // Safe start (npu_self_test.cpp): every block, then a small multiply on the NPU checked against an fp64
    // reference; false (and why) when it is wrong.
    bool self_test(std::string * why);

    // Converts a weight into the cache ahead of time (the load-time warm-up); false if it was not cached.
    bool prepare_weight(const ggml_tensor * w);
    // Loads the hardware contexts of the designs the worker uses.
    void load_designs();
    // The most pinned memory the activation arena grows to (16 MiB); past it, its places are reused in turn.
    void limit_activation_arena(size_t bytes) { arena_cap = bytes; }
    // The widest block (rows) the pipeline's buffers hold, and so the widest it runs (the locked-memory limit decides).
    int64_t widest_rows() const { return slot_rows.load(); }

    npu::weight_cache & cache() { return weights; }
    npu_runtime &  runtime() { return *rt; }

  protected:
    work_record run(const multiply & m, row_range rows) override;
    // a dense bf16 multiply: the CPU worker's threads convert its activations into the arena (m.convert_bf16)
    void before_start(const multiply & m, row_range rows) override;
    // a dense multiply whose weights are in the cache: its jobs and their weights (open_jobs), kept for run_call
    void set_up(const multiply & m, row_range rows) override;
    void driven_begin(const multiply & m, row_range rows) override;
    work_record driven_end() override;

  private:
    npu_worker(std::unique_ptr<npu_runtime> rt, const config & cfg);

    struct slot;
    struct job;
    struct launch;
    struct row_block;
    struct call;
    // the designs that can compute w (one per core tile, all of one K block: kernel_choice.h); empty: none
    std::vector<const npu_design *> designs_for(const ggml_tensor * w) const;
    struct driven_call;
    work_record run_call(const multiply & m, row_range rows);
    work_record call_over(work_record r);   // every call's end: the lent threads released, failures counted
    // the phases of one call (compute): its jobs and their weights (open_jobs), its slots and activations' places
    // (open_places), then the pipeline; open_call is the first two
    work_record open_call(call & c, const multiply & m, row_range rows, double t0);
    work_record open_jobs(call & c, const multiply & m, row_range rows, double t0);
    work_record open_places(call & c, double t0);
    void plan_jobs(call & c) const;
    bool prepare_job(job & j, row_range rows, int64_t ld, std::string * err);
    void place_activations(call & c);
    void launch_first(call & c);      // the first launches (a driven call's, before the team's steps)
    void run_pipeline(call & c);   // from where the call stands to its end
    void launch_next(call & c);
    void drain();                  // every run in flight waited for, or parked after a timeout (its buffers let go)
    bool too_many_parked() const;  // max_parked runs or more still on the NPU after timeouts (said once)
    work_record close_call(call & c, double t0);
    // multiply::ahead: release()'s word, waited for (1: deliver, 2: drop); the kept rows copied into the result
    // tensors, which the rest of the call then writes straight into; the call's end (begun at t0), delivered as told
    int  wait_release();
    void deliver_kept(call & c);
    work_record finish_ahead(call & c, work_record r, double t0);
    void fill_slot(call & c, slot & s, int64_t i);
    void convert_block(call & c, const launch & bl);
    bool convert_weights_on_cpu(const multiply & m);   // before_start: first uses, on the CPU worker's threads
    void take_result(call & c, slot & s, int64_t i);
    bool take_tokens(call & c, slot & s, int64_t i, int64_t t_begin, int64_t t_end);
    // body(part, t_begin, t_end) over n tokens in `parts` parts, on the worker's thread and the lent ones
    template <class F> void on_lent_threads(int64_t n, int64_t parts, F && body);
    void note_failure(const std::string & why);
    // the cache's placer: an NPU buffer for a weight
    std::shared_ptr<npu::resident_weight> place_weight(const ggml_tensor * w, const npu::converted_weight & cw);
    // the slots' buffers and the activation arena for kn's design and every other design of its types and K block
    // (its other tiles: the slots serve them all)
    void reserve_slots(const npu_kernel & kn);
    bool reserve_slots_for(const std::vector<const npu_kernel *> & blocks, int group, int64_t max_rows, bool last);
    void release_slots();
    bool reserve_arena(const npu_kernel & kn, size_t bytes);   // false: no bigger buffer to be had (it keeps its own)

    std::unique_ptr<npu_runtime> rt;
    npu::weight_cache            weights;
    npu::npu_timing          cost;
    bool                         w8;
    std::atomic<int>             held_design{ -1 };   // the design of the last launch: the one the NPU holds
    // Runs in flight: one per slot. Two keep the NPU fed while the host takes one block's result in less time than
    // the NPU computes the next; a third keeps it fed where the host takes longer than that (a 512x512 f32 block's
    // result is ~1 MiB to sync and copy, ~160-190 us on one core, while the modelled NPU at 3,140 GFLOP/s computes a
    // 512x512x1024 block in 171 us: with two, the NPU then idles and its next launch pays a fresh dispatch). The
    // third costs 3 MiB of pinned memory more (9 MiB with the arena's minimum): it is taken only where the
    // locked-memory limit allows it (many distributions allow 8 MiB by default: two slots, 6 MiB, fit).
    static constexpr int         min_depth = 2, max_depth = 3;
    int                          depth = 0;    // slots reserved (and runs in flight at most): min_depth..max_depth
    std::atomic<int64_t>         slot_rows{ INT64_MAX };   // the widest block the slots hold (describe() uses no wider)
    size_t                       arena_cap = size_t(16) << 20;   // pinned memory the arena grows to at most
    std::unique_ptr<slot>        slots[max_depth];
    // Every activation block of a call, converted straight into one NPU buffer kept from call to call (each block
    // is a view of it): nothing is copied into the slots, and a block shared by several launches is synced once.
    npu_buffer                   act_arena;
    std::vector<float>           act_scales;   // int8 activations: one scale per token and K block
    // What the arena holds: the input it was converted from, in this graph (a multiply with the same input, in the
    // same graph and layout, reads it as it is)
    struct arena_key {
        const void * data = nullptr;
        int64_t      ne[4] = {}, nb[4] = {};
        uint64_t     graph = 0;
        int64_t      tb = 0, kb = 0, ld = 0, a_blocks = 0;
        bool operator==(const arena_key & o) const;
    };
    // the key of a dense multiply's input x in the layout (tb tokens, kb inputs per block, row stride ld)
    static arena_key input_key(const ggml_tensor * x, int64_t tb, int64_t kb, int64_t ld, int64_t a_blocks);
    arena_key                    arena_holds;
    // of that input, the K blocks [0, arena_k_held) of each token block (before_start may convert only the first)
    int64_t                      arena_k_held = 0;
    bool                         staged_unsynced = false;   // before_start converted the arena's contents, unsynced

    lent_threads                 helper;   // the CPU worker's threads, lent once the CPU's rows are done (help())
    // Threads of the worker's own that serve `helper` from the start of a call, on cores nobody computes on
    // (idle_cores: -t 8 of 16 cores leaves seven): a split's results and activations are then not taken by the worker's
    // thread alone while the CPU's threads compute their rows. Two at most: a block's result in three parts takes a
    // third of the time the NPU computes the next block in, and more would only spin.
    static constexpr int         max_spares = 2;
    std::atomic<int>             spares_wanted{ 0 };
    std::vector<std::thread>     spares;
    std::mutex                   spare_mu;
    std::condition_variable      spare_cv;
    uint64_t                     spare_calls = 0;     // under spare_mu: calls begun (each spare serves every new one)
    int                          spare_serving = 0;   // under spare_mu: how many of them serve the call begun last
    bool                         spare_stop = false;  // under spare_mu
    void spare_loop(int index);
    void wake_spares();   // before_start: the spares wanted serve the call begun
    void stop_spares();

    // A multiply begun ahead (multiply::ahead): its results, per job, laid out as its result tensor (rows of each
    // token), where the pipeline writes them until release() lets them go into the result tensors
    std::vector<std::vector<float>> staged;
    std::mutex                   release_mu;
    std::condition_variable      release_cv;
    double                       released_at = 0.0;     // under release_mu
    std::atomic<int>             release_word{ 0 };     // 0: not yet; 1: deliver; 2: drop (written under release_mu)

    std::unique_ptr<driven_call> drive;   // the call the CPU worker's team drives, from begin_driven to end()
    std::unique_ptr<call>        early;   // what set_up() opened of the call begun (worker thread), for run_call

    // Runs that timed out and stay on the NPU until the driver ends them: as many as one call keeps in flight
    static constexpr int max_parked = max_depth;
    uint64_t          parked_seen = 0;         // the runtime's parked count when drain() last looked (worker thread)
    mutable std::atomic<bool> parked_over{ false };
    std::atomic<bool> switched_off{ false };
    std::atomic<bool> resident_ok{ true };     // false once an NPU buffer for a weight could not be had
    int               failures_in_a_row = 0;   // worker thread only
};

}  // namespace xdna
