// Runs one claimed multiply: asks the planner for row ranges, starts every worker on its rows at the same time
// (the CPU worker on the calling thread), waits, recomputes on the CPU any rows a worker failed on, and reports the
// measured times back to the planner.
#pragma once

#include "planner/planner.h"
#include "workers/cpu/cpu_worker.h"

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
    double  wall_s = 0.0, first_use_wall_s = 0.0;   // the multiplies' own time, and of it those that converted a weight

    split_planner &       prompt_planner;
    split_planner &       decode_planner;
    int                   min_batch;
    cpu_worker &          cpu;
    std::vector<worker *> devices;
};

}  // namespace xdna
