// The CPU worker: a private instance of ggml's CPU backend computing a one-op graph over a row view of the weight.
// The view keeps the weight's buffer, so weights in the CPU_REPACK buffer keep their repacked layout and the worker
// runs the CPU's fastest kernels on them (row ranges on multiples of 8 rows: other boundaries give garbage silently).
// It runs on the thread that called the plugin: with OpenMP, that thread's team is reused (11 us per call, against
// 80 us handing the graph to another thread).
#pragma once

#include "workers/worker.h"

#include "ggml-backend.h"

#include <functional>
#include <memory>
#include <vector>

namespace xdna {

class cpu_worker final : public worker {
  public:
    // A private instance of `cpu_dev` (the registry's CPU device); null, with one log line, when it cannot be had.
    static std::unique_ptr<cpu_worker> create(ggml_backend_dev_t cpu_dev);
    ~cpu_worker() override;

    worker_kind kind() const override { return worker_kind::cpu; }
    const char * name() const override { return "cpu"; }
    bool accepts(const multiply & m) const override;
    int64_t row_align(const multiply & m) const override;
    void begin(const multiply & m, row_range rows) override;
    work_record end() override;
    bool takes_pairs() const override { return true; }

    // Computes `rows` of `m` (of both its nodes where it has a twin) now (begin + end); also used to recompute rows
    // another worker failed on. With `drive` (the device worker its team drives), in `drive->slices` slices of rows,
    // each followed by a boundary at which every thread of its team runs that worker's step_poll, then its step_take
    // (worker.h): one graph.
    struct driven_work {
        worker * w = nullptr;
        int      slices = 1;
    };
    work_record compute(const multiply & m, row_range rows, const driven_work * drive = nullptr);

    // MUL_MAT_ID: `rows` of the experts the planner gave the CPU (m.cpu_expert) only, for the tokens routed to each
    // (gathered into one plain multiply per expert, then scattered back): their share of another worker's rows.
    work_record compute_experts(const multiply & m, row_range rows);

    // Converts blocks of a dense multiply's activations `x` (f32) to bf16 with the CPU backend's own conversion (round
    // to nearest even), on its threads: one copy node per block, one graph; then, where given, then(ith, nth) on
    // every thread (the device's sync of what they wrote). For a device worker (multiply.h).
    bool convert_bf16(const ggml_tensor * x, const std::vector<bf16_block> & blocks,
                      const std::function<void(int ith, int nth)> & then = {});

    // Runs fn(ith, nth) for every thread of its team, as one graph (a custom op), on the calling thread: host work
    // of another worker's that its threads share (multiply.h, cpu_parallel).
    bool run_on_threads(const std::function<void(int ith, int nth)> & fn);

    void set_n_threads(int n_threads);
    int  threads() const;   // what it computes with (set_n_threads: llama.cpp's -t)
    int  cores() const;     // the cores this process may run on
    // The cores its last graph left free (0 before its first): with one, its threads, spinning a while after a graph
    // in the OpenMP runtime, leave the calling thread a core of its own to spin on (worker::help) beside the NPU
    // worker's thread; with one per device worker, those workers' threads spin at their hand-offs (worker::own_core).
    int cores_to_spare();
    void set_abort_callback(ggml_abort_callback cb, void * data);

  private:
    cpu_worker();
    struct impl;
    std::unique_ptr<impl> p;
    work_record last;
};

}  // namespace xdna
