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
    // `others`: the device workers (NPU, GPU) shared by the process; they may be empty. Multiplies with fewer than
    // `min_batch` tokens (claimed only for the experimental NPU decode) are split by `decode_planner`.
    compute_engine(split_planner & planner, split_planner & decode_planner, int min_batch, cpu_worker & cpu,
                   std::vector<worker *> others);

    // `twin`: a second MUL_MAT computed with `node` as one multiply (multiply_pair(node, twin) must hold, and pairs())
    ggml_status compute(const ggml_tensor * node, const ggml_tensor * twin = nullptr);
    // Whether every worker computes pairs of multiplies as one (multiply::twin)
    bool pairs() const;

    // One line: the multiplies and their own time (from the plan to the end, every worker and wait in it), then per
    // worker the rows it computed and the time it took, since this engine was made.
    std::string summary() const;
    bool idle() const { return n_multiplies == 0; }

  private:
    struct totals {
        int64_t rows = 0, runs = 0, failures = 0;
        double  seconds = 0.0;
        double  busy    = 0.0;   // its device busy meanwhile (the NPU's runs), when the worker can tell
        int64_t driven = 0, team_results = 0;   // runs the CPU worker's team drove, and results it took meanwhile
        double  team_seconds = 0.0;             // the team's time on those results (out of the CPU's own)
    };
    void account(worker_kind kind, int64_t rows, const work_result & r);
    void participants(multiply & m, std::vector<worker *> & ws, std::vector<plan_worker> & pw) const;
    work_result cpu_part(const multiply & m, row_range own, const std::vector<worker *> & ws,
                         const std::vector<row_range> & rows, const cpu_worker::driving * drive);
    worker * driven_worker(const std::vector<worker *> & ws, const std::vector<row_range> & rows) const;
    work_result finish_driven(worker * w, bool cpu_ok);
    void lend_cpu_threads(multiply & m, bool cpu_idle, bool drives, bool & once_on_cpu);
    void prepare_npu_ahead(const multiply & m, const std::vector<worker *> & ws, int64_t npu_rows, plan_reason why);

    totals  sums[3];
    int64_t n_multiplies = 0;
    double  wall_s = 0.0, first_use_wall_s = 0.0;   // the multiplies' own time, and of it those that converted a weight

    split_planner &       prompt_planner;
    split_planner &       decode_planner;
    int                   min_batch;
    cpu_worker &          cpu;
    std::vector<worker *> others;
};

}  // namespace xdna
