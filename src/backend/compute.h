// Runs one claimed multiply: asks the planner for row ranges, starts every worker on its rows at the same time
// (the CPU worker on the calling thread), waits, recomputes on the CPU any rows a worker failed on, and reports the
// measured times back to the planner.
#pragma once

#include "planner/planner.h"
#include "workers/cpu/cpu_worker.h"

#include <memory>
#include <thread>
#include <vector>

namespace xdna {

class compute_engine {
  public:
    // `devices`: the device workers (NPU, GPU) shared by the process; they may be empty. Multiplies with fewer than
    // `min_batch` tokens (claimed only for the experimental NPU decode) are split by `decode_planner`.
    compute_engine(split_planner & planner, split_planner & decode_planner, int min_batch, cpu_worker & cpu,
                   std::vector<worker *> devices);

    // `twin`: a second MUL_MAT computed with `node` as one multiply (can_pair(node, twin) must hold, and pairs())
    ggml_status compute(const ggml_tensor * node, const ggml_tensor * twin = nullptr);
    // Plans `node` (with `twin`), the multiply the backend computes next, in its next graph, and starts the NPU on its
    // rows now: right after the compute() of an earlier multiply of the same input (Q's before K and V's), so that
    // the NPU works while the CPU computes what lies between the two (Q's norm and rope). The NPU keeps its results
    // until that compute() (multiply::ahead); a compute() of anything else first drops them. Nothing is begun where
    // a worker taking rows cannot run ahead (a GPU writes straight into the result), where the CPU's team drives the
    // NPU, or where the NPU would convert a weight first.
    void run_ahead(const ggml_tensor * node, const ggml_tensor * twin);
    ~compute_engine();
    // Whether every worker computes pairs of multiplies as one (multiply::twin)
    bool pairs() const;

    // One line: the multiplies and their own time (from the plan to the end, every worker and wait in it), then per
    // worker the rows it computed and the time it took, since this engine was made.
    std::string summary() const;
    bool idle() const { return n_multiplies == 0; }

  private:
    // One multiply on its way through compute(): its description, who takes part, their rows and records.
    struct call {
        multiply                 m;
        std::vector<worker *>    ws;        // the device workers taking part, then the CPU worker
        std::vector<row_range>   rows;      // the planner's, in that order
        std::vector<work_record> records;   // in that order
        std::vector<double>      busy0;     // each device's busy seconds when it began (< 0: not known)
        worker *                 driven = nullptr;   // the device worker the CPU's team drives, if any
    };
    // A multiply run ahead: its call (the NPU begun on its rows), kept until compute() asks for it (take_ahead)
    struct ahead_call {
        call          c;
        plan_reason   why = plan_reason::no_npu;
        uint64_t      graph = 0;   // the graph (split) it was begun in: it is for the next one only
        std::thread::id thread;    // the thread that began it
    };
    std::unique_ptr<ahead_call> take_ahead(const ggml_tensor * node, const ggml_tensor * twin);
    void drop_ahead();
    void end_dropped(std::unique_ptr<ahead_call> a);   // its devices told to drop their rows, and ended
    void drop_held_ahead();   // another engine's, begun on this thread
    void hold_ahead(std::unique_ptr<ahead_call> a);
    std::unique_ptr<ahead_call> unhold_ahead();
    void release_devices(call & c, bool deliver);
    void plan_call(call & c, split_planner & planner, const std::vector<plan_worker> & pw, plan_reason & why);
    void start_devices(call & c);
    work_record run_cpu(call & c);
    ggml_status collect_devices(call & c);
    void complete(const call & c, size_t i, work_record & r) const;   // whose record it is
    void learn(call & c, split_planner & planner, double wall, bool once_on_cpu);
    void trace_multiply(const call & c, const ggml_tensor * twin, double t_start, plan_reason why) const;
    bool team_drives() const;
    void participants(multiply & m, std::vector<worker *> & ws, std::vector<plan_worker> & pw) const;
    work_record cpu_part(const multiply & m, row_range own, const std::vector<worker *> & ws,
                         const std::vector<row_range> & rows, const cpu_worker::driven_work * drive);
    worker * driven_worker(const std::vector<worker *> & ws, const std::vector<row_range> & rows) const;
    work_record end_driven(worker * w, bool cpu_ok);
    void lend_cpu_threads(multiply & m, bool cpu_idle, bool drives, bool & once_on_cpu);
    void prepare_npu_ahead(const multiply & m, const std::vector<worker *> & ws, int64_t npu_rows, plan_reason why);

    work_totals totals;
    int64_t n_multiplies = 0;
    int64_t n_ahead = 0;   // multiplies whose NPU part ran ahead (run_ahead) and was used
    std::unique_ptr<ahead_call> ahead;
    double  wall_s = 0.0, first_use_wall_s = 0.0;   // the multiplies' own time, and of it those that converted a weight

    split_planner &       prompt_planner;
    split_planner &       decode_planner;
    int                   min_batch;
    cpu_worker &          cpu;
    std::vector<worker *> devices;
};

}  // namespace xdna
